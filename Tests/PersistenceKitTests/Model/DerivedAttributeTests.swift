import Foundation
import Testing
@testable import PersistenceKit

final class DAAuthor: NSManagedObject, DerivedAttributes {
    static let derivedAttributes = [
        "bookCount": NSExpression(forKeyPath: "books.@count"),
        "pageTotal": NSExpression(forKeyPath: "books.@sum.pages"),
        "ratingTotal": NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "books.rating")]),
    ]
    @Attribute var name: String = ""
    @Relationship(inverse: "author") var books: Set<DABook>
    @Attribute var bookCount: Int64 = 0
    @Attribute var pageTotal: Int64 = 0
    @Attribute var ratingTotal: Double = 0
}

final class DABook: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var pages: Int64 = 0
    @Attribute var rating: Double = 0
    @Relationship(inverse: "books") var author: DAAuthor?
}

@Suite("Derived attributes")
struct DerivedAttributeTests {
    static func container(url: URL, name: String = #function) throws -> NSPersistentContainer {
        let model = try NSManagedObjectModel(managedObjectClasses: [DAAuthor.self, DABook.self])
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    @Test func theModelHoldsDerivedAttributeDescriptions() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [DAAuthor.self, DABook.self])
        let count = try #require(model.entitiesByName["DAAuthor"]?.attributesByName["bookCount"] as? NSDerivedAttributeDescription)
        #expect(count.derivationExpression == NSExpression(forKeyPath: "books.@count"))
        #expect(count.attributeType == .integer64AttributeType)
        #expect(count.description.contains("derived=books.@count"))
        let again = try NSManagedObjectModel(managedObjectClasses: [DAAuthor.self, DABook.self])
        #expect(again == model)
    }

    @Test func countsAndSumsAreKeptCurrentAtSaveAndSurviveReopen() throws {
        let folder = try TemporaryFolder()
        do {
            let container = try Self.container(url: folder.storeURL)
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let author = DAAuthor(context: context)
                author.name = "Ann"
                for (title, pages, rating) in [("a", 100, 4.5), ("b", 250, 3.0)] as [(String, Int64, Double)] {
                    let book = DABook(context: context)
                    book.title = title
                    book.pages = pages
                    book.rating = rating
                    book.author = author
                }
                try context.save()
                #expect(author.bookCount == 2)
                #expect(author.pageTotal == 350)
                #expect(author.ratingTotal == 7.5)

                // A member's value changes: the sum follows, though the author did not change.
                let b = try #require(author.books.first { $0.title == "b" })
                b.pages = 300
                try context.save()
                #expect(author.pageTotal == 400)

                // A member leaves: the count and sums follow.
                context.delete(try #require(author.books.first { $0.title == "a" }))
                try context.save()
                #expect(author.bookCount == 1)
                #expect(author.pageTotal == 300)
                #expect(author.ratingTotal == 3.0)
            }
            try FSSupport.close(container)
        }
        let container = try Self.container(url: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let request = DAAuthor.fetchRequest()
            request.predicate = #Predicate<DAAuthor> { $0.bookCount == 1 && $0.pageTotal > 200 }
            let authors = try context.fetch(request)
            #expect(authors.map(\.name) == ["Ann"])
        }
    }

    @Test func aHandBuiltDerivedAttributeWorksInMemory() throws {
        let shelf = NSEntityDescription(name: "Shelf")
        let item = NSEntityDescription(name: "Item")
        let items = NSRelationshipDescription(name: "items")
        items.maxCount = 0
        items.destinationEntity = item
        let owner = NSRelationshipDescription(name: "shelf")
        owner.destinationEntity = shelf
        items.inverseRelationship = owner
        owner.inverseRelationship = items
        let count = NSDerivedAttributeDescription(name: "itemCount", type: .integer32AttributeType)
        count.derivationExpression = NSExpression(forFunction: "count:", arguments: [NSExpression(forKeyPath: "items")])
        count.defaultValue = 0
        shelf.properties = [items, count]
        item.properties = [owner]
        let model = NSManagedObjectModel(entities: [shelf, item])
        let container = NSPersistentContainer(name: "hand", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let s = NSEntityDescription.insertNewObject(forEntityName: "Shelf", into: context)
            for _ in 0..<3 {
                NSEntityDescription.insertNewObject(forEntityName: "Item", into: context).setValue(s, forKey: "shelf")
            }
            try context.save()
            #expect(s.value(forKey: "itemCount") as? Int32 == 3)
        }
    }

    @Test(arguments: ["books.@avg.pages", "title.@count", "books.@sum.title", "books"])
    func anUnsupportedExpressionIsAModelError(expression: String) throws {
        let author = NSEntityDescription(name: "A")
        let book = NSEntityDescription(name: "B", properties: [NSAttributeDescription(name: "title", type: .stringAttributeType)])
        let books = NSRelationshipDescription(name: "books")
        books.maxCount = 0
        books.destinationEntity = book
        let back = NSRelationshipDescription(name: "author")
        back.destinationEntity = author
        books.inverseRelationship = back
        back.inverseRelationship = books
        let derived = NSDerivedAttributeDescription(name: "n", type: .integer64AttributeType)
        derived.derivationExpression = NSExpression(forKeyPath: expression)
        author.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), books, derived]
        book.properties.append(back)
        let error = #expect(throws: ModelError.self) { try NSManagedObjectModel(entities: [author, book]).validate() }
        #expect(error?.kind == .invalidDerivation(expression))
        #expect(error?.property == "n")
    }
}
