import Foundation
import PersistenceKit

/// The transaction of one commit attempt on one connection. `BEGIN` is not sent on its own:
/// it goes in the same round trip as the transaction's first statements, and `COMMIT` in
/// the same round trip as the `NOTIFY`, so that a save of rows without links takes two
/// round trips (begin and write; notify and commit).
final class CommitTransaction {
    let connection: PostgreSQLConnection
    /// The transaction's ID (`txid_current()`), once `BEGIN` ran; nil before. A commit whose
    /// connection drops before it is known had not begun, and runs again on a fresh one.
    private(set) var txid: String?
    /// Whether `COMMIT` may have run (then a dropped connection leaves the outcome to ask).
    private(set) var commitSent = false

    init(connection: PostgreSQLConnection) {
        self.connection = connection
    }

    /// Runs `statements` inside the transaction in one round trip, beginning the transaction
    /// in the same round trip when it has not begun yet.
    ///
    /// With `waits` (statements that may wait on other transactions' row locks), the server
    /// is asked to send `BEGIN`'s results before it runs them, so that a connection lost
    /// while they wait is known to have been inside the transaction: the commit is reported
    /// as dropped (not committed) rather than run again behind the same lock. Writes need no
    /// such request: the server sends what it holds before the message of a connection it
    /// ends, and one answer fewer to wait for saves a wakeup per save.
    ///
    /// - Throws: the first failing statement's ``PostgreSQLStoreError``; the statements after
    ///   it did not run.
    func run(_ statements: [SQLStatement], waits: Bool = false) throws(PostgreSQLStoreError) -> [PostgreSQLResult] {
        if txid != nil {
            do {
                return try connection.pipeline(statements)
            } catch {
                throw error.error
            }
        }
        let head = [SQLStatement(sql: "BEGIN", prepare: false), SQLStatement(sql: "SELECT txid_current()")]
        var results: [PostgreSQLResult] = []
        do {
            try connection.pipeline(head + statements, flushAfter: waits ? head.count : nil, into: &results)
            txid = results[1].text(0, 0)
            return Array(results.dropFirst(head.count))
        } catch {
            if results.count >= head.count { txid = results[1].text(0, 0) }
            throw error.error
        }
    }

    /// Runs the whole transaction in one round trip: `BEGIN`, `statements` and `COMMIT`.
    /// The first statement that fails stops the rest, `COMMIT` included, and leaves the
    /// transaction aborted (to be rolled back). The server is asked to send the
    /// transaction's ID before it runs `statements`, so that a connection lost after that
    /// can ask the server whether the transaction committed.
    ///
    /// A connection found closed before sending, or one the server closed with a message
    /// before the ID came back (its messages arrive in order, so nothing after `BEGIN`
    /// ran), throws with ``commitSent`` false: nothing committed, and the commit runs
    /// again on a fresh connection. Only a connection that vanished without a word after
    /// the statements went out leaves the outcome unknown.
    func runCommitting(_ statements: [SQLStatement]) throws(PostgreSQLStoreError) -> [PostgreSQLResult] {
        precondition(txid == nil, "a transaction is begun once")
        // A connection the server closed while it sat idle in the pool shows it here.
        try connection.consumeInput()
        let head = [SQLStatement(sql: "BEGIN", prepare: false), SQLStatement(sql: "SELECT txid_current()")]
        var results: [PostgreSQLResult] = []
        commitSent = true
        do {
            let all = head + statements + [SQLStatement(sql: "COMMIT", prepare: false)]
            try connection.pipeline(all, flushAfter: head.count, into: &results)
        } catch {
            if results.count >= head.count {
                txid = results[1].text(0, 0)
            } else if error.error.sqlState != nil {
                commitSent = false
            }
            throw error.error
        }
        txid = results[1].text(0, 0)
        return Array(results[head.count..<(head.count + statements.count)])
    }

    /// Sends `notify` and `COMMIT` in one round trip.
    ///
    /// - Throws: the error of the `NOTIFY` (nothing committed) or of the `COMMIT` (a deferred
    ///   constraint refused it: nothing committed).
    func commit(notifying notify: SQLStatement) throws(PostgreSQLStoreError) {
        commitSent = true
        _ = try run([notify, SQLStatement(sql: "COMMIT", prepare: false)])
    }
}

/// The rows a commit has locked (`SELECT … FOR UPDATE`), read once each.
struct RowLocks {
    let store: PostgreSQLStore
    let transaction: CommitTransaction
    private var rows: [StoreRowID: StoreRow?] = [:]

    init(store: PostgreSQLStore, transaction: CommitTransaction) {
        self.store = store
        self.transaction = transaction
    }

    /// Locks and reads `ids`, entity by entity in key order (one order for every process,
    /// which keeps deadlocks between two commits rare), all entities in one round trip.
    mutating func lock(_ ids: [StoreRowID]) throws {
        if ids.isEmpty { return }
        var statements: [SQLStatement] = []
        // Each entity's rows come back in the result at this position.
        var reads: [(layout: TableLayout, result: Int)] = []
        for (entity, keys) in Dictionary(grouping: ids, by: \.entity).sorted(by: { $0.key < $1.key }) {
            let t = try store.layout(entity)
            let sorted = Array(Set(keys.map(\.primaryKey))).sorted()
            let parameters: [SQLParameter] = [.text(ValueCoding.array(sorted))]
            let select = "SELECT \(t.selectList) FROM \(t.table) WHERE \"_pk\" = ANY($1::bigint[]) ORDER BY \"_pk\""
            if t.derived.isEmpty {
                statements.append(SQLStatement(sql: select + " FOR UPDATE", parameters: parameters, binary: true))
            } else {
                // A table with ends read from other tables is locked first and read by the next
                // statement: a `FOR UPDATE` that waited for another commit rechecks the locked
                // row but answers its subqueries as of its start, so one statement would miss
                // the links that commit made and the commit would hand back a stale list. (The
                // read starts after the lock is held: a pipeline runs its statements in order.)
                statements.append(
                    SQLStatement(
                        sql: "SELECT 1 FROM \(t.table) WHERE \"_pk\" = ANY($1::bigint[]) ORDER BY \"_pk\" FOR UPDATE",
                        parameters: parameters))
                statements.append(SQLStatement(sql: select, parameters: parameters, binary: true))
            }
            reads.append((t, statements.count - 1))
            for pk in sorted { rows[StoreRowID(entity: entity, primaryKey: pk)] = .some(nil) }
        }
        let results = try transaction.run(statements, waits: true)
        for (t, index) in reads {
            let r = results[index]
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
