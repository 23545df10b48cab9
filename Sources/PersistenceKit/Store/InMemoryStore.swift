import Foundation
import Synchronization

/// The type string of ``InMemoryStore``, as Core Data's `NSInMemoryStoreType`.
public let NSInMemoryStoreType = "InMemory"

/// A store that keeps rows in memory for the life of the process: fast, and gone when the
/// store is released. Useful for tests, previews and caches.
///
/// Uniqueness constraints are kept by a unique index per constraint (see `UniqueIndexes`),
/// built for an entity by the first commit that writes it.
///
/// With `tracksHistory`, it keeps persistent history in memory (see ``HistoryLog``), and
/// ``makeQueryGenerationSnapshot()`` pins a query generation: a copy of the tables, shared
/// with the store's until its next commit copies the tables that commit changes.
///
/// # Thread safety
/// All state is behind one lock; every method may be called from any thread. A commit is
/// applied under the lock in one step, so readers never see part of it.
public final class InMemoryStore: PersistentStore {
    private struct State {
        var tables: [Int32: [Int64: StoreRow]] = [:]
        var nextKey: [Int32: Int64] = [:]
        var unique = UniqueIndexes()
        /// The number of the last commit that wrote rows (history tokens).
        var lastToken: UInt64 = 0
        var history = HistoryLog()
        /// The application's metadata entries (``InMemoryStore/setMetadata(_:)``).
        var userMetadata: [String: String] = [:]
    }

    /// See ``PersistentStore``.
    public let identifier: String
    /// See ``PersistentStore``.
    public var type: String { NSInMemoryStoreType }
    /// See ``PersistentStore``.
    public let url: URL?
    /// See ``PersistentStore``.
    public var metadata: [String: String] {
        baseMetadata.merging(state.withLock { $0.userMetadata }) { base, _ in base }
    }
    /// The metadata the store sets itself (type, identifier, model hash).
    private let baseMetadata: [String: String]
    private let state: Lock<State>
    /// See ``PersistentStore/tracksHistory``.
    public let tracksHistory: Bool
    /// Set for a query generation's snapshot, which refuses every write.
    private let isSnapshot: Bool
    /// The properties whose values deleted rows leave in history, per entity.
    private let tombstoneColumns: [Int32: [Int]]
    /// Keeps both ends of each stored link in agreement at commit.
    private let links: LinkKeeper
    /// The model, for the destinations of relationships a predicate follows.
    private let model: NSManagedObjectModel
    /// The model's uniqueness constraints, each held across its family (empty: none).
    private let uniqueConstraints: UniqueConstraints

    /// Creates an empty in-memory store for `model`; with `tracksHistory`, it keeps the
    /// persistent history of its commits (``NSPersistentHistoryTrackingKey``).
    public convenience init(model: NSManagedObjectModel, url: URL? = nil, identifier: String = UUID().uuidString, tracksHistory: Bool = false) {
        self.init(model: model, url: url, identifier: identifier, tracksHistory: tracksHistory, state: State(), isSnapshot: false)
    }

    private init(model: NSManagedObjectModel, url: URL?, identifier: String, tracksHistory: Bool, state: State, isSnapshot: Bool) {
        // Sealed first: the link keeper reads the relationships' indexes and inverses, which
        // an unsealed model (a store made before any coordinator) does not have yet; without
        // this a deletion left the deleted row listed in its inverse to-manys.
        model.seal()
        self.state = Lock(state)
        self.tracksHistory = tracksHistory
        self.isSnapshot = isSnapshot
        self.tombstoneColumns = tracksHistory ? HistoryLog.tombstoneColumns(of: model) : [:]
        self.identifier = identifier
        self.url = url
        self.links = LinkKeeper(model: model)
        self.model = model
        self.uniqueConstraints = UniqueConstraints(model: model)
        self.baseMetadata = [
            NSStoreTypeKey: NSInMemoryStoreType,
            NSStoreUUIDKey: identifier,
            PersistenceKitModelLayoutHashKey: model.layoutHashString,
            "ModelVersionHash": model.versionHashString,
        ]
    }

    /// See ``PersistentStore``.
    public func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        try refuseIfSnapshot("allocating primary keys")
        return state.withLock { s in
            let first = s.nextKey[entity, default: 1]
            s.nextKey[entity] = first + Int64(max(count, 1))
            return first...(first + Int64(max(count, 1)) - 1)
        }
    }

    /// See ``PersistentStore``.
    public func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult {
        try refuseIfSnapshot("saving")
        return state.withLock { s in
            var conflicts: [StoreConflict] = []
            for row in transaction.updates {
                let current = s.tables[row.id.entity]?[row.id.primaryKey]
                if current?.version != row.version {
                    conflicts.append(StoreConflict(id: row.id, expectedVersion: row.version, current: current))
                }
            }
            for d in transaction.deletes {
                let current = s.tables[d.id.entity]?[d.id.primaryKey]
                if let current, current.version != d.expectedVersion {
                    conflicts.append(StoreConflict(id: d.id, expectedVersion: d.expectedVersion, current: current))
                }
            }
            if !conflicts.isEmpty { return .conflicts(conflicts) }
            if !uniqueConstraints.isEmpty {
                for number in s.unique.unbuiltConstraints(writtenBy: transaction, constraints: uniqueConstraints) {
                    let tables = s.tables
                    s.unique.build(number, constraints: uniqueConstraints) { visit in
                        // Every entity of the family, each in key order: the index covers
                        // the rows of all of them.
                        for entity in uniqueConstraints.all[number].members.sorted() {
                            for (_, row) in (tables[entity] ?? [:]).sorted(by: { $0.key < $1.key }) { visit(row.id, row.values) }
                        }
                    }
                }
                let tables = s.tables
                let clashes = s.unique.conflicts(in: transaction, constraints: uniqueConstraints) { tables[$0.entity]?[$0.primaryKey] }
                if !clashes.isEmpty { return .constraintConflicts(clashes) }
            }
            var transaction = transaction
            links.apply(to: &transaction) { id in s.tables[id.entity]?[id.primaryKey] }
            if !transaction.isEmpty {
                s.lastToken += 1
                if tracksHistory {
                    let tables = s.tables
                    let changes = HistoryLog.changes(of: transaction, tombstoneColumns: tombstoneColumns) { tables[$0.entity]?[$0.primaryKey] }
                    s.history.append(
                        StoreHistoryTransaction(
                            token: s.lastToken, timestamp: Date(), author: transaction.author, contextName: transaction.contextName,
                            changes: changes))
                }
            }
            var committed: [StoreRow] = []
            committed.reserveCapacity(transaction.inserts.count + transaction.updates.count)
            for var row in transaction.inserts {
                row.version = 1
                s.tables[row.id.entity, default: [:]][row.id.primaryKey] = row
                let next = s.nextKey[row.id.entity, default: 1]
                if row.id.primaryKey >= next { s.nextKey[row.id.entity] = row.id.primaryKey + 1 }
                committed.append(row)
            }
            for var row in transaction.updates {
                row.version += 1
                s.tables[row.id.entity, default: [:]][row.id.primaryKey] = row
                committed.append(row)
            }
            for d in transaction.deletes {
                s.tables[d.id.entity]?[d.id.primaryKey] = nil
            }
            if !uniqueConstraints.isEmpty { s.unique.apply(transaction, constraints: uniqueConstraints) }
            return .committed(committed)
        }
    }

    /// See ``PersistentStore``.
    public func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow] {
        let tables = state.withLock { $0.tables }
        let rows = Array((tables[entity] ?? [:]).values)
        guard let filter else { return rows.sorted { $0.id.primaryKey < $1.id.primaryKey } }
        let prepared = filter.predicate.map { PreparedStorePredicate($0, entity: entity, model: model) }
        let reader = Reader(tables: tables)
        return try rows.filter { row in try filter.matches(row) && (prepared?.evaluate(row, reader) ?? true) }
            .sorted { $0.id.primaryKey < $1.id.primaryKey }
    }

    /// See ``PersistentStore``.
    public func countRows(entity: Int32, filter: StoreFilter?) throws -> Int {
        let tables = state.withLock { $0.tables }
        guard let table = tables[entity] else { return 0 }
        guard let filter else { return table.count }
        let prepared = filter.predicate.map { PreparedStorePredicate($0, entity: entity, model: model) }
        let reader = Reader(tables: tables)
        return try table.values.reduce(0) { n, row in try filter.matches(row) && (prepared?.evaluate(row, reader) ?? true) ? n + 1 : n }
    }

    /// Reads rows of a copy of the tables (taken under the lock; copy-on-write makes it
    /// cheap) for a predicate.
    private struct Reader: StoreRowReader {
        let tables: [Int32: [Int64: StoreRow]]
        func value(_ column: Int, of row: StoreRow, entity: Int32) -> StoreValue { row.value(at: column) }
        func row(_ id: StoreRowID) -> StoreRow? { tables[id.entity]?[id.primaryKey] }
        func targets(_ column: Int, of row: StoreRow, entity: Int32) -> [StoreRowID] {
            if case let .references(ids) = row.value(at: column) { return ids }
            return []
        }
    }

    /// See ``PersistentStore``.
    public func fetchRow(_ id: StoreRowID) throws -> StoreRow? {
        state.withLock { $0.tables[id.entity]?[id.primaryKey] }
    }

    /// See ``PersistentStore/fetchRows(_:)``. Under one hold of the lock, so every row is
    /// read as of the same commit.
    public func fetchRows(_ ids: [StoreRowID]) throws -> [StoreRow] {
        state.withLock { s in ids.compactMap { s.tables[$0.entity]?[$0.primaryKey] } }
    }

    /// See ``PersistentStore``.
    public func containsRow(_ id: StoreRowID) throws -> Bool {
        state.withLock { $0.tables[id.entity]?[id.primaryKey] != nil }
    }

    // MARK: History and query generations

    /// See ``PersistentStore/currentHistoryToken``.
    public var currentHistoryToken: UInt64 { state.withLock { $0.lastToken } }

    /// See ``PersistentStore/fetchHistory(after:)``.
    public func fetchHistory(after bound: StoreHistoryBound) throws -> [StoreHistoryTransaction] {
        try state.withLock { s throws(CoreDataError) in try s.history.after(bound, store: identifier) }
    }

    /// See ``PersistentStore/deleteHistory(before:)``.
    public func deleteHistory(before bound: StoreHistoryBound) throws -> Int {
        try refuseIfSnapshot("deleting history")
        return state.withLock { s in s.history.deletionEnd(bound).map { s.history.delete(through: $0) } ?? 0 }
    }

    /// See ``PersistentStore/makeQueryGenerationSnapshot()``. Copies nothing now: the
    /// snapshot shares the tables until the store's next commit, which copies the tables it
    /// changes (O(rows of each entity the commit writes), once per pinned generation).
    public func makeQueryGenerationSnapshot() throws -> any PersistentStore {
        let copy = state.withLock { $0 }
        return InMemoryStore(model: model, url: url, identifier: identifier, tracksHistory: tracksHistory, state: copy, isSnapshot: true)
    }

    private func refuseIfSnapshot(_ what: String) throws(CoreDataError) {
        guard isSnapshot else { return }
        throw CoreDataError(
            .persistentStoreOperation,
            "\(what) failed: this is a read-only query generation of store \(identifier); write through the store itself.")
    }
}

extension InMemoryStore {
    /// See ``PersistentStore``. Replaces the application's metadata entries with those of
    /// `metadata` whose keys the store does not set itself; they live as long as the store.
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreOperation` for a query generation's snapshot.
    public func setMetadata(_ metadata: [String: String]) throws {
        try refuseIfSnapshot("setting metadata")
        let entries = metadata.filter { baseMetadata[$0.key] == nil }
        state.withLock { $0.userMetadata = entries }
    }
}
