import Foundation
@testable import PersistenceKit

/// Models and descriptions built by hand with the description API, for the model tests.
extension Fixtures {
    /// The bookshelf model, built by hand with the description API.
    static func handBuiltBookshelf() -> NSManagedObjectModel {
        func attr(_ name: String, _ type: NSAttributeType, optional: Bool, default value: Any? = nil, indexed: Bool = false)
            -> NSAttributeDescription
        {
            let a = NSAttributeDescription()
            a.name = name
            a.attributeType = type
            a.isOptional = optional
            a.defaultValue = value
            a.isIndexed = indexed
            return a
        }
        func rel(_ name: String, toMany: Bool, rule: NSDeleteRule) -> NSRelationshipDescription {
            let r = NSRelationshipDescription()
            r.name = name
            r.maxCount = toMany ? 0 : 1
            r.minCount = 0
            r.deleteRule = rule
            r.isOptional = true
            return r
        }
        let shelf = NSEntityDescription()
        shelf.name = "Shelf"
        let book = NSEntityDescription()
        book.name = "Book"
        let author = NSEntityDescription()
        author.name = "Author"
        let cover = NSEntityDescription()
        cover.name = "Cover"

        let shelfBooks = rel("books", toMany: true, rule: .cascadeDeleteRule)
        let bookShelf = rel("shelf", toMany: false, rule: .nullifyDeleteRule)
        let bookAuthors = rel("authors", toMany: true, rule: .nullifyDeleteRule)
        let bookCover = rel("cover", toMany: false, rule: .cascadeDeleteRule)
        let authorBooks = rel("books", toMany: true, rule: .denyDeleteRule)
        let coverBook = rel("book", toMany: false, rule: .nullifyDeleteRule)

        shelfBooks.destinationEntity = book
        shelfBooks.inverseRelationship = bookShelf
        bookShelf.destinationEntity = shelf
        bookShelf.inverseRelationship = shelfBooks
        bookAuthors.destinationEntity = author
        bookAuthors.inverseRelationship = authorBooks
        authorBooks.destinationEntity = book
        authorBooks.inverseRelationship = bookAuthors
        bookCover.destinationEntity = cover
        bookCover.inverseRelationship = coverBook
        coverBook.destinationEntity = book
        coverBook.inverseRelationship = bookCover

        shelf.properties = [attr("name", .stringAttributeType, optional: false, default: ""), shelfBooks]
        // Deliberately a different property order than the class declares.
        book.properties = [
            bookCover, bookAuthors, bookShelf,
            attr("published", .dateAttributeType, optional: true),
            attr("pages", .integer64AttributeType, optional: false, default: Int64(0), indexed: true),
            attr("title", .stringAttributeType, optional: false, default: ""),
        ]
        author.properties = [attr("name", .stringAttributeType, optional: false, default: ""), authorBooks]
        cover.properties = [attr("color", .stringAttributeType, optional: false, default: "white"), coverBook]

        let model = NSManagedObjectModel()
        model.entities = [cover, author, book, shelf]
        return model
    }

    static func entity(_ name: String, _ properties: [NSPropertyDescription]) -> NSEntityDescription {
        NSEntityDescription(name: name, properties: properties)
    }

    static func attribute(_ name: String, _ type: NSAttributeType) -> NSAttributeDescription {
        NSAttributeDescription(name: name, type: type)
    }
}
