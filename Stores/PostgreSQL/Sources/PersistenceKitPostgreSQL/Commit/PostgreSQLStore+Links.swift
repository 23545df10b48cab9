import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// Writes the join-table rows of the owning many-to-many ends `transaction` changes
    /// (see ``LinkLayout``): all links of inserted rows, what changed between the stored and
    /// the written value of updated rows (`stored` has every updated row locked and read),
    /// and none of deleted rows. Adding one link inserts one row, whatever the list's
    /// length. Call it inside the commit's transaction, after the rows are written.
    func writeJoinedLinks(_ transaction: StoreTransaction, stored: RowLocks, on c: PostgreSQLConnection) throws {
        guard layouts.contains(where: { $0.derived.contains(where: \.ownsJoinTable) }) else { return }
        var changes: [String: JoinChanges] = [:]
        // The owning end of each table with entity columns (one shape for the whole family).
        var familyEnds: [String: DerivedEnd] = [:]
        for row in transaction.inserts {
            for end in try layout(row.id.entity).derived where end.ownsJoinTable {
                if !end.joinEntityColumns.isEmpty { familyEnds[end.table] = end }
                for target in Self.keys(row.value(end.property)) { changes[end.table, default: .init()].add(row.id, target) }
            }
        }
        for row in transaction.updates {
            let joined = try layout(row.id.entity).derived.filter(\.ownsJoinTable)
            if joined.isEmpty { continue }
            let old = stored.known(row.id)
            for end in joined {
                if !end.joinEntityColumns.isEmpty { familyEnds[end.table] = end }
                let written = Self.keys(row.value(end.property))
                let was = Self.keys(old?.value(end.property) ?? .null)
                if written == was { continue }
                let before = Set(was), after = Set(written)
                for target in written where !before.contains(target) { changes[end.table, default: .init()].add(row.id, target) }
                for target in was where !after.contains(target) { changes[end.table, default: .init()].remove(row.id, target) }
            }
        }
        for d in transaction.deletes {
            for end in try layout(d.id.entity).derived where end.ownsJoinTable {
                if !end.joinEntityColumns.isEmpty { familyEnds[end.table] = end }
                changes[end.table, default: .init()].sourcesGone.append(d.id)
            }
        }
        // Tables in name order, pairs in key order: one order for every process, which keeps
        // deadlocks between two commits rare.
        for (table, change) in changes.sorted(by: { $0.key < $1.key }) {
            if let end = familyEnds[table] {
                try writeFamilyJoinChanges(change, of: end, on: c)
                continue
            }
            if !change.sourcesGone.isEmpty {
                try c.execute(
                    "DELETE FROM \(table) WHERE \"source\" = ANY($1::bigint[])",
                    [.text(ValueCoding.array(change.sourcesGone.map(\.primaryKey).sorted()))])
            }
            if !change.removes.isEmpty {
                let pairs = change.removes.map { ($0.0.primaryKey, $0.1.primaryKey) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
                try c.execute(
                    "DELETE FROM \(table) WHERE (\"source\", \"target\") IN (SELECT * FROM unnest($1::bigint[], $2::bigint[]))",
                    [.text(ValueCoding.array(pairs.map(\.0))), .text(ValueCoding.array(pairs.map(\.1)))])
            }
            if !change.adds.isEmpty {
                let pairs = change.adds.map { ($0.0.primaryKey, $0.1.primaryKey) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
                try c.execute(
                    "INSERT INTO \(table) (\"source\", \"target\") SELECT * FROM unnest($1::bigint[], $2::bigint[]) ON CONFLICT DO NOTHING",
                    [.text(ValueCoding.array(pairs.map(\.0))), .text(ValueCoding.array(pairs.map(\.1)))])
            }
        }
    }

    /// The rows a relationship value links to.
    private static func keys(_ value: StoreValue) -> [StoreRowID] {
        switch value {
        case let .references(ids): ids
        case let .reference(id): [id]
        default: []
        }
    }
}

/// What one commit changes in one join table: (source, target) row pairs.
struct JoinChanges {
    var adds: [(StoreRowID, StoreRowID)] = []
    var removes: [(StoreRowID, StoreRowID)] = []
    /// Owning rows deleted: every link of theirs goes.
    var sourcesGone: [StoreRowID] = []

    mutating func add(_ source: StoreRowID, _ target: StoreRowID) { adds.append((source, target)) }
    mutating func remove(_ source: StoreRowID, _ target: StoreRowID) { removes.append((source, target)) }
}

extension StoreRow {
    /// The value of property `i`; `.null` past the row's end.
    func value(_ i: Int) -> StoreValue { i < values.count ? values[i] : .null }
}
