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

/// Carries an error out of a synchronous completion handler.
final class ErrorBox: @unchecked Sendable {
    // @unchecked Sendable: only used with synchronous completion handlers on one thread.
    private var error: (any Error)?
    func set(_ e: (any Error)?) { error = e }
    func get() -> (any Error)? { error }
}
