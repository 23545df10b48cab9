import Foundation
import Testing
@testable import PersistenceKit

/// A model that only appends optional attributes without defaults (and adds entities)
/// migrates a store without rewriting it: the stored rows already fit, and a sidecar records
/// the new layout.
@Suite("Migration without a rewrite") struct MigrationWithoutRewriteTests {
    typealias S = MigrationSupport

    static let base = #"<attribute name="title" attributeType="String" defaultValueString=""/><attribute name="pages" attributeType="Integer 32" defaultValueString="0"/>"#
    static let v1 = #"<entity name="Note">\#(base)</entity>"#
    static let v2 = #"<entity name="Note">\#(base)<attribute name="summary" optional="YES" attributeType="String"/></entity>"#
    static let v3 = #"<entity name="Note">\#(base)<attribute name="summary" optional="YES" attributeType="String"/><attribute name="rank" optional="YES" attributeType="Double" indexed="YES"/></entity>"#
    static let withDefault = #"<entity name="Note">\#(base)<attribute name="summary" optional="YES" attributeType="String" defaultValueString="none"/></entity>"#

    static func inode(_ url: URL) throws -> NSNumber? {
        try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? NSNumber
    }

    static func seed(_ url: URL, model: NSManagedObjectModel) throws {
        let container = try S.container(at: url, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for i in 0..<3 {
                let note = NSManagedObject(entity: try #require(model.entitiesByName["Note"]), insertInto: context)
                note.setValue("note \(i)", forKey: "title")
                note.setValue(Int32(i), forKey: "pages")
            }
            try context.save()
        }
        try FSSupport.close(container)
    }

    static func notes(_ container: NSPersistentContainer, _ key: String) throws -> [String: Any?] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var result: [String: Any?] = [:]
            for note in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")) {
                result[note.value(forKey: "title") as? String ?? ""] = note.value(forKey: key)
            }
            return result
        }
    }

    @Test func anAddedOptionalAttributeKeepsTheFile() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", Self.v2), ("V3", Self.v3)], current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
        let before = try Self.inode(folder.storeURL)
        let v2 = try NSManagedObjectModel(modelFileAt: bundle)

        let container = try S.container(at: folder.storeURL, model: v2)
        #expect(try Self.inode(folder.storeURL) == before, "the store file was not rewritten")
        #expect(FileManager.default.fileExists(atPath: folder.storeURL.path + FileStore.layoutAliasSuffix))
        #expect(try FileStore.metadata(at: folder.storeURL)[PersistenceKitModelLayoutHashKey] == v2.layoutHashString)
        #expect(try Self.notes(container, "pages").count == 3)
        #expect(try Self.notes(container, "summary").values.allSatisfy { $0 == nil }, "old rows read the new attribute as nil")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let first = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")).first { ($0.value(forKey: "title") as? String) == "note 0" })
            first.setValue("updated", forKey: "summary")
            try context.save()
        }
        try FSSupport.close(container)

        // Another append-only version on top, then a compaction, then a reopen.
        let bundle3 = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", Self.v2), ("V3", Self.v3)], current: "V3")
        let v3 = try NSManagedObjectModel(modelFileAt: bundle3)
        let third = try S.container(at: folder.storeURL, model: v3)
        #expect(try Self.inode(folder.storeURL) == before)
        #expect(try Self.notes(third, "summary")["note 0"] as? String == "updated")
        let store = try #require(FSSupport.fileStores(third).first)
        try store.compact()
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + FileStore.layoutAliasSuffix), "compaction writes the layout into the header")
        try FSSupport.close(third)
        let reopened = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle3))
        #expect(try Self.notes(reopened, "summary")["note 0"] as? String == "updated")
        #expect(try Self.notes(reopened, "pages").count == 3)
        try FSSupport.close(reopened)
    }

    @Test func aNewEntityKeepsTheFileWhereverItSorts() throws {
        let folder = try TemporaryFolder()
        let later = Self.v1 + #"<entity name="Tag"><attribute name="label" optional="YES" attributeType="String"/></entity>"#
        let earlier = Self.v1 + #"<entity name="Author"><attribute name="name" optional="YES" attributeType="String"/></entity>"#
        for (entities, sorts) in [(later, "after"), (earlier, "before")] {
            try? FileStore.destroy(at: folder.storeURL)
            let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", entities)], current: "V2")
            try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
            let before = try Self.inode(folder.storeURL)
            let container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
            #expect(try Self.inode(folder.storeURL) == before, "a new entity sorting \(sorts) the old ones")
            #expect(try Self.notes(container, "pages").count == 3)
            try FSSupport.close(container)
        }
    }

    @Test func anAddedAttributeWithADefaultIsRewritten() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", Self.withDefault)], current: "V2")
        try Self.seed(folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
        let container = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + FileStore.layoutAliasSuffix))
        #expect(try Self.notes(container, "summary").values.allSatisfy { ($0 as? String) == "none" }, "stored rows take the default")
        try FSSupport.close(container)
    }

    @Test func aStaleOrDamagedSidecarIsIgnored() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", Self.v1), ("V2", Self.v2)], current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        try Self.seed(folder.storeURL, model: v1)
        let v2 = try NSManagedObjectModel(modelFileAt: bundle)
        v2.seal()
        let header = try FileStore.readHeader(at: folder.storeURL.path).modelHash
        try FileStore.writeLayoutAlias(path: folder.storeURL.path, header: header, current: v2.layoutHash)
        // One flipped byte: the checksum fails, and the header's own layout counts.
        let sidecar = URL(fileURLWithPath: folder.storeURL.path + FileStore.layoutAliasSuffix)
        var bytes = try Data(contentsOf: sidecar)
        bytes[30] ^= 0xFF
        try bytes.write(to: sidecar)
        #expect(try FileStore.metadata(at: folder.storeURL)[PersistenceKitModelLayoutHashKey] == v1.layoutHashString)
        #expect(throws: FileStoreError.self) { try FileStore.open(at: folder.storeURL, model: v2) }
        try FileStore.open(at: folder.storeURL, model: v1).close()
    }
}
