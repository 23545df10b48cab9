import Foundation
import Testing
@testable import PersistenceKit

/// Query generations: a pinned context reads the store as of its pin until it saves,
/// merges, refreshes all objects, resets or unpins.
@Suite("Query generations")
struct QueryGenerationTests {
    /// Titles and ranks of every memo `context` fetches, sorted by title.
    static func memos(_ context: NSManagedObjectContext) throws -> [String] {
        let request = NSFetchRequest<Memo>(entityName: "Memo")
        request.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
        return try context.fetch(request).map { "\($0.title):\($0.rank)" }
    }

    /// In a context of its own: renames `ids[0]`'s memo, deletes `ids[1]`'s, inserts "z".
    static func changeElsewhere(_ ids: [NSManagedObjectID], _ container: NSPersistentContainer) throws {
        let other = container.newBackgroundContext()
        try other.performAndWait {
            (try other.existingObject(with: ids[0]) as? Memo)?.rank = 100
            other.delete(try other.existingObject(with: ids[1]))
            let z = Memo(context: other)
            z.title = "z"
            try other.save()
        }
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func aPinnedContextKeepsReadingTheOldRowsAndFaults(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, tracking: false)
        let ids = try HistorySupport.insert(["a", "b", "c"], in: container)
        let pinned = container.newBackgroundContext()
        let fault = try pinned.performAndWait {
            #expect(pinned.queryGenerationToken == nil)
            try pinned.setQueryGenerationFrom(.current)
            let token = try #require(pinned.queryGenerationToken)
            #expect(token != NSQueryGenerationToken.current)
            return pinned.object(with: ids[0]) as? Memo  // a fault, not fired yet
        }
        try Self.changeElsewhere(ids, container)
        try pinned.performAndWait {
            #expect(fault?.isFault == true)
            #expect(fault?.rank == 0, "the fault fires against the pinned generation")
            #expect(try Self.memos(pinned) == ["a:0", "b:1", "c:2"])
            #expect(try pinned.count(for: NSFetchRequest<Memo>(entityName: "Memo")) == 3)
            let b = try #require(try pinned.existingObject(with: ids[1]) as? Memo)
            #expect(b.title == "b", "a row deleted since the pin is still there")
            let filtered = NSFetchRequest<Memo>(entityName: "Memo")
            filtered.predicate = NSPredicate(format: "rank >= 100")
            #expect(try pinned.fetch(filtered).isEmpty, "indexed fetch of the pinned generation")
        }
        // An unpinned context sees the store as it is.
        let fresh = container.newBackgroundContext()
        #expect(try fresh.performAndWait { try Self.memos(fresh) } == ["a:100", "c:2", "z:0"])
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func unpinningReadsTheStoreAsItIs(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, tracking: false)
        let ids = try HistorySupport.insert(["a", "b", "c"], in: container)
        let pinned = container.newBackgroundContext()
        try pinned.performAndWait { try pinned.setQueryGenerationFrom(.current) }
        try Self.changeElsewhere(ids, container)
        try pinned.performAndWait {
            #expect(try Self.memos(pinned).count == 3)
            try pinned.setQueryGenerationFrom(nil)
            #expect(pinned.queryGenerationToken == nil)
            pinned.refreshAllObjects()
            #expect(try Self.memos(pinned) == ["a:100", "c:2", "z:0"])
        }
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func savingMergingRefreshingAllAndResettingMoveThePinToTheCurrentGeneration(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, tracking: false)
        let ids = try HistorySupport.insert(["a", "b", "c"], in: container)
        let pinned = container.newBackgroundContext()

        // Save.
        try pinned.performAndWait { try pinned.setQueryGenerationFrom(.current) }
        try Self.changeElsewhere(ids, container)
        try pinned.performAndWait {
            let before = pinned.queryGenerationToken
            let c = try #require(try pinned.existingObject(with: ids[2]) as? Memo)
            c.body = "saved here"
            try pinned.save()
            #expect(pinned.queryGenerationToken != nil && pinned.queryGenerationToken != before, "still pinned, to a new generation")
            #expect(try Self.memos(pinned) == ["a:100", "c:2", "z:0"])
        }

        // Merge.
        let other = container.newBackgroundContext()
        let note = try other.performAndWait {
            let observer = TestNotificationBox()
            let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: other, queue: nil) { n in
                observer.set(n)
            }
            defer { NotificationCenter.default.removeObserver(token) }
            let y = Memo(context: other)
            y.title = "y"
            try other.save()
            return try #require(observer.get())
        }
        try pinned.performAndWait { () throws -> Void in
            #expect(try Self.memos(pinned).count == 3, "pinned before the merge")
            pinned.mergeChanges(fromContextDidSave: note)
            #expect(try Self.memos(pinned) == ["a:100", "c:2", "y:0", "z:0"])
        }

        // Refresh all.
        try HistorySupport.insert(["x"], in: container)
        try pinned.performAndWait { () throws -> Void in
            #expect(try Self.memos(pinned).count == 4)
            pinned.refreshAllObjects()
            #expect(try Self.memos(pinned).count == 5)
        }

        // Reset.
        try HistorySupport.insert(["w"], in: container)
        try pinned.performAndWait { () throws -> Void in
            #expect(try Self.memos(pinned).count == 5)
            pinned.reset()
            #expect(try Self.memos(pinned).count == 6)
            #expect(pinned.queryGenerationToken != nil)
        }
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func anotherContextCanPinTheSameGeneration(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, tracking: false)
        let ids = try HistorySupport.insert(["a", "b"], in: container)
        let first = container.newBackgroundContext()
        let token = try first.performAndWait {
            try first.setQueryGenerationFrom(.current)
            return try #require(first.queryGenerationToken)
        }
        try Self.changeElsewhere(ids, container)
        let second = container.newBackgroundContext()
        try second.performAndWait {
            try second.setQueryGenerationFrom(token)
            #expect(second.queryGenerationToken == token)
            #expect(try Self.memos(second) == ["a:0", "b:1"])
        }
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func aPinnedGenerationCannotBeWrittenThrough(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, tracking: false)
        try HistorySupport.insert(["a"], in: container)
        let store = try #require(container.persistentStoreCoordinator.persistentStores.first)
        let snapshot = try store.makeQueryGenerationSnapshot()
        #expect(throws: (any Error).self) { _ = try snapshot.commit(StoreTransaction()) }
        #expect(throws: (any Error).self) { _ = try snapshot.allocatePrimaryKeys(entity: 0, count: 1) }
        #expect(try snapshot.countRows(entity: 0, filter: nil) + snapshot.countRows(entity: 1, filter: nil) == 1)
    }

    @Test func aPinnedFileStoreGenerationOutlivesACompaction() throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(.file, at: folder.storeURL, tracking: false)
        let ids = try HistorySupport.insert((0..<200).map { "memo \($0)" }, in: container)
        let pinned = container.newBackgroundContext()
        try pinned.performAndWait { try pinned.setQueryGenerationFrom(.current) }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            for id in ids { other.delete(try other.existingObject(with: id)) }
            try other.save()
        }
        let store = try #require(FSSupport.fileStores(container).first)
        try store.compact()
        try pinned.performAndWait { () throws -> Void in
            #expect(try Self.memos(pinned).count == 200)
            #expect((try pinned.existingObject(with: ids[199]) as? Memo)?.title == "memo 199")
        }
        try FSSupport.close(container)
        try pinned.performAndWait { () throws -> Void in #expect(try Self.memos(pinned).count == 200, "the generation outlives the store's close") }
    }

    @Test func storesWithoutGenerationsAndChildContextsRefuseToPin() throws {
        let model = try HistorySupport.model()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(StoreWithoutHistory(base: InMemoryStore(model: model)))
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        let error = context.performAndWait { #expect(throws: CoreDataError.self) { try context.setQueryGenerationFrom(.current) } }
        #expect(error?.code == .persistentStoreOperation)

        let container = try HistorySupport.container(.inMemory, at: URL(fileURLWithPath: "/dev/null"), tracking: false)
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = container.newBackgroundContext()
        let childError = child.performAndWait { #expect(throws: CoreDataError.self) { try child.setQueryGenerationFrom(.current) } }
        #expect(childError?.code == .persistentStoreOperation)
    }
}

/// Holds the notification an observer saw (set and read on the saving context's queue).
final class TestNotificationBox: @unchecked Sendable {
    // @unchecked Sendable: set by an observer that runs synchronously inside `save()` on the
    // queue that later reads it, so the two accesses never overlap.
    private var note: Notification?
    func set(_ n: Notification) { note = n }
    func get() -> Notification? { note }
}
