import Foundation
import PersistenceKit
import Synchronization

/// Migrates a store's tables in place to a new model version, as one PostgreSQL
/// transaction: tables and columns are renamed, added, dropped and converted with DDL
/// (which PostgreSQL runs inside transactions), the rows' values are checked and filled with
/// statements, and the metadata table gets the new model hash in the same transaction. If
/// any statement fails, the transaction rolls back and the store is as it was, at its old
/// version; other processes never see a half-migrated schema. A step with a custom stage's
/// handlers commits in a transaction of its own, between them.
///
/// The mapping is the one a file store's migration infers (``StoreMigrationRequest``), so
/// a change it cannot infer is the same ``PersistenceKit/MigrationError``, raised before any
/// statement runs.
///
/// # Concurrency
/// The migration holds a session advisory lock of its own from before it reads the stored
/// model hash until its last handler returned, and each transaction also holds the lock a
/// store's creation takes: a second process opening with the new model at once waits, then
/// finds the store migrated and changes nothing. `ALTER TABLE` also waits for transactions
/// reading or writing the table to end.
enum SchemaMigration {
    /// The migrations this process committed, by schema: what a test reads to see that of
    /// two processes opening a store at once, one migrated it.
    static let committed = Mutex<[String: Int]>([:])

    /// Migrates the store `request` names to `request.destination`; does nothing when it is
    /// already there or does not exist (its first open creates it).
    ///
    /// The steps commit together in one transaction, except around a custom stage's
    /// handlers: a step that has them commits on its own, after its `willMigrateHandler` ran
    /// on the store at the old version and before its `didMigrateHandler` runs at the new
    /// one, as a file store's staged migration does.
    ///
    /// - Throws: ``PersistenceKit/MigrationError`` for a change that cannot be inferred, a
    ///   stored value that stands in the way or a handler that failed; ``PostgreSQLStoreError``
    ///   when the server fails (the coordinator reports both as a failed migration). The store
    ///   is then at the version its last committed step reached.
    static func migrate(_ request: StoreMigrationRequest) throws {
        let (conninfo, target) = try PostgreSQLStore.connectionInfo(url: request.url, options: request.options)
        let schema = request.options[PostgreSQLStore.schemaOptionKey] ?? "public"
        let c = try PostgreSQLConnection(conninfo: conninfo, target: target)
        // One migration of a schema at a time, its handlers included: a second process
        // loading the new model waits here, then finds the store migrated. A lock of the
        // session, not of a transaction, as handlers run between transactions; it is another
        // lock than the one each transaction below takes, which a handler's open of a store
        // may take too. Closing the connection (when `c` is released) also releases it.
        try c.execute("SELECT pg_advisory_lock(hashtext($1))", [.text("PersistenceKit migration " + schema)], prepare: false)
        defer { _ = try? c.execute("SELECT pg_advisory_unlock(hashtext($1))", [.text("PersistenceKit migration " + schema)], prepare: false) }
        while true {
            guard let stored = try storedVersion(schema: schema, target: target, on: c) else { return }
            let steps = try request.steps(fromLayoutHash: stored, runsHandlers: true)
            guard let first = steps.first else { return }
            if first.hasHandlers {
                try request.runWillMigrateHandler(of: first)
                try commit([first], from: stored, schema: schema, target: target, on: c)
                try request.runDidMigrateHandler(of: first)
            } else {
                try commit(Array(steps.prefix { !$0.hasHandlers }), from: stored, schema: schema, target: target, on: c)
            }
        }
    }

    /// The stored model hash, once the layout is checked; nil when the schema holds no store.
    private static func storedVersion(schema: String, target: String, on c: PostgreSQLConnection) throws -> String? {
        let exists = try c.execute("SELECT to_regclass($1) IS NOT NULL", [.text(SchemaBuilder.metadataTable(schema))], prepare: false)
        guard exists.text(0, 0) == "t" else { return nil }
        let values = try SchemaBuilder.metadataValues(schema, on: c)
        // A store of another table layout is not migrated: its tables are not the ones the
        // steps expect.
        try SchemaBuilder.checkLayout(values[PostgreSQLStore.layoutVersionKey] ?? "", schema: schema, target: target)
        return values[PersistenceKitModelLayoutHashKey] ?? ""
    }

    /// Applies `steps` in one transaction, which also records the last step's model hash.
    /// The store must be at `stored` (the migration lock keeps it there).
    private static func commit(_ steps: [StoreMigrationStep], from stored: String, schema: String, target: String, on c: PostgreSQLConnection) throws {
        guard let last = steps.last else { return }
        let metadataTable = SchemaBuilder.metadataTable(schema)
        try c.execute("BEGIN")
        do {
            // The lock a store's creation takes (and an open that adds family key tables).
            try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("PersistenceKit " + schema)], prepare: false)
            // Family key tables and their triggers name columns the steps may rename or
            // drop: they are made again from the migrated rows at the end.
            try FamilyUniqueness.dropAll(schema: schema, on: c)
            for step in steps {
                try StepMigration(step: step, schema: schema, connection: c).run()
            }
            let destination = StoreCommitSupport(model: last.destination)
            let layouts = try TableLayout.all(of: last.destination, schema: schema)
            try FamilyUniqueness(layouts: layouts, support: destination, schema: schema).create(on: c, target: target)
            // Links into a family that come or go change the layout version (3 with them).
            try c.execute(
                "INSERT INTO \(metadataTable) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                [.text(PostgreSQLStore.layoutVersionKey), .text(LinkLayout.version(of: layouts))], prepare: false)
            let updated = try c.execute(
                "UPDATE \(metadataTable) SET value = $3 WHERE key = $1 AND value = $2",
                [.text(PersistenceKitModelLayoutHashKey), .text(stored), .text(destination.modelLayoutHash)], prepare: false)
            // Migrations of this build run one at a time (the session lock), so the hash is the
            // one the steps were planned from; a build without that lock may have migrated
            // meanwhile: then nothing of these steps is committed.
            guard updated.affected == 1 else {
                throw PostgreSQLStoreError(
                    .query, target: target,
                    "schema \(schema) was migrated by another process while this one migrated it; nothing of this migration "
                        + "was committed: load the store again.")
            }
            try c.execute("COMMIT")
            committed.withLock { $0[schema, default: 0] += 1 }
        } catch {
            // A dropped connection rolled the transaction back on the server already.
            if c.isHealthy { _ = try? c.execute("ROLLBACK") }
            throw error
        }
    }
}

/// One step of a migration, run on a connection inside the migration's transaction.
struct StepMigration {
    let step: StoreMigrationStep
    let schema: String
    let connection: PostgreSQLConnection

    var keysTable: String { "\(quote(schema)).\(quote("_pk_keys"))" }

    func table(_ name: String) -> String { "\(quote(schema)).\(quote(name))" }

    /// Entities, then columns, then indexes: each stage finds the names the previous left.
    func run() throws {
        let oldLayouts = try Dictionary(uniqueKeysWithValues: TableLayout.all(of: step.source, schema: schema).map { ($0.entityName, $0) })
        let newLayouts = try TableLayout.all(of: step.destination, schema: schema)
        let newByName = Dictionary(uniqueKeysWithValues: newLayouts.map { ($0.entityName, $0) })
        try FamilyLinkMigration.check(step, old: oldLayouts, new: newByName, schema: schema)
        let renumbering = EntityRenumbering(step, old: oldLayouts, new: newByName)
        let kept = Set(step.entities.map(\.source.name))
        let c = connection

        // Removed entities first, so that their names are free for renamed and new ones.
        for e in step.source.entities where !kept.contains(e.name) {
            try c.execute("DROP TABLE \(table(e.name)) CASCADE")
            try c.execute("DELETE FROM \(keysTable) WHERE entity = $1", [.text(e.name)], prepare: false)
        }
        // Renames through temporary names: two entities may trade names.
        let renamed = step.entities.filter { $0.source.name != $0.destination.name }
        for (i, map) in renamed.enumerated() {
            try rename(entity: map.source.name, to: "_pk_migrating_\(i)")
        }
        for (i, map) in renamed.enumerated() {
            try rename(entity: "_pk_migrating_\(i)", to: map.destination.name)
        }
        // Links whose storage changes (an end that had no column gets one, a join table is
        // new) are listed first, as the old layout reads them: the columns and join tables
        // they are read from may be renamed, converted or dropped below.
        let renamedTo = Dictionary(uniqueKeysWithValues: step.entities.map { ($0.source.name, $0.destination.name) })
        let oldJoinTables = Set(oldLayouts.values.flatMap { $0.derived.filter(\.ownsJoinTable).map(\.tableName) })
        var snapshots: [String: [Int: String]] = [:]
        var newJoins: [(end: DerivedEnd, listed: String?)] = []
        var reused = Set<String>()
        var count = 0
        func snapshot(_ map: StoreMigrationStep.EntityMapping, _ old: TableLayout, _ p: Int) throws -> String? {
            // Such ends name their rows' entities, which the plain keys listed here lose.
            if let end = old.derivedEnd(p), end.spansFamily || end.matchEntityColumn != nil || end.listedEntityColumn != nil || end.packedEntity != nil {
                throw EntityFamilyLinks.refusedMigration(of: old.entityName, end.name, target: schema)
            }
            guard let keys = oldKeys(old, p, renamedTo: renamedTo) else { return nil }
            let name = quote("_pk_links_\(count)")
            count += 1
            try c.execute(
                "CREATE TEMPORARY TABLE \(name) ON COMMIT DROP AS "
                    + "SELECT t.\"_pk\" AS pk, \(keys) AS keys FROM \(table(map.destination.name)) t")
            return name
        }
        for map in step.entities {
            guard let old = oldLayouts[map.source.name], let new = newByName[map.destination.name] else { continue }
            for to in new.columns {
                guard let p = map.sourceProperties[to.property], old.column(p) == nil else { continue }
                if let listed = try snapshot(map, old, p) { snapshots[map.destination.name, default: [:]][to.property] = listed }
            }
            for end in new.derived where end.ownsJoinTable {
                let p = map.sourceProperties[end.property]
                if let p, let was = old.derivedEnd(p), was.ownsJoinTable, was.tableName == end.tableName {
                    reused.insert(end.tableName)  // the same link, kept the same way
                    continue
                }
                // A join table with entity columns under a new name: renamed below.
                if let p, let was = old.derivedEnd(p), was.ownsJoinTable, !end.joinEntityColumns.isEmpty { continue }
                newJoins.append((end, try p.flatMap { try snapshot(map, old, $0) }))
            }
        }
        for map in step.entities {
            guard let old = oldLayouts[map.source.name], let new = newByName[map.destination.name] else { continue }
            try ColumnMigration(
                map: map, old: old, new: new, table: table(map.destination.name), connection: c,
                derivedValues: snapshots[map.destination.name] ?? [:], renumbering: renumbering
            ).run()
        }
        let joinRenames = FamilyLinkMigration.joinTableRenames(step, old: oldLayouts, new: newByName)
        for name in oldJoinTables.subtracting(reused).subtracting(joinRenames.map(\.from)) { try c.execute("DROP TABLE \(table(name))") }
        try FamilyLinkMigration.rename(joinRenames, schema: schema, on: c)
        for (end, listed) in newJoins {
            for statement in SchemaBuilder.createJoinTable(end) { try c.execute(statement) }
            if let listed {
                try c.execute(
                    "INSERT INTO \(end.table) (\"source\", \"target\") SELECT l.pk, k FROM \(listed) l, unnest(l.keys) k "
                        + "ON CONFLICT DO NOTHING")
            }
        }
        if !renumbering.isIdentity {
            var done = Set<String>()
            for end in newLayouts.flatMap(\.derived) where end.ownsJoinTable && !end.joinEntityColumns.isEmpty {
                guard done.insert(end.tableName).inserted else { continue }
                try renumbering.renumber(joinTable: end.table, entityColumns: end.joinEntityColumns, on: c)
            }
        }
        let mapped = Set(step.entities.map(\.destination.name))
        for t in newLayouts where !mapped.contains(t.entityName) {
            try c.execute(SchemaBuilder.createTable(t))
            try c.execute("INSERT INTO \(keysTable) (entity, next) VALUES ($1, 1)", [.text(t.entityName)], prepare: false)
        }
        try IndexMigration(
            wanted: SchemaBuilder.indexes(of: newLayouts, support: StoreCommitSupport(model: step.destination)), schema: schema,
            connection: c
        ).run()
    }

    /// The keys property `p` of a row `t` of `old` links to, as the old layout keeps them
    /// (a `bigint[]` expression), once entity tables have their new names (`renamedTo`) and
    /// before columns change; nil when `p` is not a relationship.
    private func oldKeys(_ old: TableLayout, _ p: Int, renamedTo: [String: String]) -> String? {
        if let col = old.column(p) {
            switch col.kind {
            case .toOne: return "CASE WHEN t.\(col.quoted) IS NULL THEN '{}'::bigint[] ELSE ARRAY[t.\(col.quoted)] END"
            case .toMany: return "COALESCE(t.\(col.quoted), '{}'::bigint[])"
            default: return nil
            }
        }
        guard let end = old.derivedEnd(p) else { return nil }
        // Join tables keep their names until the end of the step.
        if case .join = end.source { return end.keys(of: "t.\"_pk\"") }
        // The owning entity is gone, and its links with it.
        guard let kept = renamedTo[end.tableName] else { return "'{}'::bigint[]" }
        return end.reading(schema: schema, tableName: kept).keys(of: "t.\"_pk\"")
    }

    /// Renames an entity's table, its primary key constraint (named after the table, and
    /// unique in the schema: a new table of the old name would clash with it) and its key
    /// counter.
    private func rename(entity old: String, to new: String) throws {
        let c = connection
        try c.execute("ALTER TABLE \(table(old)) RENAME TO \(quote(new))")
        let r = try c.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'", [.text(table(new))], prepare: false)
        if r.count == 1 {
            try c.execute("ALTER TABLE \(table(new)) RENAME CONSTRAINT \(quote(r.text(0, 0))) TO \(quote(Self.primaryKeyName(new)))")
        }
        try c.execute("UPDATE \(keysTable) SET entity = $2 WHERE entity = $1", [.text(old), .text(new)], prepare: false)
    }

    /// The name PostgreSQL gives the primary key of a new table `name`: `name_pkey`, the
    /// table's part cut (at a character boundary) to keep within 63 bytes.
    static func primaryKeyName(_ name: String) -> String {
        var head = ""
        for ch in name {
            guard head.utf8.count + String(ch).utf8.count + 5 <= 63 else { break }
            head.append(ch)
        }
        return head + "_pkey"
    }
}
