import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// See ``PersistentStore``. Keys come from the store's key table (`_pk_keys`), one
    /// contiguous range per call, committed at once: no other process or later open is ever
    /// handed the same keys, so ``recordAllocatedKeys(entities:)`` has nothing to do.
    /// (A PostgreSQL sequence hands out one value per `nextval`, and a range of them is not
    /// contiguous when processes draw at the same time.)
    public func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        try refuseIfReadOnly()
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
        try refuseIfReadOnly()
        try refuseNULText(in: transaction)
        var attempt = 0
        var unexplained = 0
        while true {
            attempt += 1
            do {
                if let result = try pool.withConnection({ c in try commitOnce(transaction, on: c) }) { return result }
                // A uniqueness clash the rows read afterwards no longer show: another save
                // took the value and gave it up meanwhile. Tried again, a few times; a clash
                // that never shows in the rows (a database constraint the model does not
                // declare) would otherwise be tried forever.
                unexplained += 1
                if unexplained >= 5 {
                    throw PostgreSQLStoreError(
                        .query, target: pool.target,
                        "the database refused the save as a uniqueness violation (SQLSTATE 23505) five times, and no stored "
                            + "object clashes with it under the model's uniqueness constraints; check the schema's constraints "
                            + "against the model. Nothing was written.",
                        sqlState: "23505")
                }
            } catch let e as PostgreSQLStoreError where e.isRetryable && attempt < 10 {
                // Aborted by PostgreSQL for another transaction's sake: nothing was written.
            } catch let e as PostgreSQLStoreError where e.kind == .connectionLost && attempt < 3 {
                // The connection was gone before the transaction began (`commitOnce` turns a
                // drop after that into `connectionLostDuringCommit`): nothing of it ran, so a
                // fresh connection runs it.
            }
        }
    }

    /// One attempt; nil when it must be run again (a uniqueness clash that was gone by the
    /// time it was looked at).
    ///
    /// Round trips: `BEGIN` with the first statements (the row locks, or else all writes),
    /// the writes (when locks came first), the join rows of changed many-to-manys, then
    /// `NOTIFY` with `COMMIT`; a save with nothing to lock, read or join is one round trip
    /// (``commitWhole(_:_:)``).
    private func commitOnce(_ transaction: StoreTransaction, on c: PostgreSQLConnection) throws -> StoreCommitResult? {
        let tx = CommitTransaction(connection: c)
        do {
            // Rows of entities with links are locked and read first: keeping the links needs
            // their stored values. The others are checked by the writes themselves
            // (`… WHERE "_pk" = $1 AND "_version" = $2`), one statement each, no read.
            var rows = RowLocks(store: self, transaction: tx)
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
            if tx.txid == nil && t.deletes.isEmpty && !t.inserts.contains(where: { !wholeCommits($0.id.entity) })
                && !t.updates.contains(where: { !wholeCommits($0.id.entity) })
            {
                // Nothing to lock or read first: the whole commit goes in one round trip.
                return try commitWhole(t, tx)
            }
            // Every write in one round trip (with `BEGIN` when nothing was locked above).
            var statements = try insertStatements(t.inserts)
            let firstUpdate = statements.count
            for row in t.updates { statements.append(try updateStatement(row)) }
            let firstDelete = statements.count
            let deletes = try deleteStatements(t.deletes)
            statements += deletes.map(\.statement)
            let results = try tx.run(statements)
            for (k, row) in t.updates.enumerated() where results[firstUpdate + k].affected != 1 {
                // Rows read above (linked, and those keeping links reached) are locked at the
                // version read: their write cannot miss.
                conflicts.append(StoreConflict(id: row.id, expectedVersion: row.version, current: try fetchRow(row.id, on: c)))
            }
            for (k, d) in deletes.enumerated() {
                conflicts += try deleteConflicts(d.group, removed: results[firstDelete + k], on: c)
            }
            if !conflicts.isEmpty {
                try c.execute("ROLLBACK")
                return .conflicts(conflicts)
            }
            try writeJoinedLinks(t, stored: rows, on: c)
            try tx.commit(notifying: notifyStatement(t, txid: tx.txid ?? ""))
            return committed(t)
        } catch let e as PostgreSQLStoreError where e.sqlState == "23505" {
            // A deferred unique constraint refused the commit: nothing was written. Report
            // the clashes as the other stores do, read as the database holds them now.
            if c.isHealthy { _ = try? c.execute("ROLLBACK") }
            let clashes = try support.constraintConflicts(
                in: transaction, storedRows: { entity in try self.allRows(entity, on: c) },
                stored: { id in try self.fetchRow(id, on: c) })
            return clashes.isEmpty ? nil : .constraintConflicts(clashes)
        } catch let e as PostgreSQLStoreError where e.kind == .connectionLost {
            // Before the transaction's ID came back it had not begun on the server's side as
            // far as this process knows, and nothing was committed: `commit` runs it again.
            guard tx.txid != nil || tx.commitSent else { throw e }
            throw try lostDuringCommit(e, txid: tx.txid, commitSent: tx.commitSent)
        } catch {
            // Also for deadlocks and serialization failures, which `commit` runs again.
            if c.isHealthy { _ = try? c.execute("ROLLBACK") }
            throw error
        }
    }

    /// The error for a connection that dropped during a commit, saying whether it committed:
    /// before `COMMIT` was sent it cannot have; after, the server is asked on a new
    /// connection (`txid_status`), when the transaction's ID came back before the drop.
    private func lostDuringCommit(_ e: PostgreSQLStoreError, txid: String?, commitSent: Bool) throws -> PostgreSQLStoreError {
        var outcome: PostgreSQLStoreError.CommitOutcome = .notCommitted
        if commitSent {
            outcome = .unknown
            if let txid, let fresh = try? pool.makeConnection(),
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

    /// The statements inserting `inserts` at version 1, many rows per statement.
    func insertStatements(_ inserts: [StoreRow]) throws -> [SQLStatement] {
        var byEntity: [Int32: [StoreRow]] = [:]
        var order: [Int32] = []
        for row in inserts {
            if byEntity[row.id.entity] == nil { order.append(row.id.entity) }
            byEntity[row.id.entity, default: []].append(row)
        }
        var statements: [SQLStatement] = []
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
                statements.append(SQLStatement(sql: sql, parameters: parameters, prepare: part.count == chunk || part.count == 1))
                start += chunk
            }
        }
        return statements
    }

    /// The statement writing `row` over the stored one at the next version, if the stored
    /// one is at the version `row` expects: it changes one row, or none when the stored row
    /// is at another version (or gone).
    func updateStatement(_ row: StoreRow, checked: Bool = false) throws -> SQLStatement {
        let t = try layout(row.id.entity)
        var parameters: [SQLParameter] = [.text(String(row.id.primaryKey))]
        parameters.reserveCapacity(t.columns.count + 2)
        for col in t.columns { parameters.append(try encode(row, col, t)) }
        parameters.append(.text(String(row.version)))
        let sql = checked ? statements[Int(row.id.entity)].checkedUpdate : statements[Int(row.id.entity)].update
        return SQLStatement(sql: sql, parameters: parameters)
    }

    /// The statements deleting rows at the versions expected, one per entity, each returning
    /// the keys it removed.
    private func deleteStatements(_ deletes: [(id: StoreRowID, expectedVersion: Int64)]) throws
        -> [(statement: SQLStatement, group: [(id: StoreRowID, expectedVersion: Int64)])]
    {
        try Dictionary(grouping: deletes, by: \.id.entity).sorted(by: { $0.key < $1.key }).map { entity, group in
            let t = try layout(entity)
            let statement = SQLStatement(
                sql: "DELETE FROM \(t.table) WHERE (\"_pk\", \"_version\") IN (SELECT * FROM unnest($1::bigint[], $2::bigint[])) "
                    + "RETURNING \"_pk\"",
                parameters: [
                    .text(ValueCoding.array(group.map(\.id.primaryKey))), .text(ValueCoding.array(group.map(\.expectedVersion))),
                ])
            return (statement, group)
        }
    }

    /// The conflicts of a delete statement: rows of `group` it did not remove that are stored
    /// at another version. (A row already gone is no conflict.)
    private func deleteConflicts(
        _ group: [(id: StoreRowID, expectedVersion: Int64)], removed r: PostgreSQLResult, on c: PostgreSQLConnection
    ) throws -> [StoreConflict] {
        if r.count == Set(group.map(\.id)).count { return [] }
        var conflicts: [StoreConflict] = []
        let removed = Set((0..<r.count).map { r.int64($0, 0) })
        for d in group where !removed.contains(d.id.primaryKey) {
            if let current = try fetchRow(d.id, on: c) {
                conflicts.append(StoreConflict(id: d.id, expectedVersion: d.expectedVersion, current: current))
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
