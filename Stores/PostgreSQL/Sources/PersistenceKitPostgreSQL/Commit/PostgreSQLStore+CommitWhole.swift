import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// Commits `t` (inserts and updates of entities without links: nothing to lock or read
    /// first) in one round trip: `BEGIN`, the inserts, the updates, the `NOTIFY` and
    /// `COMMIT`, sent together.
    ///
    /// Each update fails when the stored row is not at the version the context read (see
    /// ``TableStatements/checkedUpdate``), so a conflict aborts the transaction on the
    /// server before `COMMIT` runs: nothing is written and no notification is sent, as when
    /// the statements go one by one. The conflicts are then read back after the rollback;
    /// nil (run the commit again) when none is left by then.
    ///
    /// - Throws: what ``PostgreSQLStore/commit(_:)`` throws; the caller rolls back.
    func commitWhole(_ t: StoreTransaction, _ tx: CommitTransaction) throws -> StoreCommitResult? {
        var statements = try insertStatements(t.inserts)
        for row in t.updates { statements.append(try updateStatement(row, checked: true)) }
        statements.append(notifyStatementComputingTxid(t))
        var conflicted = false
        do {
            _ = try tx.runCommitting(statements)
        } catch {
            guard error.sqlState == "22012" else { throw error }
            conflicted = true
        }
        if !conflicted { return committed(t) }
        try tx.connection.execute("ROLLBACK")
        let conflicts = try updateConflicts(t.updates, on: tx.connection)
        return conflicts.isEmpty ? nil : .conflicts(conflicts)
    }

    /// Whether rows of `entity` can be saved by ``commitWhole(_:_:)``: it has no links to
    /// keep (no row to lock or read first) and no derived ends (no join rows to write).
    func wholeCommits(_ entity: Int32) -> Bool {
        !support.hasLinks(entity) && Int(entity) < layouts.count && layouts[Int(entity)].derived.isEmpty
    }

    /// The rows of `updates` stored at another version than the one they expect (or gone),
    /// read in one round trip.
    private func updateConflicts(_ updates: [StoreRow], on c: PostgreSQLConnection) throws -> [StoreConflict] {
        let reads = updates.map {
            SQLStatement(sql: statements[Int($0.id.entity)].fetchByKey, parameters: [.text(String($0.id.primaryKey))], binary: true)
        }
        var results: [PostgreSQLResult] = []
        do {
            try c.pipeline(reads, into: &results)
        } catch {
            throw error.error
        }
        var conflicts: [StoreConflict] = []
        for (row, r) in zip(updates, results) {
            let current = r.count == 0 ? nil : try layout(row.id.entity).decodeRow(r, 0)
            if current?.version != row.version {
                conflicts.append(StoreConflict(id: row.id, expectedVersion: row.version, current: current))
            }
        }
        return conflicts
    }

    /// The rows a committed `t` leaves: its inserts at version 1, its updates one version on.
    func committed(_ t: StoreTransaction) -> StoreCommitResult {
        var rows: [StoreRow] = []
        rows.reserveCapacity(t.inserts.count + t.updates.count)
        for var row in t.inserts {
            row.version = 1
            rows.append(row)
        }
        for var row in t.updates {
            row.version += 1
            rows.append(row)
        }
        return .committed(rows)
    }

    /// The statement sending `t`'s changed row IDs on the store's channel, with the
    /// transaction's ID put into each payload by the server (the statement is sent before
    /// the ID comes back). The payloads are those of ``ChangeNotification/payloads(_:origin:txid:)``.
    func notifyStatementComputingTxid(_ t: StoreTransaction) -> SQLStatement {
        // With an empty ID a payload reads `<origin>  <rest>`: the rest follows the two spaces.
        let head = origin.utf8.count + 2
        let rests = ChangeNotification.payloads(t, origin: origin, txid: "").map { String($0.utf8.dropFirst(head)) ?? "" }
        // Payloads hold no quotes or backslashes, so quoting each element is enough.
        let array = "{" + rests.map { "\"" + $0 + "\"" }.joined(separator: ",") + "}"
        return SQLStatement(
            sql: "SELECT pg_notify($1, $2 || ' ' || txid_current() || ' ' || p) FROM unnest($3::text[]) WITH ORDINALITY AS u(p, n) "
                + "ORDER BY n",
            parameters: [.text(channel), .text(origin), .text(array)])
    }
}
