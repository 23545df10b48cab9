import Foundation
import Testing
@testable import PersistenceKit

/// A store's metadata, read without opening it, and the model check Core Data code runs on
/// it before loading a store.
@Suite("Store metadata and the model check") struct StoreMetadataTests {
    /// A model whose Book has one attribute more than the fixtures' (so another layout).
    final class Note: NSManagedObject {
        @Attribute var text: String = ""
    }

    @Test func theHeaderGivesTypeIdentifierAndModelOpenOrClosed() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        let store = try #require(FSSupport.fileStores(container).first)
        let whileOpen = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSFileStoreType, at: folder.storeURL)
        #expect(whileOpen[NSStoreTypeKey] as? String == NSFileStoreType)
        #expect(whileOpen[NSStoreUUIDKey] as? String == store.identifier)
        #expect(container.managedObjectModel.isConfiguration(withName: nil, compatibleWithStoreMetadata: whileOpen))
        let loaded = container.persistentStoreCoordinator.metadata(for: store)
        #expect(loaded[NSStoreUUIDKey] as? String == store.identifier)
        #expect(loaded[PersistenceKitModelLayoutHashKey] as? String == whileOpen[PersistenceKitModelLayoutHashKey] as? String)

        try FSSupport.close(container)
        let closed = try FileStore.metadata(at: folder.storeURL)
        #expect(closed[NSStoreUUIDKey] == store.identifier)
        #expect(container.managedObjectModel.isConfiguration(withName: "Default", compatibleWithStoreMetadata: closed))
        #expect(!container.managedObjectModel.isConfiguration(withName: "Archive", compatibleWithStoreMetadata: closed))
    }

    /// Core Data's pattern for a model that changed: check the metadata first, destroy the
    /// store when the model no longer fits, then load.
    @Test func anotherModelIsNotCompatibleAndTheStoreCanBeRebuilt() throws {
        let folder = try TemporaryFolder()
        try FSSupport.close(try FSSupport.container(at: folder.storeURL))
        let newModel = try NSManagedObjectModel(managedObjectClasses: [Note.self])
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSFileStoreType, at: folder.storeURL)
        #expect(!newModel.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(!newModel.isConfiguration(withName: nil, compatibleWithStoreMetadata: [:]))

        #expect(throws: CoreDataError.self) { try FSSupport.container(at: folder.storeURL, model: newModel) }
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: newModel)
        try coordinator.destroyPersistentStore(at: folder.storeURL, ofType: NSFileStoreType)
        let rebuilt = try FSSupport.container(at: folder.storeURL, model: newModel)
        let fresh = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSFileStoreType, at: folder.storeURL)
        #expect(newModel.isConfiguration(withName: nil, compatibleWithStoreMetadata: fresh))
        try FSSupport.close(rebuilt)
    }

    @Test func aMissingFileOrABadHeaderIsATypedErrorNamingTheFile() throws {
        let folder = try TemporaryFolder()
        let missing = #expect(throws: FileStoreError.self) { try FileStore.metadata(at: folder.storeURL) }
        #expect(missing?.kind == .io)
        #expect(missing?.path.hasSuffix("store.pkstore") == true)

        try FSSupport.write(Array("not a store at all, just some text".utf8), to: folder.storeURL)
        let notAStore = #expect(throws: FileStoreError.self) { try FileStore.metadata(at: folder.storeURL) }
        #expect(notAStore?.kind == .notAStore)

        try FSSupport.write(FileStoreFormat.magic + [2, 0, 0, 0], to: folder.storeURL)
        let truncated = #expect(throws: FileStoreError.self) { try FileStore.metadata(at: folder.storeURL) }
        #expect(truncated?.kind == .truncated)

        try FileManager.default.removeItem(at: folder.storeURL)
        try FSSupport.close(try FSSupport.container(at: folder.storeURL, name: "fresh"))
        var bytes = try FSSupport.bytes(folder.storeURL)
        bytes[20] ^= 0xFF  // inside the store UUID: the header checksum no longer matches
        try FSSupport.write(bytes, to: folder.storeURL)
        let damaged = #expect(throws: FileStoreError.self) { try FileStore.metadata(at: folder.storeURL) }
        #expect(damaged?.kind == .corrupt)
        #expect(damaged?.offset == 60)
    }

    /// A FIFO at the store's path gives a typed error at once: the header read does not
    /// wait for a writer.
    @Test func aFIFOIsNotAStoreAndDoesNotBlock() throws {
        let folder = try TemporaryFolder()
        #expect(mkfifo(folder.storeURL.path, 0o600) == 0)
        let error = #expect(throws: FileStoreError.self) { try FileStore.metadata(at: folder.storeURL) }
        #expect(error?.path.hasSuffix("store.pkstore") == true)
    }

    /// Checking a model against metadata does not freeze it (a coordinator does that).
    @Test func theCheckLeavesTheModelEditable() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Note.self])
        #expect(!model.isConfiguration(withName: nil, compatibleWithStoreMetadata: [:]))
        #expect(!model.isSealed)
    }

    @Test func storesWithoutAFileHaveNoMetadataToRead() throws {
        let url = URL(fileURLWithPath: "/tmp/never-written")
        let error = #expect(throws: CoreDataError.self) {
            try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSInMemoryStoreType, at: url)
        }
        #expect(error?.code == .persistentStoreInvalidType)
    }

    @Test func openingWithADifferentModelNamesBothHashes() throws {
        let folder = try TemporaryFolder()
        let storeModel = try Fixtures.model()
        let otherModel = try RoundTripTests.model()
        try RoundTripTests.withStore(folder.storeURL, model: storeModel) { context in
            Book(context: context).title = "kept"
            try context.save()
        }
        let expected = FileStoreError.Kind.modelMismatch(storeHash: storeModel.layoutHashString, modelHash: otherModel.layoutHashString)

        let direct = #expect(throws: FileStoreError.self) { try FileStore.open(at: folder.storeURL, model: otherModel) }
        #expect(direct?.kind == expected)
        #expect(direct?.path == FSSupport.path(folder.storeURL))
        #expect(direct?.description.contains(storeModel.layoutHashString) == true)
        #expect(direct?.description.contains(otherModel.layoutHashString) == true)

        // Through a coordinator without migration, Core Data's code for it (134100), with both hashes.
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: otherModel)
        let viaCoordinator = #expect(throws: CoreDataError.self) {
            _ = try coordinator.addPersistentStore(type: NSFileStoreType, at: folder.storeURL)
        }
        #expect(viaCoordinator?.code == .persistentStoreIncompatibleVersionHash)
        #expect((viaCoordinator?.underlying as? FileStoreError)?.kind == expected)
        #expect(viaCoordinator?.message.contains(storeModel.layoutHashString) == true)
        #expect(viaCoordinator?.message.contains(otherModel.layoutHashString) == true)
        // Through a container, which migrates by default and knows no model of the store: 134130.
        let viaContainer = #expect(throws: CoreDataError.self) { _ = try FSSupport.container(at: folder.storeURL, model: otherModel) }
        #expect(viaContainer?.code == .migrationMissingSourceModel)
        #expect(viaContainer?.message.contains(storeModel.layoutHashString) == true)
        #expect(viaContainer?.message.contains(otherModel.layoutHashString) == true)

        // While the store is open in this process with its model, the same error.
        let container = try FSSupport.container(at: folder.storeURL, model: storeModel)
        let whileOpen = #expect(throws: FileStoreError.self) { try FileStore.open(at: folder.storeURL, model: otherModel) }
        #expect(whileOpen?.kind == expected)
        // Nothing was harmed: the store still has its data.
        #expect(try FSSupport.books(container).map(\.title) == ["kept"])
        try FSSupport.close(container)
    }
}
