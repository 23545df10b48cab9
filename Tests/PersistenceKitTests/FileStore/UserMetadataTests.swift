import Foundation
import Testing
@testable import PersistenceKit

/// A file store's application metadata (`setMetadata(_:for:)`) lives in its `-metadata`
/// sidecar: readable without opening the store, settable on a closed store, tied to the
/// store's identifier, gone with the store, and a damaged one is reported, not dropped.
/// (Entries surviving reopening: the shared `metadata` check.)
@Suite("File store metadata entries")
struct UserMetadataTests {
    static func sidecar(_ folder: borrowing TemporaryFolder) -> URL {
        URL(fileURLWithPath: folder.storeURL.path + FileStore.userMetadataSuffix)
    }

    /// A store at the folder's URL, closed cleanly, holding `entries` as its metadata.
    static func seed(_ folder: borrowing TemporaryFolder, _ entries: [String: String]) throws {
        let container = try FSSupport.container(at: folder.storeURL)
        let store = try #require(FSSupport.fileStores(container).first)
        try container.persistentStoreCoordinator.setMetadata(entries, for: store)
        try FSSupport.close(container)
    }

    @Test("A closed store's entries are read with its metadata, and set under its lock without loading it")
    func closedStore() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder, ["owner": "ada"])
        let read = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSFileStoreType, at: folder.storeURL)
        #expect(read["owner"] as? String == "ada")
        #expect(read[NSStoreUUIDKey] as? String != nil)
        var changed = read
        changed["owner"] = "grace"
        try NSPersistentStoreCoordinator.setMetadata(changed, forPersistentStoreOfType: NSFileStoreType, at: folder.storeURL)
        // The lock it took is gone again: the next open is not taken for a crash's.
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        let container = try FSSupport.container(at: folder.storeURL)
        defer { try? FSSupport.close(container) }
        let store = try #require(FSSupport.fileStores(container).first)
        #expect(store.metadata["owner"] == "grace")
        #expect(store.metadata[NSStoreUUIDKey] == read[NSStoreUUIDKey] as? String)
        // Open in this process: set through the open store object.
        try NSPersistentStoreCoordinator.setMetadata(["owner": "alan"], forPersistentStoreOfType: NSFileStoreType, at: folder.storeURL)
        #expect(store.metadata["owner"] == "alan")
    }

    @Test("A damaged sidecar fails the open, typed, and leaves the store file as it was")
    func damagedSidecar() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder, ["owner": "ada"])
        var bytes = try FSSupport.bytes(Self.sidecar(folder))
        bytes[bytes.count - 6] ^= 0xFF
        try FSSupport.write(bytes, to: Self.sidecar(folder))
        let before = try FSSupport.bytes(folder.storeURL)
        let error = FSSupport.loadError { _ = try FSSupport.container(at: folder.storeURL) }
        #expect(error?.kind == .corrupt)
        #expect(error?.path == Self.sidecar(folder).path)
        #expect(try FSSupport.bytes(folder.storeURL) == before)
        // Deleted, as the message says: the store opens without its entries.
        try FileManager.default.removeItem(at: Self.sidecar(folder))
        let container = try FSSupport.container(at: folder.storeURL)
        #expect(try #require(FSSupport.fileStores(container).first).metadata["owner"] == nil)
        try FSSupport.close(container)
    }

    @Test("A sidecar of another store (one made again at the same path) is ignored; destroying the store removes it")
    func tiedToTheStore() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder, ["owner": "ada"])
        let left = try FSSupport.bytes(Self.sidecar(folder))
        try FileStore.destroy(at: folder.storeURL)
        #expect(!FileManager.default.fileExists(atPath: Self.sidecar(folder).path))
        // A new store at the path, with the old sidecar put back beside it.
        try FSSupport.close(try FSSupport.container(at: folder.storeURL))
        try FSSupport.write(left, to: Self.sidecar(folder))
        let container = try FSSupport.container(at: folder.storeURL)
        defer { try? FSSupport.close(container) }
        #expect(try #require(FSSupport.fileStores(container).first).metadata["owner"] == nil)
    }

    @Test("A store added read-only refuses new entries, typed, and keeps its old ones")
    func readOnlyRefuses() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder, ["owner": "ada"])
        let container = try ReadOnlyFileStoreTests.readOnlyContainer(folder.storeURL)
        defer { try? FSSupport.close(container) }
        let store = try #require(FSSupport.fileStores(container).first)
        #expect(store.metadata["owner"] == "ada")
        let error = #expect(throws: CoreDataError.self) {
            try container.persistentStoreCoordinator.setMetadata(["owner": "grace"], for: store)
        }
        #expect(error?.code == .persistentStoreSave)
        #expect(store.metadata["owner"] == "ada")
    }
}
