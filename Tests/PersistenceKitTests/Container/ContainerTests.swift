import Foundation
import Testing
@testable import PersistenceKit

/// A container loads its stores once, reports a model or store that cannot load, and its
/// contexts insert, save and fetch.
@Suite("Persistent container set-up and loading") struct ContainerTests {
    @Test func savingWithNoStoreLoadedThrows() throws {
        let container = try MisuseSupport.unloadedContainer()
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            book.title = "Nowhere"
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .coreData)
            #expect(error?.code.rawValue == 134060)
            // Nothing changed in the context.
            #expect(context.hasChanges)
            #expect(book.isInserted)
            #expect(book.objectID.isTemporaryID)
            #expect(book.title == "Nowhere")

            let fetchError = #expect(throws: CoreDataError.self) { try context.fetch(Book.fetchRequest()) }
            #expect(fetchError?.code == .coreData)
            let idError = #expect(throws: CoreDataError.self) { try context.obtainPermanentIDs(for: [book]) }
            #expect(idError?.code == .coreData)
        }
    }

    @Test func loadingAStoreTwiceReportsAlreadyAdded() async throws {
        let container = try MisuseSupport.unloadedContainer()
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        #expect(box.get() == nil)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)

        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get() as? CoreDataError)
        #expect(error.code == .persistentStoreAlreadyAdded)
        #expect(error.code.rawValue == 134081)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)

        // The async form reports it too.
        let asyncError = await #expect(throws: CoreDataError.self) { try await container.loadPersistentStores() }
        #expect(asyncError?.code == .persistentStoreAlreadyAdded)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)
    }

    @Test func invalidModelInAContainerReportsTheErrorOnLoad() throws {
        let container = NSPersistentContainer(name: "invalid", managedObjectModel: MisuseSupport.invalidModel())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get() as? CoreDataError)
        #expect(error.code == .coreData)
        #expect((error.underlying as? ModelError)?.property == "blob")
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
    }

    /// A container's description naming a configuration other than the one there is fails
    /// to load, instead of silently loading every entity.
    @Test func aDescriptionNamingAnotherConfigurationFailsToLoad() throws {
        let container = NSPersistentContainer(name: "Shelves", managedObjectModel: try Fixtures.model())
        let description = NSPersistentStoreDescription(type: NSInMemoryStoreType)
        description.configuration = "Cloud"
        container.persistentStoreDescriptions = [description]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        #expect((box.get() as? CoreDataError)?.code == .persistentStoreIncompatibleSchema)
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
        description.configuration = "Default"
        let retry = ErrorBox()
        container.loadPersistentStores { _, error in retry.set(error) }
        #expect(retry.get() == nil)
    }

    @Test func insertSaveFetchInBackground() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let titles: [String] = try await context.perform {
            let shelf = Shelf(context: context)
            shelf.name = "Fiction"
            for i in 0..<3 {
                let b = Book(context: context)
                b.title = "Book \(i)"
                b.pages = Int64(100 * i)
                b.shelf = shelf
            }
            #expect(shelf.books.count == 3)
            #expect(shelf.$books.count == 3)
            try context.save()
            let request = Book.fetchRequest()
            request.predicate = #Predicate<Book> { $0.pages >= 100 }
            request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: false)]
            return try context.fetch(request).map(\.title)
        }
        #expect(titles == ["Book 2", "Book 1"])
    }
}
