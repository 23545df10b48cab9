import Foundation
import Testing
@testable import PersistenceKit

@Suite("File store basics: saving, reopening, destroying") struct FileStoreBasicsTests {
    func container(at url: URL, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try Fixtures.model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// `destroyPersistentStore(at:ofType:options:)` deletes a closed store and its sidecars,
    /// and refuses a store open in this process without touching it.
    @Test func destroyingAStoreDeletesItsFilesButNotWhileItIsOpen() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        let container = try self.container(at: url)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            Book(context: context).title = "doomed"
            try context.save()
        }
        let coordinator = container.persistentStoreCoordinator
        let error = #expect(throws: FileStoreError.self) {
            try coordinator.destroyPersistentStore(at: url, ofType: NSFileStoreType)
        }
        #expect(error?.kind == .inUse)
        #expect(try context.performAndWait { try context.count(for: Book.fetchRequest()) } == 1)

        for store in coordinator.persistentStores { try coordinator.remove(store) }
        try coordinator.destroyPersistentStore(at: url, ofType: NSFileStoreType)
        for suffix in ["", "-lock", "-new", "-compact"] {
            #expect(!FileManager.default.fileExists(atPath: url.path + suffix), "\(suffix) is left")
        }
        try coordinator.destroyPersistentStore(at: url, ofType: NSFileStoreType)  // nothing left: no error
        let again = try self.container(at: url)
        let fresh = again.newBackgroundContext()
        #expect(try fresh.performAndWait { try fresh.count(for: Book.fetchRequest()) } == 0)
        try FSSupport.close(again)
        #expect(throws: CoreDataError.self) { try coordinator.destroyPersistentStore(at: url, ofType: "SQLite") }
    }

    /// `/dev/null` as the store URL (Core Data's throwaway-store idiom) gives an empty store
    /// that works and keeps nothing; each container gets its own.
    @Test func devNullIsAThrowawayStore() async throws {
        func load() async throws -> NSPersistentContainer {
            let container = NSPersistentContainer(name: "Throwaway", managedObjectModel: try Fixtures.model())
            container.persistentStoreDescriptions.first?.url = URL(fileURLWithPath: "/dev/null")
            try await container.loadPersistentStores()
            return container
        }
        let first = try await load()
        let context = first.newBackgroundContext()
        let count = try context.performAndWait {
            Book(context: context).title = "kept in memory only"
            try context.save()
            return try context.count(for: Book.fetchRequest())
        }
        #expect(count == 1)
        #expect(first.persistentStoreCoordinator.persistentStores.first?.type == NSInMemoryStoreType)
        let second = try await load()
        let other = second.newBackgroundContext()
        #expect(try other.performAndWait { try other.count(for: Book.fetchRequest()) } == 0)
    }

    @Test func savesSurviveCloseAndReopen() throws {
        let folder = try TemporaryFolder()
        var id: NSManagedObjectID?
        do {
            let container = try container(at: folder.storeURL)
            let context = container.newBackgroundContext()
            id = try context.performAndWait {
                let shelf = Shelf(context: context)
                shelf.name = "Poetry"
                let book = Book(context: context)
                book.title = "Odes"
                book.pages = 120
                book.shelf = shelf
                try context.save()
                book.title = "Odes, 2nd ed."
                try context.save()
                return book.objectID
            }
            for store in container.persistentStoreCoordinator.persistentStores {
                try (store as? FileStore)?.close()
            }
        }
        let container = try container(at: folder.storeURL)
        let context = container.newBackgroundContext()
        let uri = try #require(id).uriRepresentation()
        try context.performAndWait {
            let id = try #require(container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: uri))
            let book = try #require(try context.existingObject(with: id) as? Book)
            #expect(book.title == "Odes, 2nd ed.")
            #expect(book.pages == 120)
            #expect(book.shelf?.name == "Poetry")
            #expect(book.shelf?.books.count == 1)
        }
    }
}
