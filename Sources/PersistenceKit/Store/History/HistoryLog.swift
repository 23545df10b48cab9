import Foundation

/// The persistent history a built-in store keeps in memory: its transactions in token
/// order. ``InMemoryStore`` keeps only this; ``FileStore`` also writes each transaction into
/// the record of the save it describes (see Docs/StoreFormat.md) and rebuilds the log from
/// the file when it opens.
///
/// Not thread-safe: a store keeps it under its own lock.
struct HistoryLog: Sendable {
    /// Kept transactions, ascending by token.
    private(set) var transactions: [StoreHistoryTransaction] = []

    /// The highest token of a transaction deleted so far (0: none): a fetch after an earlier
    /// token would miss deleted transactions, and is refused as expired.
    private(set) var deletedThrough: UInt64 = 0

    /// The sizes given with the kept transactions, in their order (the file store's encoded
    /// sizes, which count as live data for compaction), and their sum.
    private var sizes: [Int] = []
    private(set) var byteCount = 0

    /// Whether no transaction is kept.
    var isEmpty: Bool { transactions.isEmpty }

    /// Adds a transaction taking `size` bytes; its token must be above every kept one's.
    mutating func append(_ transaction: StoreHistoryTransaction, size: Int = 0) {
        assert(transactions.last.map { $0.token < transaction.token } ?? true, "history tokens only grow")
        transactions.append(transaction)
        sizes.append(size)
        byteCount += size
    }

    /// The transactions after `bound`, in token order.
    ///
    /// - Throws: ``CoreDataError`` `.persistentHistoryTokenExpired` for a token before
    ///   history that was deleted.
    func after(_ bound: StoreHistoryBound, store: String) throws(CoreDataError) -> [StoreHistoryTransaction] {
        switch bound {
        case .all: return transactions
        case let .token(t):
            guard t >= deletedThrough else {
                throw CoreDataError(
                    .persistentHistoryTokenExpired,
                    "the history token \(t) of store \(store) is older than history deleted up to transaction "
                        + "\(deletedThrough): the changes after it are partly gone. Fetch from the start "
                        + "(fetchHistory(after: nil as NSPersistentHistoryToken?)) or from a newer token.")
            }
            let start = firstIndex { $0.token > t }
            return Array(transactions[start...])
        case let .date(d): return transactions.filter { $0.timestamp > d }
        }
    }

    /// The token through which `delete(before: bound)` would delete: the highest token of a
    /// kept transaction it removes; nil when it removes none.
    func deletionEnd(_ bound: StoreHistoryBound) -> UInt64? {
        let end: Int
        switch bound {
        case .all: end = transactions.count
        case let .token(t): end = firstIndex { $0.token > t }
        // Timestamps ascend with tokens but for clock steps back: the transactions before the
        // first one at or after `d` go.
        case let .date(d): end = transactions.firstIndex { $0.timestamp >= d } ?? transactions.count
        }
        return end > 0 ? transactions[end - 1].token : nil
    }

    /// Removes the transactions numbered `token` or less; returns how many went.
    @discardableResult
    mutating func delete(through token: UInt64) -> Int {
        let end = firstIndex { $0.token > token }
        transactions.removeFirst(end)
        byteCount -= sizes[..<end].reduce(0, +)
        sizes.removeFirst(end)
        deletedThrough = max(deletedThrough, token)
        return end
    }

    /// The index of the first transaction for which `holds` is true (`holds` is false for a
    /// prefix and true after it: tokens ascend).
    private func firstIndex(where holds: (StoreHistoryTransaction) -> Bool) -> Int {
        var low = 0
        var high = transactions.count
        while low < high {
            let mid = (low + high) / 2
            if holds(transactions[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }

    /// The changes `transaction` makes, as history records them: an insert per inserted row,
    /// an update per updated row whose stored values change (with the properties that do),
    /// and a delete per deleted row that exists (with the values of `tombstoneColumns`).
    /// `stored` gives a row as the store holds it before the transaction.
    ///
    /// Called with the transaction as the store commits it (link upkeep applied), before its
    /// rows are applied.
    static func changes<E: Error>(
        of transaction: StoreTransaction, tombstoneColumns: [Int32: [Int]], stored: (StoreRowID) throws(E) -> StoreRow?
    ) throws(E) -> [StoreHistoryChange] {
        var changes: [StoreHistoryChange] = []
        changes.reserveCapacity(transaction.inserts.count + transaction.updates.count + transaction.deletes.count)
        for row in transaction.inserts { changes.append(StoreHistoryChange(kind: .insert, row: row.id)) }
        for row in transaction.updates {
            let old = try stored(row.id)
            let count = max(row.values.count, old?.values.count ?? 0)
            var columns: [Int] = []
            for i in 0..<count where !sameStoredValue(row.value(at: i), old?.value(at: i) ?? .null) { columns.append(i) }
            if !columns.isEmpty { changes.append(StoreHistoryChange(kind: .update, row: row.id, updatedColumns: columns)) }
        }
        for d in transaction.deletes {
            guard let old = try stored(d.id) else { continue }
            let tombstone = (tombstoneColumns[d.id.entity] ?? []).map { StoreTombstoneValue(column: $0, value: old.value(at: $0)) }
            changes.append(StoreHistoryChange(kind: .delete, row: d.id, tombstone: tombstone))
        }
        return changes
    }

    /// Whether two values of one property are the same as stored: to-many lists compare as
    /// sets (a writer may list a relationship's rows in any order; the store keeps them in
    /// row order).
    private static func sameStoredValue(_ a: StoreValue, _ b: StoreValue) -> Bool {
        if a == b { return true }
        if case let .references(x) = a, case let .references(y) = b { return x.count == y.count && x.sorted() == y.sorted() }
        return false
    }

    /// The properties whose values a deleted row leaves in its history (attributes marked
    /// ``NSAttributeDescription/preservesValueInHistoryOnDeletion``), per entity.
    static func tombstoneColumns(of model: NSManagedObjectModel) -> [Int32: [Int]] {
        var result: [Int32: [Int]] = [:]
        for e in model.entities {
            let columns = e.properties.indices.filter { i in
                (e.properties[i] as? NSAttributeDescription).map { $0.preservesValueInHistoryOnDeletion && !$0.isTransient } ?? false
            }
            if !columns.isEmpty { result[e.index] = columns }
        }
        return result
    }
}
