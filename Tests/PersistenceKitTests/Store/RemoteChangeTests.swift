import Foundation
import Synchronization
import Testing

@testable import PersistenceKit

/// A store over rows another "process" also writes: a wrapper of a shared in-memory store
/// that reports, when told, the rows changed behind its coordinator's back.
final class RemoteReportingStore: ForwardingStore, RemoteChangeReporting {
    let base: InMemoryStore
    private let handlers = Mutex<[@Sendable (StoreRemoteChanges) -> Bool]>([])

    init(base: InMemoryStore) { self.base = base }

    func addRemoteChangeHandler(_ handler: @escaping @Sendable (StoreRemoteChanges) -> Bool) {
        handlers.withLock { $0.append(handler) }
    }

    /// Calls the handlers, as a store does when it learns of another process's commit;
    /// drops those that decline. Returns how many are left.
    @discardableResult
    func report(_ changes: StoreRemoteChanges) -> Int {
        let current = handlers.withLock { $0 }
        let kept = current.filter { $0(changes) }
        handlers.withLock { $0 = kept }
        return kept.count
    }
}

@Suite("Remote changes: other processes' commits reach merging contexts")
struct RemoteChangeTests {
    /// Two coordinators over one set of rows, as two processes over one database.
    func twoCoordinators() throws -> (NSPersistentStoreCoordinator, RemoteReportingStore, NSPersistentStoreCoordinator, RemoteReportingStore) {
        let model = try Fixtures.model()
        let base = InMemoryStore(model: model)
        let a = NSPersistentStoreCoordinator(managedObjectModel: model)
        let storeA = RemoteReportingStore(base: base)
        try a.addPersistentStore(storeA)
        let b = NSPersistentStoreCoordinator(managedObjectModel: model)
        let storeB = RemoteReportingStore(base: base)
        try b.addPersistentStore(storeB)
        return (a, storeA, b, storeB)
    }

    @Test("Reported inserts, updates and deletes are merged, then NSPersistentStoreRemoteChange is posted")
    func mergesReportedChanges() async throws {
        let (a, _, b, storeB) = try twoCoordinators()
        let writer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        writer.persistentStoreCoordinator = a
        let reader = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        reader.persistentStoreCoordinator = b
        reader.automaticallyMergesChangesFromParent = true
        let (kept, gone) = try await writer.perform {
            let k = Book(context: writer)
            k.title = "kept"
            let g = Book(context: writer)
            g.title = "gone"
            try writer.save()
            return (k.objectID, g.objectID)
        }
        try await reader.perform {
            #expect((try reader.existingObject(with: kept) as? Book)?.title == "kept")
            _ = try reader.existingObject(with: gone)
        }
        let changed = try await writer.perform {
            (try writer.existingObject(with: kept) as? Book)?.title = "changed"
            writer.delete(try writer.existingObject(with: gone))
            let n = Book(context: writer)
            n.title = "new"
            try writer.save()
            return n.objectID
        }
        let posted = Mutex(0)
        let observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: b, queue: nil) { note in
            #expect(note.userInfo?[NSStoreUUIDKey] as? String == storeB.identifier)
            posted.withLock { $0 += 1 }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let inserted = try #require(changed.rowID)
        let updated = try #require(kept.rowID)
        let deleted = try #require(gone.rowID)
        storeB.report(StoreRemoteChanges(inserted: [inserted], updated: [updated], deleted: [deleted]))
        #expect(posted.withLock { $0 } == 1)
        await reader.perform {
            #expect((reader.registeredObject(for: kept) as? Book)?.title == "changed")
            let g = reader.registeredObject(for: gone)
            #expect(g == nil || g?.isDeleted == true)
            #expect(reader.registeredObject(for: changed) != nil)
        }
    }

    @Test("A coordinator that is gone declines further reports, and its store drops the handler")
    func goneCoordinatorDeclines() throws {
        let model = try Fixtures.model()
        let store = RemoteReportingStore(base: InMemoryStore(model: model))
        do {
            let c = NSPersistentStoreCoordinator(managedObjectModel: model)
            try c.addPersistentStore(store)
            #expect(store.report(StoreRemoteChanges(updated: [StoreRowID(entity: 0, primaryKey: 1)])) == 1)
        }
        #expect(store.report(StoreRemoteChanges(updated: [StoreRowID(entity: 0, primaryKey: 1)])) == 0)
    }
}
