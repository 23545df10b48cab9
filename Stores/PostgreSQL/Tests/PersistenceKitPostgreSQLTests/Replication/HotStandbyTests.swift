import Foundation
import PersistenceKit
import Testing

@testable import PersistenceKitPostgreSQL

/// A read-only container on a hot standby (Docs/Scaling.md): it opens without listening
/// (a standby takes no `LISTEN`), reads the primary's saves as the standby replays them,
/// and refuses saves before they reach the server.
@Suite("PostgreSQL store: read-only on a hot standby", .enabled(if: PrivateServer.isConfigured, PrivateServer.skipReason))
struct HotStandbyTests {
    /// A container on `url`, read-only when asked.
    static func container(_ url: URL, model: NSManagedObjectModel, readOnly: Bool) async throws -> NSPersistentContainer {
        PostgreSQLStore.register()
        let container = NSPersistentContainer(name: readOnly ? "Standby" : "Primary", managedObjectModel: model)
        let description = NSPersistentStoreDescription(url: url, type: NSPostgreSQLStoreType)
        description.isReadOnly = readOnly
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        return container
    }

    /// The names of the shelves `container` reads now, sorted.
    static func shelves(_ container: NSPersistentContainer) async throws -> [String] {
        let ctx = container.newBackgroundContext()
        return try await ctx.perform { try ctx.fetch(NSFetchRequest<Shelf>(entityName: "Shelf")).map(\.name).sorted() }
    }

    /// Saves a shelf named `name` through `container`.
    static func saveShelf(_ name: String, _ container: NSPersistentContainer) async throws {
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            Shelf(context: ctx).name = name
            try ctx.save()
        }
    }

    @Test("Reads the primary's saves as they are replayed; saves fail typed; no LISTEN is attempted")
    func readOnlyOnStandby() async throws {
        let primary = try PrivateServer()
        let model = try Models.bookshelf()
        let writer = try await Self.container(try primary.url, model: model, readOnly: false)
        try await Self.saveShelf("A", writer)

        let standby = try PrivateServer(standbyOf: primary)
        let reader = try await Self.container(try standby.url, model: model, readOnly: true)
        #expect(try await Self.shelves(reader) == ["A"])
        let store = try #require(reader.persistentStoreCoordinator.persistentStores.first as? PostgreSQLStore)
        #expect(store.isReadOnly)

        try await Self.saveShelf("B", writer)
        // Replay is asynchronous: the save shows up within a bounded wait.
        let deadline = ContinuousClock.now + .seconds(30)
        var seen = try await Self.shelves(reader)
        while seen != ["A", "B"] && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            seen = try await Self.shelves(reader)
        }
        #expect(seen == ["A", "B"], "the standby did not replay the primary's save")

        let ctx = reader.newBackgroundContext()
        try await ctx.perform {
            Shelf(context: ctx).name = "C"
            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .persistentStoreSave)
        }
        #expect(try await Self.shelves(writer) == ["A", "B"])
        store.close()
        for s in writer.persistentStoreCoordinator.persistentStores { (s as? PostgreSQLStore)?.close() }
    }
}
