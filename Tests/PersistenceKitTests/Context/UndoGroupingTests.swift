import Foundation
import Testing
@testable import PersistenceKit

/// How changes are grouped for undo: explicit groups, and one group per `perform` block.
@Suite("Undo groups") struct UndoGroupingTests {
    @Test func anExplicitGroupIsUndoneAsOneAndNestedGroupsJoinIt() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let cover = Cover(context: context)
            try? context.save()
            let manager = UndoManager()
            context.undoManager = manager
            manager.beginUndoGrouping()
            cover.color = "red"
            manager.beginUndoGrouping()
            #expect(manager.groupingLevel == 2)
            cover.color = "green"
            manager.endUndoGrouping()
            cover.color = "blue"
            manager.endUndoGrouping()
            #expect(manager.groupingLevel == 0)
            context.undo()
            #expect(cover.color == "white" && !manager.canUndo)
        }
    }

    @Test func eachPerformBlockIsOneGroup() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id = try await context.perform {
            context.undoManager = UndoManager()
            let cover = Cover(context: context)
            try context.save()
            context.undoManager?.removeAllActions()
            return cover.objectID
        }
        for color in ["red", "green"] {
            await context.perform {
                let cover = context.object(with: id) as? Cover
                cover?.color = color
                cover?.book = Book(context: context)
            }
        }
        await context.perform {
            let cover = context.object(with: id) as? Cover
            #expect(context.undoManager?.groupingLevel == 0)
            context.undo()
            #expect(cover?.color == "red" && context.insertedObjects.count == 1)
            context.undo()
            #expect(cover?.color == "white" && cover?.book == nil && !context.hasChanges)
            #expect(context.undoManager?.canUndo == false)
        }
    }

    @Test func undoClosesTheGroupLeftOpenByPerformAndWait() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let manager = UndoManager()
            context.undoManager = manager
            let book = Book(context: context)
            book.title = "Open"
            #expect(manager.groupingLevel == 1 && manager.canUndo)
            context.undo()
            #expect(manager.groupingLevel == 0 && context.insertedObjects.isEmpty)
        }
    }

    @Test func withoutGroupsByEventAGroupMustBeOpen() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let manager = UndoManager()
            manager.groupsByEvent = false
            context.undoManager = manager
            manager.beginUndoGrouping()
            let book = Book(context: context)
            book.pages = 3
            context.processPendingChanges()  // processing does not close an explicit group
            #expect(manager.groupingLevel == 1)
            manager.endUndoGrouping()
            context.undo()
            #expect(context.insertedObjects.isEmpty)
        }
    }

    @Test func levelsOfUndoDropsTheOldestGroups() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let cover = Cover(context: context)
            try? context.save()
            let manager = UndoManager()
            manager.levelsOfUndo = 2
            context.undoManager = manager
            for color in ["red", "green", "blue"] {
                manager.beginUndoGrouping()
                cover.color = color
                manager.endUndoGrouping()
            }
            context.undo()
            context.undo()
            #expect(cover.color == "red" && !manager.canUndo)
        }
    }
}

/// The view context closes its group when the main queue's turn ends, as a run-loop turn
/// ends Core Data's.
@Suite("Undo groups of the view context") struct ViewContextUndoGroupingTests {
    @MainActor @Test func eachMainQueueTurnIsOneGroup() async throws {
        let container = try Fixtures.container()
        let context = container.viewContext
        let manager = UndoManager()
        context.undoManager = manager
        let book = Book(context: context)
        book.title = "First turn"
        #expect(manager.groupingLevel == 1)
        await Self.nextMainQueueTurn()
        #expect(manager.groupingLevel == 0 && manager.canUndo)
        book.title = "Second turn"
        await Self.nextMainQueueTurn()
        context.undo()
        #expect(book.title == "First turn" && context.insertedObjects == [book])
        context.undo()
        #expect(context.insertedObjects.isEmpty)
    }

    /// Returns after the work the main queue holds now has run.
    @MainActor static func nextMainQueueTurn() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async { done.resume() }
        }
    }
}
