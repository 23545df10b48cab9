import Foundation
import PersistenceKit

// Shared test model: a bookshelf. Every test builds its own container and store.

final class Shelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf", deleteRule: .cascadeDeleteRule) var books: Set<Book>
}

final class Book: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.indexed) var pages: Int64 = 0
    @Attribute var published: Date?
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var shelf: Shelf?
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var authors: Set<Author>
    @Relationship(inverse: "book", deleteRule: .cascadeDeleteRule) var cover: Cover?
}

final class Author: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "authors", deleteRule: .denyDeleteRule) var books: Set<Book>
}

final class Cover: NSManagedObject {
    @Attribute var color: String = "white"
    @Relationship(inverse: "cover") var book: Book?
}

enum Fixtures {
    static func model() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self, Cover.self])
    }

    /// A container with a loaded in-memory store of its own.
    static func container(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        var failure: (any Error)?
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        failure = box.get()
        if let failure { throw failure }
        return container
    }
}

extension Fixtures {
    /// Deletes `id`'s object in a context of its own and saves: the container's other
    /// contexts, which have not merged that save, hold a stale view of it.
    static func deleteInAnotherContext(_ id: NSManagedObjectID, in container: NSPersistentContainer) throws {
        let other = container.newBackgroundContext()
        try other.performAndWait {
            other.delete(other.object(with: id))
            try other.save()
        }
    }
}

/// The IDs of the shelf `Fixtures.seedShelf` saves.
struct SeededShelf: Sendable {
    let shelf: NSManagedObjectID
    let a: NSManagedObjectID
    let b: NSManagedObjectID
}

extension Fixtures {
    /// Saves a shelf "Shelf" with books "A" (100 pages) and "B" (200 pages).
    static func seedShelf(_ container: NSPersistentContainer) async throws -> SeededShelf {
        let ctx = container.newBackgroundContext()
        return try await ctx.perform {
            let shelf = Shelf(context: ctx)
            shelf.name = "Shelf"
            let a = Book(context: ctx)
            a.title = "A"
            a.pages = 100
            a.shelf = shelf
            let b = Book(context: ctx)
            b.title = "B"
            b.pages = 200
            b.shelf = shelf
            try ctx.save()
            return SeededShelf(shelf: shelf.objectID, a: a.objectID, b: b.objectID)
        }
    }
}

/// Carries an error out of a synchronous completion handler.
final class ErrorBox: @unchecked Sendable {
    // @unchecked Sendable: only used with synchronous completion handlers on one thread.
    private var error: (any Error)?
    func set(_ e: (any Error)?) { error = e }
    func get() -> (any Error)? { error }
}

extension Fixtures {
    /// Saves shelf "S" holding book "X" through `container`; returns their IDs.
    static func seedShelfHoldingABook(_ container: NSPersistentContainer) throws -> (NSManagedObjectID, NSManagedObjectID) {
        let seed = container.newBackgroundContext()
        return try seed.performAndWait {
            let s = Shelf(context: seed)
            s.name = "S"
            let x = Book(context: seed)
            x.title = "X"
            x.shelf = s
            try seed.save()
            return (s.objectID, x.objectID)
        }
    }
}
