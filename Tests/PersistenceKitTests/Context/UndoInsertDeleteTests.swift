import Foundation
import Testing
@testable import PersistenceKit

/// Undo of inserts and deletions, delete rules included.
@Suite("Undo of inserts and deletions") struct UndoInsertDeleteTests {
    @Test func undoingAnInsertTakesTheObjectOutAndRedoBringsItBack() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let manager = UndoManager()
            context.undoManager = manager
            manager.beginUndoGrouping()
            let book = Book(context: context)
            book.title = "New"
            manager.endUndoGrouping()
            context.undo()
            #expect(context.insertedObjects.isEmpty && !context.hasChanges)
            #expect(book.managedObjectContext == nil)
            context.redo()
            #expect(context.insertedObjects == [book] && book.title == "New")
            try context.save()
            #expect(!context.hasChanges)
        }
    }

    @Test func undoingADeletionRestoresWhatNullifyTookAway() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = try #require(context.existingObject(with: seeded.a) as? Book)
            let shelf = try #require(book.shelf)
            let author = Author(context: context)
            author.books = [book]
            try context.save()
            context.undoManager = UndoManager()

            context.delete(book)
            context.processPendingChanges()  // nullify runs: the shelf and author let go
            #expect(!shelf.books.contains(book) && author.books.isEmpty)
            context.undo()
            #expect(!book.isDeleted && context.deletedObjects.isEmpty)
            #expect(book.shelf === shelf && shelf.books.contains(book) && author.books == [book])
            #expect(!context.hasChanges)
            context.redo()
            #expect(book.isDeleted && !shelf.books.contains(book) && author.books.isEmpty)
            try context.save()
        }
        let reader = container.newBackgroundContext()
        reader.performAndWait {
            _ = #expect(throws: (any Error).self) { try reader.existingObject(with: seeded.a) }
        }
    }

    @Test func undoingACascadeRestoresEveryDeletedObjectAndLink() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = try #require(context.existingObject(with: seeded.shelf) as? Shelf)
            let a = try #require(context.existingObject(with: seeded.a) as? Book)
            let cover = Cover(context: context)
            cover.book = a
            try context.save()
            context.undoManager = UndoManager()

            context.delete(shelf)
            context.processPendingChanges()  // cascades to both books and to a's cover
            #expect(context.deletedObjects.count == 4)
            context.undo()
            #expect(context.deletedObjects.isEmpty && !context.hasChanges)
            #expect(shelf.books.count == 2 && a.shelf === shelf && a.cover === cover && cover.book === a)
            context.redo()
            #expect(context.deletedObjects.count == 4)
        }
    }

    @Test func undoingTheDeletionOfAnInsertBringsItBack() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let manager = UndoManager()
            context.undoManager = manager
            let shelf = Shelf(context: context)
            let book = Book(context: context)
            book.shelf = shelf
            context.processPendingChanges()
            manager.removeAllActions()
            manager.beginUndoGrouping()
            context.delete(book)
            manager.endUndoGrouping()  // processes: the insert goes away
            #expect(book.managedObjectContext == nil && shelf.books.isEmpty)
            context.undo()
            #expect(book.managedObjectContext === context && context.insertedObjects == [shelf, book])
            #expect(book.shelf === shelf && shelf.books == [book])
        }
    }
}
