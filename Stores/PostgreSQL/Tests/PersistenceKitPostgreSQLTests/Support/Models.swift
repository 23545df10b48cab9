import Foundation
import PersistenceKit

// The test model: a bookshelf, as the root package's tests use, and a record with every
// attribute type.

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
}

final class Author: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "authors", deleteRule: .nullifyDeleteRule) var books: Set<Book>
}

final class Record: NSManagedObject {
    @Attribute var small: Int16 = 0
    @Attribute var medium: Int32 = 0
    @Attribute var large: Int64 = 0
    @Attribute var ratio: Double = 0
    @Attribute var single: Float = 0
    @Attribute var amount: Decimal = 0
    @Attribute var text: String = ""
    @Attribute var flag: Bool = false
    @Attribute var when: Date?
    @Attribute var blob: Data?
    @Attribute var uuid: UUID?
    @Attribute var link: URL?
}

final class Tag: NSManagedObject {
    @Attribute(.unique) var label: String = ""
    @Attribute var uses: Int64 = 0
}

enum Models {
    static func bookshelf() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self, Record.self, Tag.self])
    }
}
