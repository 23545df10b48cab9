import Foundation
import Testing
@testable import PersistenceKit

/// An entity the fixtures' model lacks: a model with it is another version of that model.
final class ReadOnlyNote: NSManagedObject {
    @Attribute var text: String = ""
}

/// A file store opened read-only (`NSPersistentStoreDescription.isReadOnly`) reads a
/// cleanly closed store and writes nothing, not even its `-lock`; what it cannot read safely
/// without a lock it refuses, typed. (Saves and batch requests refused: the shared
/// `readOnly` check.)
@Suite("File store opened read-only")
struct ReadOnlyFileStoreTests {
    /// A container with the file store at `url` added read-only (`model`: the fixtures').
    static func readOnlyContainer(_ url: URL, model: NSManagedObjectModel? = nil, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try model ?? Fixtures.model())
        let description = NSPersistentStoreDescription(url: url)
        description.isReadOnly = true
        container.persistentStoreDescriptions = [description]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// A store at `url` holding three books, closed cleanly.
    static func seed(_ url: URL) throws {
        let container = try FSSupport.container(at: url)
        try FSSupport.insertBooks(container.newBackgroundContext(), ["Dune", "Emma", "Ulysses"])
        try FSSupport.close(container)
    }

    @Test("Reads every object and leaves the file, and the folder, byte for byte as they were")
    func readsWithoutWriting() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder.storeURL)
        let before = try FSSupport.bytes(folder.storeURL)
        let listing = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()

        let container = try Self.readOnlyContainer(folder.storeURL)
        #expect(try FSSupport.books(container).map(\.title).sorted() == ["Dune", "Emma", "Ulysses"])
        // No `-lock` while it is open: nothing is written beside the file either.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted() == listing)
        let store = try #require(FSSupport.fileStores(container).first)
        #expect(store.isReadOnly)
        // Nor through the store itself: a compaction would rename its old image over the file.
        let compaction = #expect(throws: FileStoreError.self) { try store.compact() }
        #expect(compaction?.kind == .readOnly)
        try FSSupport.close(container)
        #expect(try FSSupport.bytes(folder.storeURL) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted() == listing)
    }

    @Test("Another process reads the same store read-only while this one has it open so")
    func twoProcessesRead() async throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder.storeURL)
        let container = try Self.readOnlyContainer(folder.storeURL)
        defer { try? FSSupport.close(container) }
        #expect(try FSSupport.books(container).count == 3)
        await #expect(processExitsWith: .exitCode(42)) { [path = folder.storeURL.path as String] in
            do {
                var options = FileStore.Options()
                options.readOnly = true
                let model = try Fixtures.model()
                let store = try FileStore.open(at: URL(fileURLWithPath: path), model: model, options: options)
                let counted = try store.countRows(entity: try #require(model.entitiesByName["Book"]).index, filter: nil)
                try store.close()
                exit(counted == 3 ? 42 : Int32(10 + counted))
            } catch {
                exit(2)
            }
        }
    }

    @Test("A store another process has open for writing (its -lock is there) is refused, typed, and left alone")
    func lockedStoreRefused() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder.storeURL)
        let lock = URL(fileURLWithPath: folder.storeURL.path + "-lock")
        try Data().write(to: lock)
        let before = try FSSupport.bytes(folder.storeURL)
        let error = FSSupport.loadError { _ = try Self.readOnlyContainer(folder.storeURL) }
        #expect(error?.kind == .lockedByAnotherProcess)
        #expect(error?.path == FSSupport.path(folder.storeURL))
        #expect(FileManager.default.fileExists(atPath: lock.path))
        #expect(try FSSupport.bytes(folder.storeURL) == before)
    }

    @Test("A missing store is not created: typed error, no file")
    func missingStoreNotCreated() throws {
        let folder = try TemporaryFolder()
        let error = FSSupport.loadError { _ = try Self.readOnlyContainer(folder.storeURL) }
        #expect(error?.kind == .io)
        #expect(error?.message.contains("not created") == true)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path))
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        // Nor its folder.
        let deeper = folder.url.appendingPathComponent("missing/store.pkstore")
        #expect(FSSupport.loadError { _ = try Self.readOnlyContainer(deeper) }?.kind == .io)
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("missing").path))
    }

    @Test("In one process, a store open for writing is not opened read-only too (one store object serves both)")
    func sameProcessMismatch() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder.storeURL)
        let writer = try FSSupport.container(at: folder.storeURL)
        defer { try? FSSupport.close(writer) }
        let error = FSSupport.loadError { _ = try Self.readOnlyContainer(folder.storeURL) }
        #expect(error?.kind == .optionsMismatch)
    }

    @Test("A read-only store of another model is not migrated: the mismatch error, the file unchanged")
    func notMigrated() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder.storeURL)
        let before = try FSSupport.bytes(folder.storeURL)
        let other = try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self, Cover.self, ReadOnlyNote.self])
        let error = #expect(throws: CoreDataError.self) { _ = try Self.readOnlyContainer(folder.storeURL, model: other) }
        #expect(error?.code == .persistentStoreIncompatibleVersionHash, "\(String(describing: error))")
        #expect(try FSSupport.bytes(folder.storeURL) == before)
    }

    @Test("Changes a will-save observer makes are refused too, and nothing is written")
    func willSaveObserverRefused() throws {
        let folder = try TemporaryFolder()
        try Self.seed(folder.storeURL)
        let before = try FSSupport.bytes(folder.storeURL)
        let container = try Self.readOnlyContainer(folder.storeURL)
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        let observer = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextWillSave, object: context, queue: nil
        ) { _ in
            // Posted on the context's queue, inside its save.
            Book(context: context).title = "added while saving"
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let error = context.performAndWait { () -> CoreDataError? in
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoreDataError
            }
        }
        #expect(error?.code == .persistentStoreSave, "\(String(describing: error))")
        #expect(try FSSupport.bytes(folder.storeURL) == before)
    }
}
