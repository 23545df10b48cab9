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
    }

    var metadataTable: String { "\(quote(schema)).\(quote("_pk_metadata"))" }
    var keysTable: String { "\(quote(schema)).\(quote("_pk_keys"))" }

    /// Opens (creating when missing) the store in one transaction, under an advisory lock
    /// per schema, so that processes opening a new store at once create it once.
    ///
    /// - Throws: ``PostgreSQLStoreError``; a ``PersistenceKit/CoreDataError`` with code
    ///   `.persistentStoreIncompatibleVersionHash` when the stored model hash differs.
    func open(in pool: ConnectionPool) throws -> Opened {
        try pool.withConnection { c in
            // An existing store: one read, no lock (its metadata never changes once written).
            do {
                let opened = try read(c)
                try check(opened)
                return opened
            } catch let e as PostgreSQLStoreError where e.sqlState == "42P01" || e.sqlState == "3F000" {
                // No metadata table (or no schema) yet: create the store below.
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

    /// Throws the file store's mismatch error when the store was made with another model.
    private func check(_ opened: Opened) throws {
        guard opened.layoutHash != support.modelLayoutHash else { return }
        let cause = PostgreSQLStoreError(
            .modelMismatch(storeHash: opened.layoutHash, modelHash: support.modelLayoutHash), target: target,
            "schema \(schema) holds a store made with model \(opened.layoutHash), not \(support.modelLayoutHash).")
        throw CoreDataError.storeModelMismatch(
            store: "\(target) (schema \(schema))", storeHash: opened.layoutHash, modelHash: support.modelLayoutHash,
            underlying: cause)
    }

    private func read(_ c: PostgreSQLConnection) throws -> Opened {
        let r = try c.execute("SELECT key, value FROM \(metadataTable)")
        var values: [String: String] = [:]
        for i in 0..<r.count { values[r.text(i, 0)] = r.text(i, 1) }
        return Opened(identifier: values[NSStoreUUIDKey] ?? "", layoutHash: values[PersistenceKitModelLayoutHashKey] ?? "")
    }

    private func create(_ c: PostgreSQLConnection) throws -> Opened {
        for t in layouts {
            let columns = ["\"_pk\" bigint PRIMARY KEY", "\"_version\" bigint NOT NULL"]
                + t.columns.map { "\($0.quoted) \($0.kind.sqlType)" }
            try c.execute("CREATE TABLE \(t.table) (\(columns.joined(separator: ", ")))")
            for col in t.columns where col.indexed {
                try c.execute("CREATE INDEX \(quote("pk_idx_\(t.entity)_\(col.property)")) ON \(t.table) (\(col.quoted))")
            }
            for (k, constraint) in (support.uniqueColumns[t.entity] ?? []).enumerated() {
                let names = constraint.compactMap { t.column($0)?.quoted }
                // Deferred to the commit: a save that swaps two rows' values is valid as a
                // whole, though each single update would clash.
                try c.execute(
                    "ALTER TABLE \(t.table) ADD CONSTRAINT \(quote("pk_uq_\(t.entity)_\(k)")) UNIQUE (\(names.joined(separator: ", "))) "
                        + "DEFERRABLE INITIALLY DEFERRED")
            }
        }
        try c.execute("CREATE TABLE \(keysTable) (entity text PRIMARY KEY, next bigint NOT NULL)")
        for t in layouts {
            try c.execute("INSERT INTO \(keysTable) (entity, next) VALUES ($1, 1)", [.text(t.entityName)], prepare: false)
        }
        try c.execute("CREATE TABLE \(metadataTable) (key text PRIMARY KEY, value text NOT NULL)")
        let opened = Opened(identifier: UUID().uuidString, layoutHash: support.modelLayoutHash)
        for (k, v) in [(NSStoreUUIDKey, opened.identifier), (PersistenceKitModelLayoutHashKey, opened.layoutHash)] {
            try c.execute("INSERT INTO \(metadataTable) (key, value) VALUES ($1, $2)", [.text(k), .text(v)], prepare: false)
        }
        return opened
    }
}
