import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// A save whose connection the server drops mid-transaction gets a typed error saying
/// whether it committed, the data stays whole, and the store reconnects for the next save.
@Suite("PostgreSQL store: the server goes away mid-save", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct ConnectionLossTests {
    @Test("A save whose backend is terminated while it waits for a row lock: not committed, nothing written, next save works")
    func terminatedMidSave() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema, listens: false)
        let ctx = container.newBackgroundContext()
        let pk = try await ctx.perform {
            let b = Book(context: ctx)
            b.title = "locked"
            let other = Book(context: ctx)
            other.title = "untouched"
            try ctx.save()
            b.title = "edited"
            b.pages = 9
            let fresh = Book(context: ctx)
            fresh.title = "inserted by the lost save"
            return b.objectID.uriRepresentation().lastPathComponent.dropFirst()
        }
        // Another connection holds the row's lock, so the save waits inside its transaction.
        let admin = try AdminConnection(url: try #require(TestServer.url))
        try admin.run("BEGIN")
        try admin.run("SELECT 1 FROM \"\(schema)\".\"Book\" WHERE \"_pk\" = \(pk) FOR UPDATE")
        let save = Task {
            try await ctx.perform { try ctx.save() }
        }
        // The saving backend, found waiting on the lock (deadline 10 s), is terminated. Looked
        // for from a connection outside the lock holder's transaction, which would see the
        // activity statistics as of its first look only.
        let watcher = try AdminConnection(url: try #require(TestServer.url))
        let deadline = ContinuousClock.now + .seconds(10)
        var terminated = false
        while !terminated && ContinuousClock.now < deadline {
            let pids = try watcher.column(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%\(schema)%FOR UPDATE%'")
            for pid in pids { try watcher.run("SELECT pg_terminate_backend(\(pid))") }
            terminated = !pids.isEmpty
            if !terminated { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(terminated, "the save never waited on the lock")
        try admin.run("ROLLBACK")
        let result = await save.result
        guard case let .failure(error) = result else {
            Issue.record("the save succeeded although its connection was terminated")
            return
        }
        let cause = (error as? CoreDataError)?.underlying as? PostgreSQLStoreError ?? error as? PostgreSQLStoreError
        #expect(cause?.kind == .connectionLostDuringCommit, "\(error)")
        #expect(cause?.commitOutcome == .notCommitted)
        // Nothing of the save is stored; the context kept its changes and saves them now.
        #expect(try admin.column("SELECT title FROM \"\(schema)\".\"Book\" ORDER BY title") == ["locked", "untouched"])
        try await ctx.perform { try ctx.save() }
        #expect(
            try admin.column("SELECT title FROM \"\(schema)\".\"Book\" ORDER BY title")
                == ["edited", "inserted by the lost save", "untouched"])
    }

    @Test("Connections the server closed while idle are replaced: the next fetch and save succeed")
    func idleConnectionsDropped() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema, listens: false, applicationName: schema)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            Book(context: ctx).title = "before"
            try ctx.save()
        }
        let admin = try AdminConnection(url: try #require(TestServer.url))
        let dropped = try admin.column(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(schema)'")
        #expect(!dropped.isEmpty)
        let reader = container.newBackgroundContext()
        let count = try await reader.perform { try reader.count(for: NSFetchRequest<Book>(entityName: "Book")) }
        #expect(count == 1)
        _ = try admin.column(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(schema)'")
        try await ctx.perform {
            Book(context: ctx).title = "after"
            try ctx.save()
        }
        #expect(try admin.column("SELECT title FROM \"\(schema)\".\"Book\" ORDER BY title") == ["after", "before"])
    }
}
