import Foundation
import Testing
@testable import PersistenceKit

/// Undo and redo of a context's attribute and relationship changes, inserts and deletions.
@Suite("Undo of a context's changes") struct UndoTests {
    @Test func noUndoManagerByDefaultAndNilRecordsNothing() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            #expect(context.undoManager == nil)
            let book = Book(context: context)
            book.title = "Unrecorded"
            let manager = UndoManager()
            context.undoManager = manager
            context.undoManager = nil
            book.title = "Still unrecorded"
            context.delete(book)
            context.processPendingChanges()
            #expect(!manager.canUndo)
            context.undo()  // no manager: nothing happens
            #expect(book.title == "Still unrecorded")
        }
    }

    @Test func attributeChangeUndoesAndRedoes() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let manager = UndoManager()
            context.undoManager = manager
            let book = try #require(context.existingObject(with: seeded.a) as? Book)
            manager.beginUndoGrouping()
            book.title = "Renamed"
            book.pages = 101
            manager.setActionName("Rename")
            manager.endUndoGrouping()
            #expect(manager.canUndo && manager.undoActionName == "Rename")
            context.undo()
            #expect(book.title == "A" && book.pages == 100)
            #expect(manager.canRedo && !manager.canUndo && manager.redoActionName == "Rename")
            context.redo()
            #expect(book.title == "Renamed" && book.pages == 101)
            #expect(manager.canUndo && !manager.canRedo)
        }
    }

    @Test func undoingEverySinceTheSaveLeavesNoChanges() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.undoManager = UndoManager()
            let book = try #require(context.existingObject(with: seeded.a) as? Book)
            let other = try #require(context.existingObject(with: seeded.b) as? Book)
            book.title = "Changed"
            other.shelf = nil
            #expect(context.hasChanges)
            context.undo()
            #expect(book.title == "A" && other.shelf != nil)
            #expect(!context.hasChanges && context.updatedObjects.isEmpty)
            context.redo()
            let shelf = try #require(context.existingObject(with: seeded.shelf) as? Shelf)
            #expect(context.updatedObjects == [book, other, shelf] && other.shelf == nil)
        }
    }

    @Test func undoAfterSaveLeavesTheUndoneStateToSave() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.undoManager = UndoManager()
            let book = try #require(context.existingObject(with: seeded.a) as? Book)
            book.title = "Saved rename"
            try context.save()
            #expect(!context.hasChanges)
            context.undo()
            #expect(book.title == "A")
            #expect(context.hasChanges && context.updatedObjects == [book])
            try context.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let book = try #require(reader.existingObject(with: seeded.a) as? Book)
            #expect(book.title == "A")
        }
    }

    @Test func aNewChangeEmptiesTheRedoStack() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let cover = Cover(context: context)
            try? context.save()
            let manager = UndoManager()
            context.undoManager = manager
            cover.color = "red"
            context.undo()
            #expect(cover.color == "white" && manager.canRedo)
            cover.color = "blue"
            #expect(!manager.canRedo)
            context.undo()
            #expect(cover.color == "white")
        }
    }

    @Test func rollbackEmptiesTheUndoStack() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let manager = UndoManager()
            context.undoManager = manager
            let book = Book(context: context)
            book.title = "Gone"
            context.processPendingChanges()
            #expect(manager.canUndo)
            context.rollback()
            #expect(!manager.canUndo && !manager.canRedo)
            _ = Book(context: context)
            context.reset()
            #expect(!manager.canUndo)
        }
    }

    @Test func disabledRegistrationRecordsNothing() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let manager = UndoManager()
            context.undoManager = manager
            manager.disableUndoRegistration()
            let book = Book(context: context)
            book.title = "Quiet"
            manager.enableUndoRegistration()
            #expect(!manager.canUndo && manager.isUndoRegistrationEnabled)
        }
    }
}
