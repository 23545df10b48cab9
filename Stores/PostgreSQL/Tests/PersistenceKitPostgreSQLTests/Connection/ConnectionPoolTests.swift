import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Synchronization
import Testing

/// Reads borrow their own connection: a fetch does not wait behind a save whose
/// transaction is held up.
@Suite("PostgreSQL store: connection pool", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct ConnectionPoolTests {
    @Test("A fetch completes while another context's save waits inside its transaction")
    func readsDoNotWaitBehindSaves() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema, listens: false)
        let writer = container.newBackgroundContext()
        let pk = try await writer.perform {
            let b = Book(context: writer)
            b.title = "held"
            try writer.save()
            b.pages = 1
            return b.objectID.uriRepresentation().lastPathComponent.dropFirst()
        }
        let admin = try AdminConnection(url: try #require(TestServer.url))
        try admin.run("BEGIN")
        try admin.run("SELECT 1 FROM \"\(schema)\".\"Book\" WHERE \"_pk\" = \(pk) FOR UPDATE")
        let saved = Mutex(false)
        let save = Task {
            try await writer.perform { try writer.save() }
            saved.withLock { $0 = true }
        }
        // The save is inside its transaction, waiting on the row lock (deadline 10 s).
        let watcher = try AdminConnection(url: try #require(TestServer.url))
        let deadline = ContinuousClock.now + .seconds(10)
        while try watcher.column(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%\(schema)%FOR UPDATE%'"
        ).isEmpty {
            #expect(ContinuousClock.now < deadline, "the save never waited on the lock")
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let reader = container.newBackgroundContext()
        let titles = try await reader.perform { try reader.fetch(NSFetchRequest<Book>(entityName: "Book")).map(\.title) }
        #expect(titles == ["held"])
        #expect(saved.withLock { $0 } == false, "the fetch should have finished while the save waited")
        try admin.run("ROLLBACK")
        try await save.value
        #expect(saved.withLock { $0 })
    }
}
