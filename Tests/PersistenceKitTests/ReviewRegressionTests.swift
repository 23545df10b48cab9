import Foundation
import Testing
@testable import PersistenceKit

/// Regressions found in review; each test failed (or crashed) before its fix.
@Suite struct ReviewRegressionTests {
    /// Saves one book and returns its ID.
    static func savedBook(_ container: NSPersistentContainer, title: String) throws -> NSManagedObjectID {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let book = Book(context: context)
            book.title = title
            try context.save()
            return book.objectID
        }
    }

    @Test func aMergedDeletionOfAnObjectPendingDeletionDoesNotCrash() async throws {
        let container = try Fixtures.container()
        let id = try Self.savedBook(container, title: "gone")
        let a = container.newBackgroundContext()
        a.performAndWait {
            a.automaticallyMergesChangesFromParent = true
            a.delete(a.object(with: id))  // pending: delete rules not run yet
        }
        let merged = MergeSignal(context: a)
        let b = container.newBackgroundContext()
        try b.performAndWait {
            b.delete(b.object(with: id))
            try b.save()
        }
        await merged.wait()
        let count = try await a.perform {
            a.processPendingChanges()
            try a.save()
            return try a.count(for: Book.fetchRequest())
        }
        #expect(count == 0)
    }

    @Test func refreshWithoutMergingDiscardsAPendingDeletion() throws {
        let container = try Fixtures.container()
        let id = try Self.savedBook(container, title: "kept")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = context.object(with: id)
            context.delete(book)
            context.processPendingChanges()
            context.refresh(book, mergeChanges: false)
            #expect(!book.isDeleted)
            #expect(context.deletedObjects.isEmpty)
            try context.save()
            #expect(try context.count(for: Book.fetchRequest()) == 1)
        }
    }

    @Test func undeletingAnObjectKeepsItsEarlierEdits() throws {
        let container = try Fixtures.container()
        let id = try Self.savedBook(container, title: "old")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = try #require(try context.existingObject(with: id) as? Book)
            book.title = "new"
            context.delete(book)
            context.insert(book)
            #expect(book.isUpdated)
            try context.save()
        }
        let check = container.newBackgroundContext()
        let title = try check.performAndWait { (try check.existingObject(with: id) as? Book)?.title }
        #expect(title == "new")
    }

    @Test func anInsertedThenDeletedObjectStaysReadable() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            book.title = "draft"
            context.delete(book)
            context.processPendingChanges()
            #expect(book.managedObjectContext == nil)
            #expect(book.title == "draft")
            #expect(context.insertedObjects.isEmpty && context.deletedObjects.isEmpty)
        }
    }
}

/// Resolves once `context` posts its first did-merge notification.
final class MergeSignal: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched under `lock`.
    private let lock = NSLock()
    private var state: (fired: Bool, waiter: CheckedContinuation<Void, Never>?) = (false, nil)
    private var token: (any NSObjectProtocol)?

    init(context: NSManagedObjectContext) {
        token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, queue: nil
        ) { [weak self] _ in self?.fire() }
    }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }

    private func fire() {
        lock.lock()
        let waiter = state.waiter
        state = (true, nil)
        lock.unlock()
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            lock.lock()
            if state.fired {
                lock.unlock()
                c.resume()
            } else {
                state.waiter = c
                lock.unlock()
            }
        }
    }
}
