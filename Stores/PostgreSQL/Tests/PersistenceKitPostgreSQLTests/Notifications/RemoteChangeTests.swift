import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Synchronization
import Testing

/// Another writer's commits reach this coordinator's merging contexts through NOTIFY.
@Suite("PostgreSQL store: other writers' saves are merged", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct RemoteChangeTests {
    @Test("Inserts, updates and deletes saved through another coordinator reach a merging context")
    func mergesRemoteSaves() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let here = try await TestServer.container(model: model, schema: schema)
        let there = try await TestServer.container(model: model, schema: schema)
        let waiter = RemoteChangeWaiter(here.persistentStoreCoordinator)
        let local = here.newBackgroundContext()
        local.automaticallyMergesChangesFromParent = true
        let (kept, gone) = try await local.perform {
            let a = Book(context: local)
            a.title = "kept"
            let b = Book(context: local)
            b.title = "gone"
            try local.save()
            return (a.objectID.uriRepresentation(), b.objectID.uriRepresentation())
        }
        // Nothing of this coordinator's own save comes back as a remote change.
        let remote = there.newBackgroundContext()
        try await remote.perform {
            let a = try #require(try remote.object(at: kept, as: Book.self))
            a.title = "changed elsewhere"
            a.pages = 42
            remote.delete(try #require(try remote.object(at: gone, as: Book.self)))
            let d = Book(context: remote)
            d.title = "new elsewhere"
            try remote.save()
        }
        #expect(await waiter.wait(for: 1), "no remote change arrived within 10 s")
        try await local.perform {
            let a = try #require(local.registered(at: kept) as? Book)
            #expect(a.title == "changed elsewhere")
            #expect(a.pages == 42)
            let b = local.registered(at: gone)
            #expect(b == nil || b?.isDeleted == true)
            let r = NSFetchRequest<Book>(entityName: "Book")
            r.sortKeys = [SortKey("title")]
            #expect(try local.fetch(r).map(\.title) == ["changed elsewhere", "new elsewhere"])
        }
        #expect(waiter.received == 1)
    }

    @Test("A large commit's notification is split into parts and put together again")
    func largeCommit() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let here = try await TestServer.container(model: model, schema: schema)
        let there = try await TestServer.container(model: model, schema: schema, listens: false)
        let waiter = RemoteChangeWaiter(here.persistentStoreCoordinator)
        let local = here.newBackgroundContext()
        local.automaticallyMergesChangesFromParent = true
        let inserted = MergedIDs()
        let observer = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didMergeChangesObjectIDsNotification, object: local, queue: nil
        ) { note in
            let ids = (note.userInfo?[NSInsertedObjectIDsKey] as? Set<NSManagedObjectID>) ?? []
            inserted.value.withLock { $0 += ids.map { $0.uriRepresentation() } }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let remote = there.newBackgroundContext()
        try await remote.perform {
            for i in 0..<5_000 {
                let b = Book(context: remote)
                b.title = "b\(i)"
            }
            try remote.save()
        }
        #expect(await waiter.wait(for: 1))
        await local.perform {}
        #expect(inserted.value.withLock { Set($0).count } == 5_000)
    }
}

/// IDs collected by a notification observer.
final class MergedIDs: Sendable {
    let value = Mutex<[URL]>([])
}
