import Foundation
import PersistenceKit

/// Brings a schema's store-made indexes and uniqueness constraints (`pk_idx_…`, `pk_uq_…`)
/// to those a new model wants, once tables and columns have their new names: one that is
/// already there is kept, one on the same columns under another name is renamed (its index
/// is not rebuilt), the rest are dropped or created. A new uniqueness constraint that the
/// stored rows break fails the migration (PostgreSQL checks it as it builds the index).
struct IndexMigration {
    let wanted: [StoreIndex]
    let schema: String
    let connection: PostgreSQLConnection

    func run() throws {
        let existing = try storeIndexes()
        let want = Set(wanted)
        var stale = existing.filter { !want.contains($0) }
        var missing = wanted.filter { !existing.contains($0) }
        // Same table, columns and kind under another name: renamed through a temporary
        // name, since the wanted name may be held by another stale index.
        var renames: [(StoreIndex, StoreIndex)] = []
        for w in missing {
            let same = { (s: StoreIndex) in s.table == w.table && s.columns == w.columns && s.unique == w.unique && s.isGIN == w.isGIN }
            if let i = stale.firstIndex(where: same) {
                renames.append((stale.remove(at: i), w))
            }
        }
        missing.removeAll { w in renames.contains { $0.1 == w } }
        for s in stale { try drop(s) }
        for (i, r) in renames.enumerated() { try rename(r.0, to: "_pk_migrating_idx_\(i)") }
        for (i, r) in renames.enumerated() {
            try rename(StoreIndex(name: "_pk_migrating_idx_\(i)", table: r.0.table, columns: r.0.columns, unique: r.0.unique), to: r.1.name)
        }
        for w in missing { try connection.execute(w.createStatement(schema: schema)) }
    }

    private func table(_ name: String) -> String { "\(quote(schema)).\(quote(name))" }

    private func drop(_ index: StoreIndex) throws {
        if index.unique {
            try connection.execute("ALTER TABLE \(table(index.table)) DROP CONSTRAINT \(quote(index.name))")
        } else {
            try connection.execute("DROP INDEX \(table(index.name))")
        }
    }

    private func rename(_ index: StoreIndex, to name: String) throws {
        if index.unique {
            try connection.execute("ALTER TABLE \(table(index.table)) RENAME CONSTRAINT \(quote(index.name)) TO \(quote(name))")
        } else {
            try connection.execute("ALTER INDEX \(table(index.name)) RENAME TO \(quote(name))")
        }
    }

    /// The store-made indexes and uniqueness constraints of the schema's tables.
    private func storeIndexes() throws -> [StoreIndex] {
        // Plain indexes and constraints: their columns in order.
        let indexes = try connection.execute(
            """
            SELECT ic.relname, tc.relname,
              (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(n, i)
               JOIN pg_attribute a ON a.attrelid = tc.oid AND a.attnum = k.n)::text
            FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class tc ON tc.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = tc.relnamespace
            WHERE n.nspname = $1 AND left(ic.relname, 7) = 'pk_idx_'
            """, [.text(schema)], prepare: false)
        var all: [StoreIndex] = []
        for r in 0..<indexes.count {
            all.append(
                StoreIndex(name: indexes.text(r, 0), table: indexes.text(r, 1), columns: Self.names(indexes.text(r, 2)), unique: false))
        }
        let constraints = try connection.execute(
            """
            SELECT con.conname, tc.relname,
              (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(con.conkey) WITH ORDINALITY AS k(n, i)
               JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n)::text
            FROM pg_constraint con JOIN pg_class tc ON tc.oid = con.conrelid JOIN pg_namespace n ON n.oid = tc.relnamespace
            WHERE n.nspname = $1 AND con.contype = 'u' AND left(con.conname, 6) = 'pk_uq_'
            """, [.text(schema)], prepare: false)
        for r in 0..<constraints.count {
            all.append(
                StoreIndex(
                    name: constraints.text(r, 0), table: constraints.text(r, 1), columns: Self.names(constraints.text(r, 2)),
                    unique: true))
        }
        return all
    }

    /// The names in a `text[]`'s text form (`{a,"b c"}`): quoted elements unquoted.
    static func names(_ array: String) -> [String] {
        var names: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for ch in array.dropFirst().dropLast() {
            if escaped {
                current.append(ch)
                escaped = false
            } else if ch == "\\" && quoted {
                escaped = true
            } else if ch == "\"" {
                quoted.toggle()
            } else if ch == "," && !quoted {
                names.append(current)
                current = ""
            } else {
                current.append(ch)
            }
        }
        if !array.isEmpty && array != "{}" { names.append(current) }
        return names
    }
}
