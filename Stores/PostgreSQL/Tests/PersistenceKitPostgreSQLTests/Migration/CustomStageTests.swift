import Foundation
import PersistenceKit
import Synchronization
import Testing

@testable import PersistenceKitPostgreSQL

/// Custom migration stages on a PostgreSQL store: `willMigrateHandler` runs on the store at
/// the old version, the step commits on its own, `didMigrateHandler` runs at the new
/// version, and the stages after it go on in the same load, as a file store's staged
/// migration does.
@Suite("PostgreSQL store: custom migration stages", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct CustomStageTests {
    typealias M = MigrationModels
    typealias S = SchemaMigrationTests

    /// The three versions of ``MigrationModels`` and a bundle holding them.
    struct Versions {
        let models: M
        let v1: NSManagedObjectModel
        let v2: NSManagedObjectModel
        let v3: NSManagedObjectModel

        init() throws {
            models = try M([("V1", M.v1), ("V2", M.v2), ("V3", M.v3)], current: "V3")
            v1 = try models.version("V1")
            v2 = try models.version("V2")
            v3 = try models.current()
        }

        func reference(_ model: NSManagedObjectModel) -> NSManagedObjectModelReference {
            NSManagedObjectModelReference(model: model, versionChecksum: model.versionChecksum)
        }

        /// A custom stage from version 1 to 2 with `will` and `did` as handlers, then a
        /// lightweight stage to version 3.
        func manager(
            will: (@Sendable (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)?,
            did: (@Sendable (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)?
        ) -> NSStagedMigrationManager {
            let custom = NSCustomMigrationStage(migratingFrom: reference(v1), to: reference(v2))
            custom.label = "ages and ranks"
            custom.willMigrateHandler = will
            custom.didMigrateHandler = did
            return NSStagedMigrationManager([custom, NSLightweightMigrationStage([v2.versionChecksum, v3.versionChecksum])])
        }
    }

    /// Runs `body` on a context of the container the manager holds while a handler runs,
    /// and saves.
    static func edit(_ manager: NSStagedMigrationManager, _ body: (NSManagedObjectContext) throws -> Void) throws {
        let container = try #require(manager.container)
        let ctx = container.newBackgroundContext()
        try ctx.performAndWait {
            try body(ctx)
            try ctx.save()
        }
    }

    @Test("The handlers run at their versions around a step committed alone; the next stage follows in the same load")
    func handlersAroundTheirStep() async throws {
        let versions = try Versions()
        defer { versions.models.remove() }
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: versions.v1) }
        try await S.seed(versions.v1, schema: schema)

        let seen = Mutex<[String]>([])
        let manager = versions.manager(
            will: { manager, _ in
                // Version 1: writers, with the nickname version 2 drops.
                try Self.edit(manager) { ctx in
                    for w in try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Writer")) {
                        if w.value(forKey: "age") == nil { w.setValue(Int16(40), forKey: "age") }
                        seen.withLock { $0.append("will \(w.value(forKey: "name") as? String ?? "")/\(w.value(forKey: "nickname") as? String ?? "-")") }
                    }
                }
            },
            did: { manager, _ in
                // Version 2: authors, with the new rank.
                try Self.edit(manager) { ctx in
                    for a in try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")) {
                        let books = (a.value(forKey: "books") as? Set<NSManagedObject>)?.count ?? 0
                        a.setValue(Int32(books), forKey: "rank")
                        seen.withLock { $0.append("did \(a.value(forKey: "fullName") as? String ?? "")") }
                    }
                }
            })
        let container = try await S.load(versions.v3, schema: schema, migrate: false, staged: manager)
        defer { S.close(container) }
        #expect(seen.withLock { $0.sorted() } == ["did Ada", "did Bob", "will Ada/countess", "will Bob/-"])
        #expect(manager.container == nil)
        // The custom step, then the lightweight one: two transactions.
        #expect(SchemaMigration.committed.withLock { $0[schema] } == 2)
        let ctx = container.newBackgroundContext()
        let authors = try await ctx.perform {
            try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")).map { a in
                let books = (a.value(forKey: "books") as? Set<NSManagedObject>)?.compactMap { $0.value(forKey: "title") as? String }.sorted() ?? []
                return "\(a.value(forKey: "fullName") as? String ?? "")/\(a.value(forKey: "age") as? Int64 ?? -1)/\(a.value(forKey: "rank") as? Int32 ?? -1)/\(books)"
            }.sorted()
        }
        #expect(authors == ["Ada/36/2/[\"Notes\", \"Poems\"]", "Bob/40/1/[\"Tales\"]"])
    }

    @Test("A willMigrateHandler that throws leaves the store at the old version; a didMigrateHandler that throws, at the new one")
    func failingHandlers() async throws {
        struct Refused: Error {}
        let versions = try Versions()
        defer { versions.models.remove() }
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: versions.v1) }
        try await S.seed(versions.v1, schema: schema)

        let early = await #expect(throws: CoreDataError.self) {
            _ = try await S.load(versions.v3, schema: schema, migrate: false, staged: versions.manager(will: { _, _ in throw Refused() }, did: nil))
        }
        #expect((early?.underlying as? MigrationError)?.kind == .handlerFailed, "\(String(describing: early))")
        try await S.expectVersion1Intact(versions.v1, schema: schema)

        let late = await #expect(throws: CoreDataError.self) {
            _ = try await S.load(versions.v3, schema: schema, migrate: false, staged: versions.manager(will: nil, did: { _, _ in throw Refused() }))
        }
        #expect((late?.underlying as? MigrationError)?.kind == .handlerFailed, "\(String(describing: late))")
        // The step committed: the store opens at version 2 without migrating, and a later
        // load goes on from there.
        S.close(try await S.load(versions.v2, schema: schema, migrate: false))
        let container = try await S.load(versions.v3, schema: schema, migrate: false, staged: versions.manager(will: nil, did: nil))
        defer { S.close(container) }
        let ctx = container.newBackgroundContext()
        #expect(try await ctx.perform { try ctx.count(for: NSFetchRequest<NSManagedObject>(entityName: "Author")) } == 2)
    }
}
