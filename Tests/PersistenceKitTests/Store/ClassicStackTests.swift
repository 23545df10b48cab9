import Foundation
import Testing
@testable import PersistenceKit

/// A Core Data stack built by hand, as before `NSPersistentContainer`: Core Data's argument
/// labels, store lookups, and the error code such code checks to rebuild a store whose
/// model changed.
@Suite("A hand-built Core Data stack") struct ClassicStackTests {
    @Test func aHandBuiltStackWithCoreDataLabels() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try Fixtures.model())
        let store: NSPersistentStore = try coordinator.addPersistentStore(
            ofType: NSInMemoryStoreType, configurationName: nil, at: nil, options: nil)
        #expect(coordinator.persistentStores.count == 1)
        #expect(coordinator.url(for: store).path == "/dev/null")
        #expect(store.configurationName == "Default")
        #expect(!store.isReadOnly)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        let titles = try context.performAndWait {
            Book(context: context).title = "Dune"
            try context.save()
            return try context.fetch(Book.fetchRequest()).map(\.title)
        }
        #expect(titles == ["Dune"])

        let error = #expect(throws: CoreDataError.self) {
            try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: "Archive", at: nil)
        }
        #expect(error?.code == .persistentStoreIncompatibleSchema)
    }

    @Test func aFileStoreWithOptionsAndLookupByURL() throws {
        let folder = try TemporaryFolder()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try Fixtures.model())
        let store = try coordinator.addPersistentStore(
            ofType: NSFileStoreType, configurationName: "Default", at: folder.storeURL,
            options: [FileStore.durabilityOptionKey: "normal", "NSSQLitePragmasOption": ["journal_mode": "WAL"]])
        #expect((store as? FileStore)?.options.durability == .normal)
        #expect(coordinator.persistentStore(for: folder.storeURL) === store)
        #expect(coordinator.persistentStore(for: folder.url.appendingPathComponent("other.store")) == nil)
        #expect(coordinator.url(for: store) == folder.storeURL)
        try coordinator.remove(store)
    }

    /// The pattern: load; on `NSPersistentStoreIncompatibleVersionHashError` (migration off)
    /// or `NSMigrationMissingSourceModelError` (migration on, the store's model unknown),
    /// destroy the store and load again.
    @Test func aStoreOfAnotherModelFailsWithCode134100AndCanBeRebuilt() throws {
        let folder = try TemporaryFolder()
        try FSSupport.close(try FSSupport.container(at: folder.storeURL))
        let newModel = try NSManagedObjectModel(managedObjectClasses: [StoreMetadataTests.Note.self])
        let container = NSPersistentContainer(name: "Notes", managedObjectModel: newModel)
        let description = NSPersistentStoreDescription(url: folder.storeURL)
        description.shouldMigrateStoreAutomatically = false
        container.persistentStoreDescriptions = [description]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get())
        let nsError = error as NSError
        #expect(nsError.domain == NSCocoaErrorDomain)
        #expect(nsError.code == NSPersistentStoreIncompatibleVersionHashError)
        #expect(nsError.code == 134100)
        let underlying = (error as? CoreDataError)?.underlying as? FileStoreError
        #expect(underlying?.kind == .modelMismatch(storeHash: try Fixtures.model().layoutHashString, modelHash: newModel.layoutHashString))

        // Migration on (the default), and no model the store was written with: 134130.
        description.shouldMigrateStoreAutomatically = true
        let missing = ErrorBox()
        container.loadPersistentStores { _, error in missing.set(error) }
        let missingError = try #require(missing.get()) as NSError
        #expect(missingError.code == NSMigrationMissingSourceModelError)
        #expect(missingError.code == 134130)

        try container.persistentStoreCoordinator.destroyPersistentStore(at: folder.storeURL, ofType: NSFileStoreType)
        let retry = ErrorBox()
        container.loadPersistentStores { _, error in retry.set(error) }
        #expect(retry.get() == nil)
        try FSSupport.close(container)
    }
}
