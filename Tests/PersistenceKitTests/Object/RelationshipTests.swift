import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

/// To-one and to-many relationships as properties and by key; every change keeps the inverse.
@Suite("Relationships and their inverses") struct RelationshipTests {
    /// Duplicates in the sequence, and the relationship's own set, passed to insert/remove.
    @Test func toManyEditsWithDuplicatesOrTheSetItself() throws {
        let container = try Fixtures.container()
        let ctx = container.viewContext
        try ctx.performAndWait {
            let shelf = Shelf(context: ctx)
            let a = Book(context: ctx), b = Book(context: ctx)
            shelf.$books.insert(contentsOf: [a, a, b, b])
            #expect(shelf.books == [a, b])
            #expect(a.shelf === shelf)
            shelf.$books.remove(contentsOf: [a, a])
            #expect(shelf.books == [b])
            #expect(a.shelf == nil)
            shelf.$books.insert(contentsOf: shelf.books)
            #expect(shelf.books == [b])
            shelf.$books.remove(contentsOf: shelf.books)
            #expect(shelf.books.isEmpty && b.shelf == nil)
            try ctx.save()
        }
    }

    // MARK: Relationships

    @Test func toOneAndToManyAsProperties() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let shelf = Shelf(context: context)
            let b1 = Book(context: context)
            let b2 = Book(context: context)
            let b3 = Book(context: context)
            #expect(shelf.books.isEmpty)
            #expect(b1.shelf == nil)

            b1.shelf = shelf
            #expect(shelf.books == [b1])

            shelf.books = [b1, b2]
            #expect(b2.shelf === shelf)
            #expect(shelf.books == [b1, b2])

            shelf.books = [b2, b3]  // replacing the set unlinks b1 and links b3
            #expect(b1.shelf == nil)
            #expect(b2.shelf === shelf)
            #expect(b3.shelf === shelf)
            #expect(shelf.books == [b2, b3])

            b2.shelf = nil
            #expect(shelf.books == [b3])

            shelf.books = []
            #expect(b3.shelf == nil)
            #expect(shelf.books.isEmpty)
        }
    }

    @Test func projectedSetOperations() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let shelf = Shelf(context: context)
            let books = (0..<5).map { i -> Book in
                let b = Book(context: context)
                b.title = "B\(i)"
                return b
            }
            #expect(shelf.$books.count == 0)
            #expect(shelf.$books.isEmpty)

            shelf.$books.insert(books[0])
            #expect(shelf.$books.count == 1)
            #expect(shelf.$books.contains(books[0]))
            #expect(!shelf.$books.contains(books[1]))
            #expect(books[0].shelf === shelf)

            shelf.$books.insert(books[0])  // inserting twice changes nothing
            #expect(shelf.$books.count == 1)

            shelf.$books.insert(contentsOf: books[1...3])
            #expect(shelf.$books.count == 4)
            #expect(books[1...3].allSatisfy { $0.shelf === shelf })
            #expect(books[4].shelf == nil)

            shelf.$books.remove(books[1])
            #expect(shelf.$books.count == 3)
            #expect(books[1].shelf == nil)
            #expect(!shelf.$books.contains(books[1]))

            shelf.$books.remove(books[4])  // not a member: nothing happens
            #expect(shelf.$books.count == 3)

            shelf.$books.remove(contentsOf: [books[0], books[2]])
            #expect(shelf.$books.count == 1)
            #expect(books[0].shelf == nil)
            #expect(books[2].shelf == nil)
            #expect(shelf.$books.objects == [books[3]])
            #expect(shelf.books == [books[3]])

            shelf.$books.removeAll()
            #expect(shelf.$books.isEmpty)
            #expect(books[3].shelf == nil)
        }
    }

    @Test func mutableSetValueKeepsInverses() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            let a1 = Author(context: context)
            let a2 = Author(context: context)
            let authors = book.mutableSetValue(forKey: "authors")
            authors.insert(a1)
            authors.insert(contentsOf: [a2])
            #expect(authors.count == 2)
            #expect(book.authors == [a1, a2])
            #expect(a1.books == [book])
            #expect(a2.books == [book])
            authors.remove(a1)
            #expect(a1.books.isEmpty)
            #expect(book.authors == [a2])
            #expect(authors.contains(a2))
        }
    }

    @Test func oneToOneInverseUpkeep() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            let c1 = Cover(context: context)
            let c2 = Cover(context: context)
            book.cover = c1
            #expect(c1.book === book)

            c2.book = book  // takes the book from c1
            #expect(book.cover === c2)
            #expect(c1.book == nil)

            let other = Book(context: context)
            other.cover = c2  // takes c2 from book
            #expect(c2.book === other)
            #expect(book.cover == nil)

            other.cover = nil
            #expect(c2.book == nil)
            #expect(other.cover == nil)
        }
    }

    @Test func movingABookBetweenShelves() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let s1 = Shelf(context: context)
            let s2 = Shelf(context: context)
            let book = Book(context: context)
            let stay = Book(context: context)
            s1.books = [book, stay]
            try context.save()

            book.shelf = s2
            #expect(s1.books == [stay])
            #expect(s2.books == [book])

            s1.$books.insert(book)  // and back, through the to-many side
            #expect(book.shelf === s1)
            #expect(s2.books.isEmpty)
            #expect(s1.books == [book, stay])

            s2.books = [book]  // replacing s2's set also takes the book from s1
            #expect(book.shelf === s2)
            #expect(s1.books == [stay])
            try context.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let shelves = try reader.fetch(Shelf.fetchRequest())
            #expect(shelves.map { $0.books.count }.sorted() == [1, 1])
            #expect(try reader.count(for: Book.fetchRequest()) == 2)
        }
    }

    @Test func manyToManyInverseUpkeep() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let b1 = Book(context: context)
            let b2 = Book(context: context)
            let a1 = Author(context: context)
            let a2 = Author(context: context)

            b1.authors = [a1, a2]
            #expect(a1.books == [b1])
            #expect(a2.books == [b1])

            a2.$books.insert(b2)
            #expect(b2.authors == [a2])
            #expect(a2.books == [b1, b2])

            b1.$authors.remove(a1)
            #expect(a1.books.isEmpty)
            #expect(b1.authors == [a2])

            a2.books = [b2]
            #expect(b1.authors.isEmpty)
            #expect(b2.authors == [a2])
        }
    }

    @Test func relationshipsRoundTripThroughASave() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let ids: (shelf: NSManagedObjectID, book: NSManagedObjectID) = try writer.performAndWait {
            let shelf = Shelf(context: writer)
            shelf.name = "Poetry"
            let book = Book(context: writer)
            book.title = "Odes"
            book.shelf = shelf
            let cover = Cover(context: writer)
            cover.color = "blue"
            book.cover = cover
            let a1 = Author(context: writer)
            a1.name = "Keats"
            let a2 = Author(context: writer)
            a2.name = "Shelley"
            book.authors = [a1, a2]
            let lonely = Book(context: writer)
            lonely.title = "Lonely"
            lonely.authors = [a2]
            try writer.save()
            return (shelf.objectID, book.objectID)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let shelf = try #require(try reader.existingObject(with: ids.shelf) as? Shelf)
            #expect(shelf.name == "Poetry")
            #expect(shelf.books.map(\.title) == ["Odes"])
            let book = try #require(shelf.books.first)
            #expect(book.objectID == ids.book)
            #expect(book.shelf === shelf)
            #expect(book.cover?.color == "blue")
            #expect(book.cover?.book === book)
            #expect(Set(book.authors.map(\.name)) == ["Keats", "Shelley"])
            let shelley = try #require(book.authors.first { $0.name == "Shelley" })
            #expect(Set(shelley.books.map(\.title)) == ["Odes", "Lonely"])
            #expect(shelley.$books.count == 2)
            // Uniquing across relationships: the same row is the same object.
            let lonely = try #require(shelley.books.first { $0.title == "Lonely" })
            #expect(lonely.authors.first === shelley)
        }
    }

    @Test func relationshipChangesMarkBothSidesUpdated() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let s1 = Shelf(context: context)
            let s2 = Shelf(context: context)
            let book = Book(context: context)
            book.shelf = s1
            try context.save()
            book.shelf = s2
            #expect(context.updatedObjects == [s1, s2, book])
            #expect(s1.hasPersistentChangedValues)
            #expect(s2.hasPersistentChangedValues)
            #expect(book.hasPersistentChangedValues)
        }
    }

    @Test func inverseUpkeepOnFetchedFaults() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let ids: [NSManagedObjectID] = try writer.performAndWait {
            let s1 = Shelf(context: writer)
            s1.name = "one"
            let s2 = Shelf(context: writer)
            s2.name = "two"
            let book = Book(context: writer)
            book.shelf = s1
            let a1 = Author(context: writer)
            let a2 = Author(context: writer)
            book.authors = [a1, a2]
            try writer.save()
            return [s1.objectID, s2.objectID, book.objectID, a1.objectID, a2.objectID]
        }
        let editor = container.newBackgroundContext()
        try editor.performAndWait {
            // Only the book is loaded; the shelves and authors are faults.
            let book = try #require(try editor.existingObject(with: ids[2]) as? Book)
            let s1 = try #require(editor.object(with: ids[0]) as? Shelf)
            let s2 = try #require(editor.object(with: ids[1]) as? Shelf)
            let a1 = try #require(editor.object(with: ids[3]) as? Author)
            #expect(s1.isFault)
            #expect(a1.isFault)
            book.shelf = s2
            #expect(s1.books.isEmpty)
            #expect(s2.books == [book])
            book.$authors.remove(a1)
            #expect(a1.books.isEmpty)
            #expect(book.authors.map(\.objectID) == [ids[4]])
            try editor.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let s1 = try #require(try reader.existingObject(with: ids[0]) as? Shelf)
            let s2 = try #require(try reader.existingObject(with: ids[1]) as? Shelf)
            let a1 = try #require(try reader.existingObject(with: ids[3]) as? Author)
            let a2 = try #require(try reader.existingObject(with: ids[4]) as? Author)
            #expect(s1.books.isEmpty)
            #expect(s2.books.map(\.objectID) == [ids[2]])
            #expect(a1.books.isEmpty)
            #expect(a2.books.map(\.objectID) == [ids[2]])
        }
    }
}
