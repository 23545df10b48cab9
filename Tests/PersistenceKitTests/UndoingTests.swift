import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

/// Changes book `id` in a separate context and saves.
private func externalEdit(_ container: NSPersistentContainer, _ id: NSManagedObjectID, title: String? = nil, pages: Int64? = nil)
    async throws
{
    let ctx = container.newBackgroundContext()
    try await ctx.perform {
        let book = try #require(try ctx.existingObject(with: id) as? Book)
        if let title { book.title = title }
        if let pages { book.pages = pages }
        try ctx.save()
    }
}

@Suite struct UndoingTests {
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

    // MARK: refresh

    @Test func refreshWithoutMergeDiscardsChangesAndLoadsStoreValues() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            a.title = "Mine"
            #expect(a.isUpdated)
        }
        try await externalEdit(container, ids.a, pages: 555)
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            ctx.refresh(a, mergeChanges: false)
            #expect(a.isFault)
            #expect(!a.isUpdated)
            #expect(!ctx.hasChanges)
            #expect(ctx.updatedObjects.isEmpty)
            #expect(a.title == "A")
            #expect(a.pages == 555)
            #expect(!a.isFault)
        }
    }

    @Test func refreshWithMergeKeepsChangesOnTopOfStoreValues() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            a.title = "Mine"
        }
        try await externalEdit(container, ids.a, title: "Theirs", pages: 555)
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            #expect(a.pages == 100)
            ctx.refresh(a, mergeChanges: true)
            #expect(a.title == "Mine")
            #expect(a.pages == 555)
            #expect(a.isUpdated)
            #expect(ctx.updatedObjects == [a])
            // The merged object is now based on the store's latest version: saving does not conflict.
            try ctx.save()
        }
        let check = container.newBackgroundContext()
        let state: String = try await check.perform {
            let a = try #require(try check.existingObject(with: ids.a) as? Book)
            return "\(a.title):\(a.pages)"
        }
        #expect(state == "Mine:555")
    }

    @Test func refreshWithMergeTurnsUnchangedObjectIntoFault() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            #expect(a.title == "A")
        }
        try await externalEdit(container, ids.a, title: "Theirs")
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            #expect(a.title == "A")  // stale until refreshed
            ctx.refresh(a, mergeChanges: true)
            #expect(a.isFault)
            #expect(a.title == "Theirs")
        }
    }

    @Test func refreshLeavesInsertedObjectsAlone() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        await ctx.perform {
            let fresh = Book(context: ctx)
            fresh.title = "Fresh"
            ctx.refresh(fresh, mergeChanges: false)
            #expect(fresh.isInserted)
            #expect(!fresh.isFault)
            #expect(fresh.title == "Fresh")
            #expect(ctx.insertedObjects == [fresh])
        }
    }

    @Test func refreshAllObjectsKeepsChangesAndFaultsTheRest() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            let b = try #require(try ctx.existingObject(with: ids.b) as? Book)
            a.title = "Mine"
            #expect(b.title == "B")
        }
        try await externalEdit(container, ids.a, pages: 111)
        try await externalEdit(container, ids.b, title: "B2", pages: 222)
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            let b = try #require(ctx.registeredObject(for: ids.b) as? Book)
            let fresh = Book(context: ctx)
            fresh.title = "Fresh"
            ctx.refreshAllObjects()
            #expect(!a.isFault)
            #expect(a.isUpdated)
            #expect(b.isFault)
            #expect(!b.isUpdated)
            #expect(fresh.isInserted)
            #expect(!fresh.isFault)
            #expect(a.title == "Mine")
            #expect(a.pages == 111)
            #expect(b.title == "B2")
            #expect(b.pages == 222)
            #expect(fresh.title == "Fresh")
            #expect(ctx.updatedObjects == [a])
            #expect(ctx.insertedObjects == [fresh])
            // Identity is preserved.
            #expect(ctx.registeredObject(for: ids.a) === a)
            #expect(ctx.registeredObject(for: ids.b) === b)
        }
    }
}

/// Found in review: rolling back an insert whose deletion was still pending reported the
/// object as refreshed and turned it into a fault after invalidating it.
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
