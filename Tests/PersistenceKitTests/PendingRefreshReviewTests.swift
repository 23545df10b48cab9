import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

/// Records, for each objects-did-change / did-merge of one context, the IDs under each key.
private final class KeyLog: Sendable {
    private let notes = TestMutex<[(name: Notification.Name, ids: [String: Set<NSManagedObjectID>])]>([])
    private let tokens = TestMutex<[any NSObjectProtocol]>([])
    init(_ context: NSManagedObjectContext, _ names: [Notification.Name] = [.NSManagedObjectContextObjectsDidChange]) {
        let t = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { [notes] note in
                var ids: [String: Set<NSManagedObjectID>] = [:]
                for (k, v) in note.userInfo ?? [:] {
                    guard let k = k as? String else { continue }
                    if let s = v as? Set<NSManagedObject> { ids[k] = Set(s.map(\.objectID)) }
                    if let s = v as? Set<NSManagedObjectID> { ids[k] = s }
                }
                notes.withLock { $0.append((name, ids)) }
            }
        }
        tokens.withLock { $0 = t }
    }
    var all: [[String: Set<NSManagedObjectID>]] { notes.withLock { $0.map(\.ids) } }
    func named(_ n: Notification.Name) -> [[String: Set<NSManagedObjectID>]] { notes.withLock { $0.filter { $0.name == n }.map(\.ids) } }
    deinit { for t in tokens.withLock({ $0 }) { NotificationCenter.default.removeObserver(t) } }
}

/// From an adversarial review of coalesced refresh announcements and of merges' did-merge
/// contents: each test failed before its fix.
@Suite struct PendingRefreshReviewTests {
    /// Refresh, then delete before processing: announced as deleted only.
    @Test func refreshedThenDeletedIsNotAlsoUpdated() throws {
        let context = try Fixtures.container().newBackgroundContext()
        let id = try context.performAndWait {
            let b = Book(context: context)
            try context.save()
            return b.objectID
        }
        let log = KeyLog(context)
        try context.performAndWait { () throws in
            let b = try #require(context.registeredObject(for: id))
            context.refresh(b, mergeChanges: true)
            context.delete(b)
            context.processPendingChanges()
        }
        try #require(log.all.count == 1)
        #expect(log.all[0][NSDeletedObjectsKey] == [id])
        #expect(log.all[0][NSUpdatedObjectsKey] == nil, "deleted object also listed as updated")
    }

    /// Same through a cascade, and through refreshAllObjects() with an unannounced deletion.
    @Test func cascadeAndRefreshAllWithPendingDeletion() throws {
        let context = try Fixtures.container().newBackgroundContext()
        let (shelfID, bookID) = try context.performAndWait {
            let s = Shelf(context: context)
            let b = Book(context: context)
            b.shelf = s
            try context.save()
            return (s.objectID, b.objectID)
        }
        let log = KeyLog(context)
        try context.performAndWait { () throws in
            context.refresh(try #require(context.registeredObject(for: bookID)), mergeChanges: false)
            context.delete(try #require(context.registeredObject(for: shelfID)))
            context.processPendingChanges()  // cascade deletes the book
        }
        try #require(log.all.count == 1)
        #expect(log.all[0][NSDeletedObjectsKey] == [shelfID, bookID])
        #expect(log.all[0][NSUpdatedObjectsKey] == nil, "cascade-deleted book also listed as updated")

        let context2 = try Fixtures.container().newBackgroundContext()
        let id2 = try context2.performAndWait {
            let b = Book(context: context2)
            try context2.save()
            return b.objectID
        }
        let log2 = KeyLog(context2)
        try context2.performAndWait { () throws in
            context2.delete(try #require(context2.registeredObject(for: id2)))
            context2.refreshAllObjects()
        }
        try #require(log2.all.count == 1)
        #expect(log2.all[0][NSDeletedObjectsKey] == [id2])
        #expect(log2.all[0][NSUpdatedObjectsKey] == nil, "refreshAllObjects: deleted object also listed as updated")
    }

    /// Main-actor code with the view context, outside `perform`: the main queue processes
    /// pending changes on its next turn, as Core Data's does at the end of a run-loop turn.
    @MainActor @Test func viewContextRefreshOnMainActorIsAnnounced() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let b = Book(context: view)
        try view.save()
        let log = KeyLog(view)
        view.refresh(b, mergeChanges: false)
        // The processing was enqueued on the main queue by the refresh; a block enqueued after
        // it runs after it.
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in DispatchQueue.main.async { c.resume() } }
        #expect(log.all.count == 1, "refresh on the view context from main-actor code never announced")
    }

    /// A pending refresh of an object a merge then deletes keeps the invalidated object alive.
    @Test func pendingRefreshDoesNotKeepMergedDeletionAlive() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let b = Book(context: context)
            try context.save()
            return b.objectID
        }
        weak var weakBook: NSManagedObject?
        try context.performAndWait { () throws in
            let b = try #require(context.registeredObject(for: id))
            weakBook = b
            context.refresh(b, mergeChanges: false)
            context.mergeChanges(fromContextDidSave: Notification(name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSDeletedObjectIDsKey: Set([id])]))
        }
        #expect(weakBook == nil, "invalidated object still held by unprocessed.refreshed")
    }

    /// A pending refresh, then a merge updating the same object: announced once as refreshed.
    @Test func mergeOverPendingRefreshAnnouncesOnce() throws {
        let container = try Fixtures.container()
        let reader = container.newBackgroundContext()
        let writer = container.newBackgroundContext()
        let id = try writer.performAndWait {
            let b = Book(context: writer)
            try writer.save()
            return b.objectID
        }
        try reader.performAndWait { () throws in _ = try #require(try reader.existingObject(with: id) as? Book).title }
        let log = KeyLog(reader)
        try writer.performAndWait { () throws in
            try #require(try writer.existingObject(with: id) as? Book).title = "x"
            try writer.save()
        }
        try reader.performAndWait { () throws in
            let b = try #require(reader.registeredObject(for: id) as? Book)
            reader.refresh(b, mergeChanges: true)
            _ = b.title  // loaded again
            reader.mergeChanges(fromContextDidSave: Notification(name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSUpdatedObjectIDsKey: Set([id])]))
            reader.processPendingChanges()
        }
        #expect(log.all.filter { $0[NSRefreshedObjectsKey] == [id] }.count == 1, "\(log.all)")
    }
}

/// A refresh-only processing keeps the announced-insertions set the next save reuses.
@Test func aRefreshOnlyProcessingKeepsTheAnnouncedInsertions() throws {
    let context = try Fixtures.container().newBackgroundContext()
    try context.performAndWait { () throws in
        let saved = Book(context: context)
        try context.save()
        for _ in 0..<3 { _ = Book(context: context) }
        context.processPendingChanges()
        #expect(context.announcedInsertions != nil)
        context.refresh(saved, mergeChanges: false)
        context.processPendingChanges()
        #expect(context.announcedInsertions != nil, "cache dropped by a refresh-only processing")
    }
}
