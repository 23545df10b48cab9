import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// See ``PersistentStore``. Keys come from the store's key table (`_pk_keys`), one
    /// contiguous range per call, committed at once: no other process or later open is ever
    /// handed the same keys, so ``recordAllocatedKeys(entities:)`` has nothing to do.
    /// (A PostgreSQL sequence hands out one value per `nextval`, and a range of them is not
    /// contiguous when processes draw at the same time.)
    public func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        let t = try layout(entity)
        let n = Int64(max(count, 1))
        // Run again on a fresh connection if the first was gone: at worst a range is skipped,
        // never handed out twice.
        let first = try pool.read { c in
            let r = try c.execute(
                "UPDATE \(keysTable) SET next = next + $2 WHERE entity = $1 RETURNING next - $2",
                [.text(t.entityName), .text(String(n))])
            guard r.count == 1 else {
                throw PostgreSQLStoreError(.query, target: pool.target, "the key table has no row for entity \(t.entityName).")
            }
            return r.int64(0, 0)
        }
        return first...(first + n - 1)
    }

    var keysTable: String { "\(quote(schema)).\(quote("_pk_keys"))" }

    /// See ``PersistentStore``. One transaction: the rows it updates or deletes are locked
    /// and their versions checked, links are kept in agreement (rows reached that way are
    /// locked too), rows are written, and the changed row IDs are sent with `NOTIFY`, which
    /// PostgreSQL delivers only if the transaction commits.
    ///
    /// A transaction PostgreSQL aborts as a deadlock or serialization failure with another
    /// process's (nothing of it was written) is run again, up to 10 times.
    ///
    /// - Throws: ``PostgreSQLStoreError`` `.connectionLostDuringCommit` when the connection
    ///   dropped while the transaction ran, with ``PostgreSQLStoreError/commitOutcome``
    ///   saying whether it committed (asked of the server on a new connection); `.query` when
    ///   the server refused a statement (nothing written).
    public func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult {
        if transaction.isEmpty { return .committed([]) }
        try refuseNULText(in: transaction)
        var attempt = 0
        while true {
            attempt += 1
            do {
                if let result = try pool.withConnection({ c in try commitOnce(transaction, on: c) }) { return result }
            } catch let e as PostgreSQLStoreError where e.isRetryable && attempt < 10 {
                // Aborted by PostgreSQL for another transaction's sake: nothing was written.
            } catch let e as PostgreSQLStoreError where e.kind == .connectionLost && attempt < 3 {
                // The connection was gone before the transaction began (`commitOnce` turns a
                // drop after that into `connectionLostDuringCommit`): nothing was sent, so a
                // fresh connection runs it.
            }
        }
    }

    /// One attempt; nil when it must be run again (a uniqueness clash that was gone by the
    /// time it was looked at).
    private func commitOnce(_ transaction: StoreTransaction, on c: PostgreSQLConnection) throws -> StoreCommitResult? {
        // A drop here is reported as is (`connectionLost`): no statement of the save ran.
        let txid = try c.execute("BEGIN; SELECT txid_current()").text(0, 0)
        var commitSent = false
        do {
            // Rows of entities with links are locked and read first: keeping the links needs
            // their stored values. The others are checked by the writes themselves
            // (`… WHERE "_pk" = $1 AND "_version" = $2`), one statement each, no read.
            var rows = RowLocks(store: self, connection: c)
            try rows.lock(
                transaction.updates.lazy.map(\.id).filter { self.support.hasLinks($0.entity) }
                    + transaction.deletes.lazy.map(\.id).filter { self.support.hasLinks($0.entity) })
            var conflicts: [StoreConflict] = []
            for row in transaction.updates where support.hasLinks(row.id.entity) {
                let current = rows.known(row.id)
                if current?.version != row.version {
                    conflicts.append(StoreConflict(id: row.id, expectedVersion: row.version, current: current))
                }
            }
            for d in transaction.deletes where support.hasLinks(d.id.entity) {
                if let current = rows.known(d.id), current.version != d.expectedVersion {
                    conflicts.append(StoreConflict(id: d.id, expectedVersion: d.expectedVersion, current: current))
                }
            }
            if !conflicts.isEmpty {
                try c.execute("ROLLBACK")
                return .conflicts(conflicts)
            }
            var t = transaction
            try support.keepLinks(of: &t) { id in try rows.row(id) }
            try writeInserts(t.inserts, on: c)
            for row in t.updates {
                // Rows read above (linked, and those keeping links reached) are locked at the
                // version read: their write cannot miss.
                if !(try writeUpdate(row, on: c)) {
                    conflicts.append(StoreConflict(id: row.id, expectedVersion: row.version, current: try fetchRow(row.id, on: c)))
                }
            }
            conflicts += try writeDeletes(t.deletes, on: c)
            if !conflicts.isEmpty {
                try c.execute("ROLLBACK")
                return .conflicts(conflicts)
            }
            try writeJoinedLinks(t, stored: rows, on: c)
            try notify(t, txid: txid, on: c)
            commitSent = true
            try c.execute("COMMIT")
            var committed: [StoreRow] = []
            committed.reserveCapacity(t.inserts.count + t.updates.count)
            for var row in t.inserts {
                row.version = 1
                committed.append(row)
            }
            for var row in t.updates {
                row.version += 1
                committed.append(row)
            }
            return .committed(committed)
        } catch let e as PostgreSQLStoreError where e.sqlState == "23505" {
            // A deferred unique constraint refused the commit: nothing was written. Report
            // the clashes as the other stores do, read as the database holds them now.
            if c.isHealthy { _ = try? c.execute("ROLLBACK") }
            let clashes = try support.constraintConflicts(
                in: transaction, storedRows: { entity in try self.allRows(entity, on: c) },
                stored: { id in try self.fetchRow(id, on: c) })
            return clashes.isEmpty ? nil : .constraintConflicts(clashes)
        } catch let e as PostgreSQLStoreError where e.kind == .connectionLost {
            throw try lostDuringCommit(e, txid: txid, commitSent: commitSent)
        } catch {
            // Also for deadlocks and serialization failures, which `commit` runs again.
            if c.isHealthy { _ = try? c.execute("ROLLBACK") }
            throw error
        }
    }

    /// The error for a connection that dropped during a commit, saying whether it committed:
    /// before `COMMIT` was sent it cannot have; after, the server is asked on a new
    /// connection (`txid_status`).
    private func lostDuringCommit(_ e: PostgreSQLStoreError, txid: String, commitSent: Bool) throws -> PostgreSQLStoreError {
        var outcome: PostgreSQLStoreError.CommitOutcome = .notCommitted
        if commitSent {
            outcome = .unknown
            if let fresh = try? pool.makeConnection(),
                let status = try? fresh.execute("SELECT txid_status($1)", [.text(txid)], prepare: false), status.count == 1
            {
                switch status.text(0, 0) {
                case "committed": outcome = .committed
                case "aborted": outcome = .notCommitted
                default: outcome = .unknown
                }
            }
        }
        let advice: String =
            switch outcome {
            case .committed: "the save is in the database; refresh the context's objects"
            case .notCommitted: "nothing of the save is in the database; save again"
            case .unknown: "the server could not be asked whether the save committed; it is wholly in the database or wholly absent"
            }
        return PostgreSQLStoreError(
            .connectionLostDuringCommit, target: pool.target, "the connection dropped during a save (\(e.message)): \(advice).",
            sqlState: e.sqlState, commitOutcome: outcome)
    }

    // MARK: Writing

    /// Inserts rows at version 1, many per statement.
    private func writeInserts(_ inserts: [StoreRow], on c: PostgreSQLConnection) throws {
        var byEntity: [Int32: [StoreRow]] = [:]
        var order: [Int32] = []
        for row in inserts {
            if byEntity[row.id.entity] == nil { order.append(row.id.entity) }
            byEntity[row.id.entity, default: []].append(row)
        }
        for entity in order {
            let t = try layout(entity)
            let rows = byEntity[entity] ?? []
            let perRow = t.columns.count + 1
            // PostgreSQL takes at most 65,535 parameters per statement.
            let chunk = max(1, min(500, 30_000 / perRow))
            var start = 0
            while start < rows.count {
                let part = rows[start..<min(rows.count, start + chunk)]
                var tuples: [String] = []
                var parameters: [SQLParameter] = []
                parameters.reserveCapacity(part.count * perRow)
                for row in part {
                    let base = parameters.count
                    tuples.append("($\(base + 1), 1" + t.columns.indices.map { ", $\(base + 2 + $0)" }.joined() + ")")
                    parameters.append(.text(String(row.id.primaryKey)))
                    for col in t.columns { parameters.append(try encode(row, col, t)) }
                }
                let sql = "INSERT INTO \(t.table) (\(t.columnList)) VALUES " + tuples.joined(separator: ", ")
                try c.execute(sql, parameters, prepare: part.count == chunk || part.count == 1)
                start += chunk
            }
        }
    }

    /// Writes `row` over the stored one at the next version, if the stored one is at the
    /// version `row` expects; false when it is not (or is gone).
    private func writeUpdate(_ row: StoreRow, on c: PostgreSQLConnection) throws -> Bool {
        let t = try layout(row.id.entity)
        var parameters: [SQLParameter] = [.text(String(row.id.primaryKey))]
        parameters.reserveCapacity(t.columns.count + 2)
        for col in t.columns { parameters.append(try encode(row, col, t)) }
        parameters.append(.text(String(row.version)))
        let n = t.columns.count
        let sets = t.columns.enumerated().map { "\($1.quoted) = $\($0 + 2)" } + ["\"_version\" = $\(n + 2) + 1"]
        let sql = "UPDATE \(t.table) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = $1 AND \"_version\" = $\(n + 2)"
        return try c.execute(sql, parameters).affected == 1
    }

    /// Deletes the rows at the versions expected, one statement per entity; returns the
    /// conflicts: rows stored at another version. (A row already gone is no conflict.)
    private func writeDeletes(_ deletes: [(id: StoreRowID, expectedVersion: Int64)], on c: PostgreSQLConnection) throws
        -> [StoreConflict]
    {
        var conflicts: [StoreConflict] = []
        for (entity, group) in Dictionary(grouping: deletes, by: \.id.entity).sorted(by: { $0.key < $1.key }) {
            let t = try layout(entity)
            let r = try c.execute(
                "DELETE FROM \(t.table) WHERE (\"_pk\", \"_version\") IN (SELECT * FROM unnest($1::bigint[], $2::bigint[])) "
                    + "RETURNING \"_pk\"",
                [.text(ValueCoding.array(group.map(\.id.primaryKey))), .text(ValueCoding.array(group.map(\.expectedVersion)))])
            if r.count == Set(group.map(\.id)).count { continue }
            let removed = Set((0..<r.count).map { r.int64($0, 0) })
            for d in group where !removed.contains(d.id.primaryKey) {
                if let current = try fetchRow(d.id, on: c) {
                    conflicts.append(StoreConflict(id: d.id, expectedVersion: d.expectedVersion, current: current))
                }
            }
        }
        return conflicts
    }

    /// The parameter for `column` of `row`.
    private func encode(_ row: StoreRow, _ column: Column, _ t: TableLayout) throws -> SQLParameter {
        let value = column.property < row.values.count ? row.values[column.property] : .null
        guard let p = ValueCoding.encode(value, column.kind) else {
            throw PostgreSQLStoreError(
                .query, target: pool.target,
                "\(t.entityName) row \(row.id.primaryKey) holds \(value) for a \(column.kind.sqlType) column \(column.quoted); "
                    + "nothing was written.")
        }
        return p
    }

    // MARK: Reading inside a commit

    /// Every row of `entity`, for reporting uniqueness clashes.
    func allRows(_ entity: Int32, on c: PostgreSQLConnection) throws -> [StoreRow] {
        let t = try layout(entity)
        let r = try c.execute("SELECT \(t.selectList) FROM \(t.table) ORDER BY \"_pk\"", [], prepare: false, binary: true)
        return (0..<r.count).map { t.decodeRow(r, $0) }
    }
}

extension PostgreSQLStoreError {
    /// Whether PostgreSQL aborted the transaction only because of another one (deadlock,
    /// serialization failure), so that running it again may succeed.
    var isRetryable: Bool { sqlState == "40P01" || sqlState == "40001" }
}

/// The rows a commit has locked (`SELECT … FOR UPDATE`), read once each.
struct RowLocks {
    let store: PostgreSQLStore
    let connection: PostgreSQLConnection
    private var rows: [StoreRowID: StoreRow?] = [:]

    init(store: PostgreSQLStore, connection: PostgreSQLConnection) {
        self.store = store
        self.connection = connection
    }

    /// Locks and reads `ids`, entity by entity in key order (one order for every process,
    /// which keeps deadlocks between two commits rare).
    mutating func lock(_ ids: [StoreRowID]) throws {
        for (entity, keys) in Dictionary(grouping: ids, by: \.entity).sorted(by: { $0.key < $1.key }) {
            let t = try store.layout(entity)
            let sorted = Array(Set(keys.map(\.primaryKey))).sorted()
            let r = try lockAndRead(t, ValueCoding.array(sorted))
            for pk in sorted { rows[StoreRowID(entity: entity, primaryKey: pk)] = .some(nil) }
            for i in 0..<r.count {
                let row = t.decodeRow(r, i)
                rows[row.id] = row
            }
        }
    }

    /// A row already locked (nil when it is missing or not read).
    func known(_ id: StoreRowID) -> StoreRow? { rows[id] ?? nil }

    /// The row, locked and read on first use.
    mutating func row(_ id: StoreRowID) throws -> StoreRow? {
        if let known = rows[id] { return known }
        try lock([id])
        return rows[id] ?? nil
    }
}
