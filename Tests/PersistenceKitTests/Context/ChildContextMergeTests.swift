import Foundation
import Testing
@testable import PersistenceKit

/// Counts notifications of one name from one context (thread-safe).
private final class NotificationCounter: Sendable {
    let objects = Lock<[Set<NSManagedObjectID>]>([])
    let token: Lock<(any NSObjectProtocol)?> = Lock(nil)

    init(_ name: Notification.Name, from context: NSManagedObjectContext, key: String) {
        let t = NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { [objects] note in
            let set = (note.userInfo?[key] as? Set<NSManagedObject>) ?? []
            let ids = Set(set.map(\.objectID))
            objects.withLock { $0.append(ids) }
        }
        token.withLock { $0 = t }
    }

    deinit { if let t = token.withLock({ $0 }) { NotificationCenter.default.removeObserver(t) } }
}

@Suite("Child contexts: queues, merges, notifications") struct ChildContextMergeTests {
    @MainActor @Test func aPrivateChildOfTheViewContext() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = view
        try await child.perform {
            Book(context: child).title = "from a private child"
            try child.save()
        }
        let book = try #require(view.insertedObjects.first as? Book)
        #expect(book.title == "from a private child" && book.objectID.isTemporaryID)
        try view.save()
        #expect(!book.objectID.isTemporaryID)
    }

    @MainActor @Test func aMainQueueChildOfAPrivateParent() async throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let child = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        child.parent = parent
        Book(context: child).title = "from the main queue"
        try child.save()
        let titles = try await parent.perform {
            try parent.save()
            return parent.registeredObjects.compactMap { ($0 as? Book)?.title }
        }
        #expect(titles == ["from the main queue"])
        let reader = container.newBackgroundContext()
        let count = try await reader.perform { try reader.count(for: Book.fetchRequest()) }
        #expect(count == 1)
    }

    @Test func aChildMergesWhatASiblingPushesAndWhatTheParentSaves() async throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let id = try parent.performAndWait {
            let book = Book(context: parent)
            book.title = "v1"
            try parent.save()
            return book.objectID
        }
        let watcher = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        watcher.parent = parent
        watcher.automaticallyMergesChangesFromParent = true
        #expect(watcher.automaticallyMergesChangesFromParent)
        let first = await watcher.perform { (watcher.object(with: id) as! Book).title }
        #expect(first == "v1")
        let writer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        writer.parent = parent
        try writer.performAndWait {
            (writer.object(with: id) as! Book).title = "v2"
            try writer.save()
        }
        // The merge was enqueued on the watcher's queue before the save returned.
        let second = await watcher.perform { (watcher.object(with: id) as! Book).title }
        #expect(second == "v2")
        // The parent's merge of another context's save reaches the watcher too (once the
        // parent saved what it held: a merge keeps a changed object's own values).
        try parent.performAndWait { try parent.save() }
        parent.automaticallyMergesChangesFromParent = true
        let other = container.newBackgroundContext()
        try other.performAndWait {
            (other.object(with: id) as! Book).title = "v3"
            try other.save()
        }
        await parent.perform {}  // the parent's merge, which forwards to the watcher
        let third = await watcher.perform { (watcher.object(with: id) as! Book).title }
        #expect(third == "v3")
    }

    @Test func aChildWithoutAutomaticMergingKeepsWhatItRead() async throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let id = try parent.performAndWait {
            let book = Book(context: parent)
            book.title = "v1"
            try parent.save()
            return book.objectID
        }
        let reader = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        reader.parent = parent
        _ = reader.performAndWait { (reader.object(with: id) as! Book).title }
        let writer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        writer.parent = parent
        try writer.performAndWait {
            (writer.object(with: id) as! Book).title = "v2"
            try writer.save()
        }
        let title = await reader.perform { (reader.object(with: id) as! Book).title }
        #expect(title == "v1")
    }

    @Test func aChildsSavePostsItsDidSaveAndTheParentItsObjectsDidChange() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = parent
        let didSave = NotificationCounter(.NSManagedObjectContextDidSave, from: child, key: NSInsertedObjectsKey)
        let didChange = NotificationCounter(.NSManagedObjectContextObjectsDidChange, from: parent, key: NSInsertedObjectsKey)
        let parentSaves = NotificationCounter(.NSManagedObjectContextDidSave, from: parent, key: NSInsertedObjectsKey)
        let id = try child.performAndWait {
            let book = Book(context: child)
            book.title = "announced"
            try child.save()
            return book.objectID
        }
        #expect(didSave.objects.withLock { $0 } == [[id]])
        #expect(didChange.objects.withLock { $0.map(\.count) } == [1], "the parent announces the arrival once")
        #expect(parentSaves.objects.withLock { $0 }.isEmpty, "the parent saved nothing")
    }

    @Test func aChildHasNoCoordinatorOfItsOwnAndCannotTakeOne() throws {
        let container = try Fixtures.container()
        let plain = container.newBackgroundContext()
        #expect(plain.parent == nil)
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = plain
        #expect(child.persistentStoreCoordinator === container.persistentStoreCoordinator)
        #expect(child.parent?.parent == nil)
    }
}
