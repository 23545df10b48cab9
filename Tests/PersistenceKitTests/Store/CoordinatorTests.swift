import Foundation
import TestSupport
import Testing
@testable import PersistenceKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A coordinator adds a store once, finds it by URL (also through a symbolic link), and reads
/// the options and metadata Core Data code passes.
@Suite("Adding, finding and removing stores", .serialized) struct CoordinatorTests {
    @Test func addingAStoreAtTheSameURLTwiceReportsAlreadyAdded() throws {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("bit-\(UUID().uuidString).store")
        let container = NSPersistentContainer(name: "twice", managedObjectModel: try Fixtures.model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url, type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        #expect(box.get() == nil)
        // A new description naming the same location.
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url, type: NSInMemoryStoreType)]
        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get() as? CoreDataError)
        #expect(error.code == .persistentStoreAlreadyAdded)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)

        let direct = #expect(throws: CoreDataError.self) {
            try container.persistentStoreCoordinator.addPersistentStore(type: NSInMemoryStoreType, at: url)
        }
        #expect(direct?.code == .persistentStoreAlreadyAdded)
    }

    @Test func addingTheSameStoreObjectTwiceReportsAlreadyAdded() throws {
        let model = try Fixtures.model()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = InMemoryStore(model: model)
        try coordinator.addPersistentStore(store)
        let error = #expect(throws: CoreDataError.self) { try coordinator.addPersistentStore(store) }
        #expect(error?.code == .persistentStoreAlreadyAdded)
        #expect(coordinator.persistentStores.count == 1)
    }

    @Test func unknownStoreTypeThrows() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try Fixtures.model())
        let error = #expect(throws: CoreDataError.self) {
            try coordinator.addPersistentStore(type: "NoSuchStoreType", at: nil)
        }
        #expect(error?.code == .persistentStoreInvalidType)
        #expect(coordinator.persistentStores.isEmpty)
    }

    /// A file store refuses a URL that is not a file URL, rather than take its path
    /// (`https://host/tmp/x.store` would create and lock `/tmp/x.store` on the local disk).
    @Test func aFileStoreRefusesAURLThatIsNotAFileURL() async throws {
        let name = "not-a-file-url-\(UUID().uuidString).store"
        let url = try #require(URL(string: "https://example.com/tmp/\(name)"))
        let container = NSPersistentContainer(name: "web", managedObjectModel: try Fixtures.model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url)]
        let error = await #expect(throws: CoreDataError.self) { try await container.loadPersistentStores() }
        #expect(error?.code == .persistentStoreOpen)
        #expect(error?.description.contains("file URL") == true)
        #expect(throws: FileStoreError.self) { _ = try FileStore.open(at: url, model: try Fixtures.model()) }
        #expect(!FileManager.default.fileExists(atPath: "/tmp/\(name)"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/\(name)-lock"))
    }

    /// `persistentStore(for:)` must find a file store by the URL it was added with, also
    /// when the URL goes through a symbolic link (the file store itself resolves links, so
    /// a second coordinator opening the same file shares the first one's store object).
    @Test func persistentStoreForURLThroughASymlink() throws {
        let folder = try TemporaryFolder()
        let real = folder.url.appendingPathComponent("real", isDirectory: true)
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        let link = folder.url.appendingPathComponent("link", isDirectory: true)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let realURL = real.appendingPathComponent("a.store")
        let linkURL = link.appendingPathComponent("a.store")
        let model = try Fixtures.model()
        let c1 = NSPersistentStoreCoordinator(managedObjectModel: model)
        let s1 = try c1.addPersistentStore(ofType: NSFileStoreType, configurationName: nil, at: realURL, options: nil)
        let c2 = NSPersistentStoreCoordinator(managedObjectModel: model)
        let s2 = try c2.addPersistentStore(ofType: NSFileStoreType, configurationName: nil, at: linkURL, options: nil)
        #expect(c1.persistentStore(for: realURL) === s1)
        #expect(c2.persistentStore(for: linkURL) === s2)
        #expect(c1.persistentStore(for: linkURL) === s1)
        try c2.remove(s2)
        try c1.remove(s1)
    }

    /// Option keys and values as Core Data code passes them (NSString keys, NSNumber values).
    @Test func optionsGivenAsFoundationObjectsAreRead() throws {
        let folder = try TemporaryFolder()
        let c = NSPersistentStoreCoordinator(managedObjectModel: try Fixtures.model())
        let key: NSString = "PersistenceKit.durability"
        let s = try c.addPersistentStore(
            ofType: NSFileStoreType, configurationName: nil, at: folder.storeURL,
            options: [key: NSString(string: "normal"), "x": NSNumber(value: true)])
        #expect((s as? FileStore)?.options.durability == .normal)
        try c.remove(s)
    }

    // MARK: A misspelt store option

    /// An unknown durability value ("Normal" for "normal") silently falls back to full.
    @Test func anUnknownDurabilityValueIsReported() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("UnknownDurability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let container = NSPersistentContainer(name: "Durability", managedObjectModel: try Fixtures.model())
        let description = NSPersistentStoreDescription(url: folder.appendingPathComponent("d.store"))
        description.setOption("Normal", forKey: FileStore.durabilityOptionKey)
        container.persistentStoreDescriptions = [description]
        await #expect(throws: CoreDataError.self) { try await container.loadPersistentStores() }
    }

    // MARK: Store metadata

    /// Bug: reading a store's metadata opened the file for writing, so a store the caller
    /// may only read (a bundled or shared store) failed with a permission error.
    @Test func metadataOfAStoreThatCanOnlyBeReadIsRead() async throws {
        let folder = try TemporaryFolder()
        try FSSupport.close(try FSSupport.container(at: folder.storeURL))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: folder.storeURL.path)
        await #expect(processExitsWith: .success) { [path = folder.storeURL.path as String] in
            if getuid() == 0 {  // root may write anyway: read as `nobody`
                guard setgid(65534) == 0, setuid(65534) == 0 else { exit(3) }
            }
            do {
                let metadata = try FileStore.metadata(at: URL(fileURLWithPath: path))
                exit(metadata[NSStoreTypeKey] == NSFileStoreType ? 0 : 4)
            } catch {
                exit(5)
            }
        }
    }
}
