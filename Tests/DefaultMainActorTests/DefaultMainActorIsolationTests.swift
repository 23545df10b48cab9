// This target is compiled with `defaultIsolation(MainActor.self)`, as Swift 6.2's new app
// targets are: every declaration without an isolation of its own is on the main actor.
// A model class must then say `nonisolated`, as with Core Data: a main-actor class could not
// be made or touched on a background context's queue.
import Foundation
import ModelActorKit
import Testing

nonisolated final class Shelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf") var books: Set<Book>
}

nonisolated final class Book: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.indexed) var year: Int64 = 0
    @Relationship(inverse: "books") var shelf: Shelf?
}

/// A model actor declared in a main-actor-by-default module: an actor keeps its own
/// isolation, so its methods run on its context's queue, never on the main thread.
actor ShelfImporter: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor

    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }

    /// Saves a shelf with `count` books and returns its ID.
    func importShelf(named name: String, count: Int) throws -> NSManagedObjectID {
        let shelf = Shelf(context: modelContext)
        shelf.name = name
        for i in 0..<count {
            let book = Book(context: modelContext)
            book.title = "Book \(i)"
            book.year = Int64(1990 + i)
            book.shelf = shelf
        }
        try modelContext.save()
        return shelf.objectID
    }

    /// Whether the actor's code runs off the main thread.
    func runsOffMainThread() -> Bool { !Thread.isMainThread }
}

@Suite("Models and model actors in a module with default MainActor isolation")
struct DefaultMainActorIsolationTests {
    @Test("The view context saves and fetches nonisolated models on the main actor")
    func viewContextRoundTrip() throws {
        let container = try NSPersistentContainer.makeRuntimeTest(modelTypes: [Shelf.self, Book.self])
        let context = container.viewContext
        let shelf = Shelf(context: context)
        shelf.name = "Fiction"
        for (title, year) in [("Dune", 1965), ("Neuromancer", 1984), ("Hyperion", 1989)] {
            let book = Book(context: context)
            book.title = title
            book.year = Int64(year)
            book.shelf = shelf
        }
        try context.save()

        let request = Book.fetchRequest()
        request.predicate = #Predicate<Book> { $0.year > 1970 }
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.year, ascending: true)]
        #expect(try context.fetch(request).map(\.title) == ["Neuromancer", "Hyperion"])
        #expect(shelf.books.count == 3)
    }

    @Test("A background context's perform block uses the same models off the main actor")
    func backgroundContextPerform() async throws {
        let container = try NSPersistentContainer.makeRuntimeTest(modelTypes: [Shelf.self, Book.self])
        let background = container.newBackgroundContext()
        let titles = try await background.perform {
            let book = Book(context: background)
            book.title = "Solaris"
            try background.save()
            return try background.fetch(Book.fetchRequest()).map(\.title)
        }
        #expect(titles == ["Solaris"])
    }

    @Test("A model actor's save reaches the view context through its object ID")
    func modelActorSaveSeenByViewContext() async throws {
        let container = try NSPersistentContainer.makeRuntimeTest(modelTypes: [Shelf.self, Book.self])
        let importer = ShelfImporter(container: container)
        let id = try await importer.importShelf(named: "Poetry", count: 4)
        #expect(await importer.runsOffMainThread())
        let shelf = try #require(try container.viewContext.existingObject(with: id) as? Shelf)
        #expect(shelf.name == "Poetry")
        #expect(shelf.books.count == 4)
    }
}
