import Foundation
import Testing
@testable import PersistenceKit

/// Undo and redo of relationship changes restore both sides of every link.
@Suite("Undo of relationship changes") struct UndoRelationshipTests {
    @Test func toOneChangeRestoresBothInverses() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = try #require(context.existingObject(with: seeded.a) as? Book)
            let old = try #require(book.shelf)
            let new = Shelf(context: context)
            try context.save()
            context.undoManager = UndoManager()
            book.shelf = new
            #expect(!old.books.contains(book) && new.books.contains(book))
            context.undo()
            #expect(book.shelf === old && old.books.contains(book) && new.books.isEmpty)
            context.redo()
            #expect(book.shelf === new && !old.books.contains(book) && new.books == [book])
        }
    }

    @Test func oneToOneMoveGivesTheFormerPartnerBackItsLink() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            context.undoManager = UndoManager()
            let first = Book(context: context)
            let second = Book(context: context)
            let cover = Cover(context: context)
            cover.book = first
            context.processPendingChanges()
            context.undoManager?.removeAllActions()
            second.cover = cover  // takes the cover from `first`
            #expect(first.cover == nil && cover.book === second)
            context.undo()
            #expect(first.cover === cover && cover.book === first && second.cover == nil)
        }
    }

    @Test func toManyAddAndRemoveRestoreTheInverse() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let a = try #require(context.existingObject(with: seeded.a) as? Book)
            let b = try #require(context.existingObject(with: seeded.b) as? Book)
            let author = Author(context: context)
            try context.save()
            let manager = UndoManager()
            context.undoManager = manager

            manager.beginUndoGrouping()
            author.books.insert(a)
            author.books.insert(b)
            manager.endUndoGrouping()
            manager.beginUndoGrouping()
            author.books.remove(a)
            manager.endUndoGrouping()
            #expect(author.books == [b] && a.authors.isEmpty && b.authors == [author])

            context.undo()  // the removal
            #expect(author.books == [a, b] && a.authors == [author])
            context.undo()  // the additions
            #expect(author.books.isEmpty && a.authors.isEmpty && b.authors.isEmpty)
            #expect(!context.hasChanges)
            context.redo()
            #expect(author.books == [a, b] && b.authors == [author])
            context.redo()
            #expect(author.books == [b] && a.authors.isEmpty)
        }
    }
}
