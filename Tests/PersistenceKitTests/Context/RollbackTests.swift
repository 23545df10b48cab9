import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

/// `rollback()` puts every object back to its saved state; `reset()` forgets every object.
@Suite("Rollback and reset of pending changes") struct RollbackTests {
    @Test func resetForgetsItAndRollbackMakesItAFaultAgain() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let gone = try #require(context.object(with: seeded.a) as? Book)
            try Fixtures.deleteInAnotherContext(seeded.a, in: container)
            _ = gone.title
            context.rollback()
            #expect(gone.isFault && !gone.isDeleted && context.deletedObjects.isEmpty)
            _ = gone.title  // still no row: deleted again
            #expect(gone.isDeleted && context.deletedObjects == [gone])
            context.reset()
            #expect(context.deletedObjects.isEmpty && !context.hasChanges)
        }
    }

    @Test func resetAndRollbackForgetInsertedObjectsAndTheirTemporaryIDs() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for forget in ["reset", "rollback"] {
                let quiet = Book(context: context)
                let read = Book(context: context)
                let id = read.objectID
                let invalidatedAll = TestMutex<[NSManagedObjectID]?>(nil)
                let token = NotificationCenter.default.addObserver(
                    forName: NSManagedObjectContext.didChangeObjectsNotification, object: context, queue: nil
                ) { note in
                    let ids = note.userInfo?[NSInvalidatedAllObjectsKey] as? [NSManagedObjectID]
                    invalidatedAll.withLock { $0 = ids }
                }
                if forget == "reset" { context.reset() } else { context.rollback() }
                NotificationCenter.default.removeObserver(token)
                #expect(context.registeredObject(for: id) == nil, "\(forget)")
                #expect(context.registeredObjects.isEmpty, "\(forget)")
                #expect(quiet.managedObjectContext == nil && read.managedObjectContext == nil, "\(forget)")
                if forget == "reset" {
                    let ids = try #require(invalidatedAll.withLock { $0 })
                    #expect(ids.count == 2 && ids.contains(id), "reset names every object it invalidated")
                }
            }
        }
    }

    /// Faults whose context was freed: reading one traps as before (not checked here), but
    /// the clock path must not crash when the context is gone and the object is kept.
    @Test func faultsHeldAcrossAResetAndRefetch() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            _ = try b.fetch(Book.fetchRequest())
            b.reset()
            _ = try b.fetch(Book.fetchRequest())
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "v2"
            try a.save()
        }
        let t: String = b.performAndWait { (b.registeredObject(for: seeded.a) as! Book).title }
        #expect(t == "v2")
    }

    // MARK: rollback

    @Test func rollbackDiscardsInsertsUpdatesAndDeletes() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            let b = try #require(try ctx.existingObject(with: ids.b) as? Book)
            let shelf = try #require(try ctx.existingObject(with: ids.shelf) as? Shelf)
            a.title = "Changed"
            a.pages = 1
            ctx.delete(b)
            let fresh = Book(context: ctx)
            fresh.title = "Fresh"
            fresh.shelf = shelf
            let freshID = fresh.objectID
            ctx.processPendingChanges()
            #expect(shelf.books == [a, fresh])

            ctx.rollback()

            #expect(!ctx.hasChanges)
            #expect(ctx.insertedObjects.isEmpty)
            #expect(ctx.updatedObjects.isEmpty)
            #expect(ctx.deletedObjects.isEmpty)
            #expect(a.title == "A")
            #expect(a.pages == 100)
            #expect(!a.isUpdated)
            #expect(!b.isDeleted)
            #expect(b.title == "B")
            #expect(b.shelf === shelf)
            #expect(shelf.books == [a, b])
            #expect(fresh.managedObjectContext == nil)
            #expect(ctx.registeredObject(for: freshID) == nil)
            #expect(try ctx.fetch(Book.fetchRequest()).count == 2)
            // Nothing to save.
            try ctx.save()
        }
        let check = container.newBackgroundContext()
        let titles: [String] = try await check.perform {
            try check.fetch(Book.fetchRequest()).map(\.title).sorted()
        }
        #expect(titles == ["A", "B"])
    }

    @Test func rollbackRestoresCascadedDeletes() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let shelf = try #require(try ctx.existingObject(with: ids.shelf) as? Shelf)
            ctx.delete(shelf)
            ctx.processPendingChanges()
            #expect(ctx.deletedObjects.count == 3)
            ctx.rollback()
            #expect(ctx.deletedObjects.isEmpty)
            #expect(!shelf.isDeleted)
            #expect(shelf.books.count == 2)
            #expect(shelf.books.allSatisfy { !$0.isDeleted && $0.shelf === shelf })
            #expect(try ctx.count(for: Book.fetchRequest()) == 2)
        }
    }

    // MARK: reset

    @Test func resetForgetsEveryObject() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            a.title = "Unsaved"
            let fresh = Book(context: ctx)
            fresh.title = "Fresh"
            #expect(ctx.registeredObjects == [a, fresh])
        }
        try await ctx.perform {
            let before = ctx.registeredObjects
            #expect(!before.isEmpty)
            ctx.reset()
            #expect(ctx.registeredObjects.isEmpty)
            #expect(!ctx.hasChanges)
            #expect(ctx.insertedObjects.isEmpty)
            #expect(ctx.updatedObjects.isEmpty)
            #expect(before.allSatisfy { $0.managedObjectContext == nil })
            #expect(ctx.registeredObject(for: ids.a) == nil)
            let again = try #require(try ctx.existingObject(with: ids.a) as? Book)
            #expect(!before.contains(again))
            #expect(again.title == "A")
            #expect(try ctx.count(for: Book.fetchRequest()) == 2)
        }
    }

    /// Rolling back an insert whose deletion is still pending only invalidates the object: it
    /// is not reported as refreshed, nor turned into a fault after being invalidated.
    @Test func rollingBackAnInsertDeletedBeforeProcessingOnlyInvalidatesIt() throws {
        let context = try Fixtures.container().newBackgroundContext()
        let seen = TestMutex<(refreshed: Int, invalidated: Int)>((0, 0))
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didChangeObjectsNotification, object: context, queue: nil
        ) { note in
            let refreshed = (note.userInfo?[NSRefreshedObjectsKey] as? Set<NSManagedObject>)?.count ?? 0
            let invalidated = (note.userInfo?[NSInvalidatedObjectsKey] as? Set<NSManagedObject>)?.count ?? 0
            seen.withLock { $0 = (refreshed, invalidated) }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        context.performAndWait {
            let book = Book(context: context)
            context.delete(book)  // not processed yet
            context.rollback()
            #expect(book.managedObjectContext == nil)
        }
        #expect(seen.withLock { $0.refreshed == 0 && $0.invalidated == 1 })
    }
}
