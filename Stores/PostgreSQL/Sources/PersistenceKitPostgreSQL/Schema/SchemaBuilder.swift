import Foundation
import PersistenceKit

/// Creates a store's tables from the model on first open, and on later opens checks that the
/// model is the one the store was made with.
struct SchemaBuilder {
    let layouts: [TableLayout]
    let schema: String
    let support: StoreCommitSupport
    let target: String

    /// What an open learned: the store's identifier and the model hash it was made with.
    struct Opened {
        var identifier: String
        var layoutHash: String
        /// The table layout's version (``LinkLayout/version``; empty: before versions were
        /// recorded, every to-many end an array).
        var layoutVersion: String
        /// The application's metadata entries (every row but the store's own keys).
        var entries: [String: String] = [:]
    }

    /// The keys of `_pk_metadata` that the store keeps itself.
    static let ownKeys: Set<String> = [NSStoreUUIDKey, PersistenceKitModelLayoutHashKey, PostgreSQLStore.layoutVersionKey]

    /// The uniqueness constraints that span an entity family, kept in key tables.
    var family: FamilyUniqueness { FamilyUniqueness(layouts: layouts, support: support, schema: schema) }

    var metadataTable: String { Self.metadataTable(schema) }

    /// The metadata table of the store in `schema`, schema-qualified and quoted.
    static func metadataTable(_ schema: String) -> String { "\(quote(schema)).\(quote("_pk_metadata"))" }

    /// Every row of the metadata table of the store in `schema`, key → value.
    static func metadataValues(_ schema: String, on c: PostgreSQLConnection) throws -> [String: String] {
        let r = try c.execute("SELECT key, value FROM \(metadataTable(schema))")
        var values: [String: String] = [:]
        for i in 0..<r.count { values[r.text(i, 0)] = r.text(i, 1) }
        return values
    }
    var keysTable: String { "\(quote(schema)).\(quote("_pk_keys"))" }

    /// Opens (creating when missing, unless not `creating`) the store in one transaction,
    /// under an advisory lock per schema, so that processes opening a new store at once
    /// create it once.
    ///
    /// - Throws: ``PostgreSQLStoreError`` (`.query` for a missing store that is not to be
    ///   created); a ``PersistenceKit/CoreDataError`` with code
    ///   `.persistentStoreIncompatibleVersionHash` when the stored model hash differs.
    func open(in pool: ConnectionPool, creating: Bool = true) throws -> Opened {
        try pool.withConnection { c in
            // An existing store: one read, no lock. Its metadata changes only in a migration,
            // which commits the new hash with the new tables: a read sees either whole.
            do {
                let opened = try read(c)
                try check(opened)
                // A read-only store changes nothing, family key tables included.
                if try !creating || !family.isMissing(on: c) { return opened }
                // A store made when family constraints were held per table: its key tables
                // are made below, under the lock.
            } catch let e as PostgreSQLStoreError where e.sqlState == "42P01" || e.sqlState == "3F000" {
                // No metadata table (or no schema) yet: create the store below.
                guard creating else {
                    throw PostgreSQLStoreError(
                        .query, target: target,
                        "schema \(schema) holds no store, and a store opened read-only (NSReadOnlyPersistentStoreOption) is "
                            + "not created; open it once without that option to create it, or check the schema option.",
                        sqlState: e.sqlState)
                }
            }
            try c.execute("BEGIN")
            do {
                try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("PersistenceKit " + schema)], prepare: false)
                try c.execute("CREATE SCHEMA IF NOT EXISTS \(quote(schema))")
                let exists = try c.execute("SELECT to_regclass($1) IS NOT NULL", [.text(metadataTable)], prepare: false)
                let opened: Opened
                if exists.text(0, 0) == "t" {
                    opened = try read(c)
                    try check(opened)
                    if try family.isMissing(on: c) { try family.create(on: c, target: target) }
                } else {
                    opened = try create(c)
                }
                try c.execute("COMMIT")
                return opened
            } catch {
                if c.isHealthy { _ = try? c.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// Throws the file store's mismatch error when the store was made with another model,
    /// and ``PostgreSQLStoreError`` `.unsupportedLayout` when its tables are laid out in
    /// another way than this build lays them out.
    private func check(_ opened: Opened) throws {
        try Self.checkLayout(opened.layoutVersion, schema: schema, target: target)
        // A store made by an earlier build with a to-one into an entity family has no entity
        // column: its links cannot be read back with their entities.
        if opened.layoutVersion != LinkLayout.version(of: layouts), opened.layoutHash == support.modelLayoutHash {
            throw PostgreSQLStoreError(
                .unsupportedLayout(found: opened.layoutVersion), target: target,
                "schema \(schema) holds a store of layout version \(opened.layoutVersion) whose model has a to-one into an entity "
                    + "family, kept as a key without its entity; this build keeps such links with their entity (layout version "
                    + "\(LinkLayout.familyVersion)); layouts are not converted: export the objects with the build that made the "
                    + "store, or destroy the store and load it again.")
        }
        guard opened.layoutHash != support.modelLayoutHash else { return }
        let cause = PostgreSQLStoreError(
            .modelMismatch(storeHash: opened.layoutHash, modelHash: support.modelLayoutHash), target: target,
            "schema \(schema) holds a store made with model \(opened.layoutHash), not \(support.modelLayoutHash).")
        throw CoreDataError.storeModelMismatch(
            store: "\(target) (schema \(schema))", storeHash: opened.layoutHash, modelHash: support.modelLayoutHash,
            underlying: cause)
    }

    private func read(_ c: PostgreSQLConnection) throws -> Opened {
        let values = try Self.metadataValues(schema, on: c)
        return Opened(
            identifier: values[NSStoreUUIDKey] ?? "", layoutHash: values[PersistenceKitModelLayoutHashKey] ?? "",
            layoutVersion: values[PostgreSQLStore.layoutVersionKey] ?? "", entries: values.filter { !Self.ownKeys.contains($0.key) })
    }

    /// Throws ``PostgreSQLStoreError`` `.unsupportedLayout` unless `version` is the layout
    /// this build reads and writes.
    static func checkLayout(_ version: String, schema: String, target: String) throws(PostgreSQLStoreError) {
        guard version != LinkLayout.version && version != LinkLayout.familyVersion else { return }
        let found = version.isEmpty ? "1" : version
        let what = found == "1" ? "layout version 1 (every to-many end a key list)" : "layout version \(found)"
        throw PostgreSQLStoreError(
            .unsupportedLayout(found: found), target: target,
            "schema \(schema) holds a store with table \(what), and this build reads only layout version "
                + "\(LinkLayout.version) (links at their owning end: key columns and join tables); layouts are not "
                + "converted: export the objects with the build that made the store, or destroy the store and load it again.")
    }

    private func create(_ c: PostgreSQLConnection) throws -> Opened {
        for t in layouts { try c.execute(Self.createTable(t)) }
        // Each entity of a family inherits the owning end: its join table is made once.
        var joinTables = Set<String>()
        for end in layouts.flatMap(\.derived) where end.ownsJoinTable && joinTables.insert(end.tableName).inserted {
            for statement in Self.createJoinTable(end) { try c.execute(statement) }
        }
        for index in Self.indexes(of: layouts, support: support) { try c.execute(index.createStatement(schema: schema)) }
        try family.create(on: c, target: target)
        try c.execute("CREATE TABLE \(keysTable) (entity text PRIMARY KEY, next bigint NOT NULL)")
        for t in layouts {
            try c.execute("INSERT INTO \(keysTable) (entity, next) VALUES ($1, 1)", [.text(t.entityName)], prepare: false)
        }
        try c.execute("CREATE TABLE \(metadataTable) (key text PRIMARY KEY, value text NOT NULL)")
        let opened = Opened(identifier: UUID().uuidString, layoutHash: support.modelLayoutHash, layoutVersion: LinkLayout.version(of: layouts))
        let values = [
            (NSStoreUUIDKey, opened.identifier), (PersistenceKitModelLayoutHashKey, opened.layoutHash),
            (PostgreSQLStore.layoutVersionKey, opened.layoutVersion),
        ]
        for (k, v) in values {
            try c.execute("INSERT INTO \(metadataTable) (key, value) VALUES ($1, $2)", [.text(k), .text(v)], prepare: false)
        }
        return opened
    }

    /// The statement that creates `t`'s table (without its indexes).
    static func createTable(_ t: TableLayout) -> String {
        let columns = ["\"_pk\" bigint PRIMARY KEY", "\"_version\" bigint NOT NULL"] + t.columns.map { "\($0.quoted) \($0.kind.sqlType)" }
        return "CREATE TABLE \(t.table) (\(columns.joined(separator: ", ")))"
    }

    /// The statements that create the join table `end` (an owning end) writes: a row per
    /// link, keyed by both rows, with an index led by the other row for reading the other end.
    static func createJoinTable(_ end: DerivedEnd) -> [String] {
        // A side of an entity family has its entity column after its key (see
        // `DerivedEnd+Family.swift`): a key names a row only with its entity.
        let source = ["source"] + (end.matchEntityColumn.map { [$0] } ?? [])
        let target = ["target"] + (end.listedEntityColumn.map { [$0] } ?? [])
        let columns = source.map { "\(quote($0)) \($0 == "source" ? "bigint" : "integer") NOT NULL" }
            + target.map { "\(quote($0)) \($0 == "target" ? "bigint" : "integer") NOT NULL" }
        let key = (source + target).map(quote).joined(separator: ", ")
        return [
            "CREATE TABLE \(end.table) (\(columns.joined(separator: ", ")), PRIMARY KEY (\(key)))",
            // On both, the other row first: the other end's list is read from it alone.
            "CREATE INDEX \(quote(end.tableName + "_target")) ON \(end.table) (\((target + source).map(quote).joined(separator: ", ")))",
        ]
    }

    /// The indexes and uniqueness constraints a store of these layouts has: an index per
    /// indexed column, a deferred unique constraint per uniqueness constraint of one entity
    /// (one spanning a family is kept by ``FamilyUniqueness``).
    static func indexes(of layouts: [TableLayout], support: StoreCommitSupport) -> [StoreIndex] {
        let family = FamilyUniqueness(layouts: layouts, support: support, schema: "")
        var all: [StoreIndex] = []
        for t in layouts {
            for col in t.columns where col.indexed {
                // A to-one's index also holds the row's key: the other end's list is then read
                // from the index alone, in key order (an index-only scan, no sort; 800 shelves
                // with their 20,000 books' keys: 14 ms → 5 ms).
                let columns = if case .toOne = col.kind { [col.name, "_pk"] } else { [col.name] }
                all.append(StoreIndex(name: "pk_idx_\(t.entity)_\(col.property)", table: t.entityName, columns: columns, unique: false))
            }
            // A key list that a derived end is read from: a GIN index serves its `@>` test.
            // (Each table of a family an end reads across holds such a list.)
            let listed = Set(
                layouts.flatMap {
                    $0.derived.filter { $0.source == .list && ($0.destination == t.entity || $0.family.contains { $0.entity == t.entity }) }
                        .map(\.match)
                })
            for col in t.columns where listed.contains(col.name) {
                all.append(
                    StoreIndex(name: "pk_idx_\(t.entity)_\(col.property)_gin", table: t.entityName, columns: [col.name], unique: false))
            }
            for (k, constraint) in (support.uniqueColumns[t.entity] ?? []).enumerated()
            where !family.spansFamily(t.entity, columns: constraint) {
                let names = constraint.compactMap { t.column($0)?.name }
                all.append(StoreIndex(name: "pk_uq_\(t.entity)_\(k)", table: t.entityName, columns: names, unique: true))
            }
        }
        return all
    }
}

/// An index or uniqueness constraint the store made: its name (unique in the schema, as
/// PostgreSQL names a constraint's index after it), table and columns, unquoted.
struct StoreIndex: Hashable {
    let name: String
    let table: String
    let columns: [String]
    /// A deferred unique constraint rather than a plain index.
    let unique: Bool

    /// The statement that creates it in `schema`.
    func createStatement(schema: String) -> String {
        let table = "\(quote(schema)).\(quote(self.table))"
        let list = columns.map(quote).joined(separator: ", ")
        if unique {
            // Deferred to the commit: a save that swaps two rows' values is valid as a
            // whole, though each single update would clash.
            return "ALTER TABLE \(table) ADD CONSTRAINT \(quote(name)) UNIQUE (\(list)) DEFERRABLE INITIALLY DEFERRED"
        }
        return "CREATE INDEX \(quote(name)) ON \(table) \(isGIN ? "USING gin " : "")(\(list))"
    }

    /// Whether it is a GIN index (on a key list a derived end is read from): its name ends
    /// in `_gin`, so that a migration, which finds the store's indexes by name, tells it apart.
    var isGIN: Bool { !unique && name.hasSuffix("_gin") }
}
