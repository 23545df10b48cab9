import Foundation
import Testing
@testable import PersistenceKit

/// A closed store file's metadata carries the entity version hashes and version identifiers
/// of the model its rows are of, as Core Data's does.
@Suite("Store file metadata carries the model's version hashes") struct ModelVersionHashMetadataTests {
    typealias S = MigrationSupport

    static let base = #"<attribute name="title" attributeType="String" defaultValueString=""/>"#
    static let v1 = #"<entity name="Note">\#(base)</entity><entity name="Tag"><attribute name="label" optional="YES" attributeType="String"/></entity>"#
    /// Adds an optional attribute and an entity that sorts first: migrated without a rewrite.
    static let v2 = #"<entity name="Note">\#(base)<attribute name="summary" optional="YES" attributeType="String"/></entity><entity name="Tag"><attribute name="label" optional="YES" attributeType="String"/></entity><entity name="Author"><attribute name="name" optional="YES" attributeType="String"/></entity>"#
    /// Adds an attribute with a default value: migrated by a rewrite.
    static let v3 = #"<entity name="Note">\#(base)<attribute name="summary" optional="YES" attributeType="String"/><attribute name="rank" attributeType="Integer 32" defaultValueString="1"/></entity><entity name="Tag"><attribute name="label" optional="YES" attributeType="String"/></entity><entity name="Author"><attribute name="name" optional="YES" attributeType="String"/></entity>"#

    static func metadata(_ url: URL) throws -> [String: Any] {
        try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSFileStoreType, at: url)
    }

    static func hashes(_ metadata: [String: Any]) -> [String: Data]? {
        metadata[NSStoreModelVersionHashesKey] as? [String: Data]
    }

    @Test func aClosedFileListsEveryEntityHash() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        let model = container.managedObjectModel
        let store = try #require(FSSupport.fileStores(container).first)
        try FSSupport.close(container)

        let metadata = try Self.metadata(folder.storeURL)
        #expect(Self.hashes(metadata) == model.entityVersionHashesByName)
        #expect(Self.hashes(metadata)?.count == model.entities.count)
        #expect(metadata[NSStoreTypeKey] as? String == NSFileStoreType)
        #expect(metadata[NSStoreUUIDKey] as? String == store.identifier)
        #expect(metadata[NSStoreModelVersionIdentifiersKey] as? [String] == [])
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(!(try NSManagedObjectModel(managedObjectClasses: [StoreMetadataTests.Note.self]))
            .isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))

        // Compaction writes the record into its new file.
        let reopened = try FSSupport.container(at: folder.storeURL)
        try #require(FSSupport.fileStores(reopened).first).compact()
        try FSSupport.close(reopened)
        #expect(Self.hashes(try Self.metadata(folder.storeURL)) == model.entityVersionHashesByName)
    }

    @Test func migrationsLeaveTheNewModelsHashes() throws {
        let folder = try TemporaryFolder()
        let versions = [("V1", Self.v1), ("V2", Self.v2), ("V3", Self.v3)]
        let bundle = try S.bundle(in: folder.url, versions: versions, current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        try FSSupport.close(try S.container(at: folder.storeURL, model: v1))
        var metadata = try Self.metadata(folder.storeURL)
        #expect(Self.hashes(metadata) == v1.entityVersionHashesByName)
        #expect(metadata[NSStoreModelVersionIdentifiersKey] as? [String] == ["V1"])

        // Without a rewrite: the sidecar carries the new model's hashes.
        let v2 = try NSManagedObjectModel(modelFileAt: bundle)
        var container = try S.container(at: folder.storeURL, model: v2)
        try FSSupport.close(container)
        metadata = try Self.metadata(folder.storeURL)
        #expect(Self.hashes(metadata) == v2.entityVersionHashesByName)
        #expect(metadata[NSStoreModelVersionIdentifiersKey] as? [String] == ["V2"])
        #expect(v2.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(!v1.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))

        // With a rewrite: the new file's model record.
        let bundle3 = try S.bundle(in: folder.url, versions: versions, current: "V3")
        let v3 = try NSManagedObjectModel(modelFileAt: bundle3)
        container = try S.container(at: folder.storeURL, model: v3)
        try FSSupport.close(container)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + FileStore.layoutAliasSuffix))
        metadata = try Self.metadata(folder.storeURL)
        #expect(Self.hashes(metadata) == v3.entityVersionHashesByName)
        #expect(v3.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(!v2.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    /// A file of format 4 or older has no model record: its metadata has the layout hash
    /// only, and the model check compares that.
    @Test func anOlderFileFallsBackToTheLayoutHash() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        let model = container.managedObjectModel
        try FSSupport.close(container)
        var bytes = try FSSupport.bytes(folder.storeURL)
        FSSupport.downgrade(&bytes, to: 4)
        try FSSupport.write(bytes, to: folder.storeURL)

        let metadata = try Self.metadata(folder.storeURL)
        #expect(metadata[NSStoreModelVersionHashesKey] == nil)
        #expect(metadata[PersistenceKitModelLayoutHashKey] as? String == model.layoutHashString)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let reopened = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(reopened).count == 0)
        try FSSupport.close(reopened)
        #expect(FSSupport.u32(try FSSupport.bytes(folder.storeURL), at: 8) == 4, "an older file keeps its version until compacted")
    }

    /// The model check needs the layout too where the metadata has it: the version hashes
    /// ignore the order of properties, which the file's rows keep.
    @Test func equalHashesWithAnotherLayoutAreNotCompatible() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        let model = container.managedObjectModel
        try FSSupport.close(container)
        var metadata = try Self.metadata(folder.storeURL)
        metadata[PersistenceKitModelLayoutHashKey] = String(repeating: "0", count: 32)
        #expect(!model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        metadata[PersistenceKitModelLayoutHashKey] = nil
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }
}
