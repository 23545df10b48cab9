import Foundation

/// The contract between a coordinator and a store. ``InMemoryStore`` and ``FileStore``
/// implement it.
///
/// # What an implementer must guarantee
/// - ``commit(_:)`` is atomic: either every insert, update and delete of the transaction is
///   applied (and visible to every later read) or none is. Updates and deletes whose
///   expected version differs from the stored one make the whole transaction fail with
///   ``StoreCommitResult/conflicts(_:)`` and change nothing.
/// - No commit leaves two rows of an entity with equal non-null values for every attribute
///   of one of its uniqueness constraints: such a transaction fails with
///   ``StoreCommitResult/constraintConflicts(_:)`` and changes nothing. (The built-in stores
///   keep a unique index per constraint: see `UniqueIndexes`.)
/// - Each committed row gets version `expected + 1` (1 for inserts).
/// - Reads never see part of a transaction.
/// - Every method is safe to call from any thread. The coordinator serializes commits, but
///   reads may run concurrently with each other and with a commit.
/// - Errors are thrown as typed errors naming the store and what failed; a failed commit
///   leaves the store as it was.
public protocol PersistentStore: AnyObject, Sendable {
    /// The store's unique, stable identifier (used in object ID URIs).
    var identifier: String { get }
    /// The store type (for example ``NSInMemoryStoreType``).
    var type: String { get }
    /// Where the store lives, if anywhere.
    var url: URL? { get }
    /// Key-value metadata (store identifier, model version hash, …).
    var metadata: [String: String] { get }
    /// Replaces the application's metadata entries (``NSPersistentStoreCoordinator/setMetadata(_:for:)``):
    /// afterwards ``metadata`` holds the store's own keys (which `metadata` cannot change)
    /// and those of `metadata`'s other entries, which are durable when the store is. (A
    /// default is provided: it throws ``CoreDataError`` `.persistentStoreOperation`.)
    func setMetadata(_ metadata: [String: String]) throws
    /// Whether the store is read-only by its own account (opened so): a coordinator then
    /// refuses every write to it with ``CoreDataError`` `.persistentStoreSave` before
    /// calling ``commit(_:)``. (A default is provided: `false`.)
    var isReadOnly: Bool { get }

    /// Hands out `count` fresh primary keys for `entity`, above every key saved and every key
    /// handed out since the store opened. A commit that inserts rows makes the counter of
    /// their entities durable; ``recordAllocatedKeys(entities:)`` does it without a commit.
    /// Keys may be any `Int64` but `Int64.min` (the built-in stores start at 1).
    func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64>
    /// Makes the keys handed out so far for `entities` durable: once this returns they are
    /// never handed out again, even after the store is reopened or the process crashed.
    /// `obtainPermanentIDs(for:)` calls it, as Core Data records the highest key in the store
    /// at once. (A default is provided: nothing, right for a store that keeps nothing across
    /// a reopen.)
    func recordAllocatedKeys(entities: [Int32]) throws
    /// Applies a transaction atomically, or reports conflicts and applies nothing.
    ///
    /// The two ends of every link must agree once it is applied: a link is as its owning
    /// end has it (the to-one end of a one-to-many; of two like ends, the one whose entity
    /// and relationship names sort first), the other end follows, and a deleted row leaves
    /// the rows linking to it (owning ends keep it under a "no action" rule). The committed rows are
    /// the transaction's inserts then updates as written, then any other rows written to
    /// keep the ends in agreement. (Both stores here do this with the internal `LinkKeeper`.)
    func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult
    /// The rows of `entity` that pass `filter` (all rows when `nil`), in primary-key order.
    func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow]
    /// The rows of `entity` that pass `filter`, in `order` (rows equal on every key in
    /// primary-key order), the first `offset` left out, at most `limit` of them (0: no
    /// limit). A default sorts what ``fetchRows(entity:filter:)`` returns.
    func fetchRows(entity: Int32, filter: StoreFilter?, order: [StoreSortKey], offset: Int, limit: Int) throws -> [StoreRow]
    /// How the store would answer a read of `entity` with `filter`: the index it would read.
    /// (A default says: a scan.)
    func plan(entity: Int32, filter: StoreFilter?) -> StorePlan
    /// The number of rows of `entity` that pass `filter`.
    func countRows(entity: Int32, filter: StoreFilter?) throws -> Int
    /// One row by ID, or `nil` when there is none.
    func fetchRow(_ id: StoreRowID) throws -> StoreRow?
    /// The rows of `ids` that exist, in the order of `ids` (a row listed twice comes back
    /// twice); rows the store does not hold are left out. All of them are read as of one
    /// moment: no commit lands between two of them. A default calls ``fetchRow(_:)`` per ID
    /// (which gives no such guarantee); implement it to read them in one pass.
    func fetchRows(_ ids: [StoreRowID]) throws -> [StoreRow]
    /// Whether the row exists. Implement it when the answer is cheaper than fetching the
    /// row; the default fetches it.
    func containsRow(_ id: StoreRowID) throws -> Bool
    /// The row's version, or `nil` when there is no such row. Implement it when the answer is
    /// cheaper than fetching the row; the default fetches it.
    func rowVersion(_ id: StoreRowID) throws -> Int64?

    // MARK: Persistent history and query generations (optional)

    /// Whether the store records persistent history: then each committed transaction that
    /// changes rows is kept, with its author, context name, time and changes (see
    /// ``StoreHistoryTransaction``), in the same atomic step as its rows, until
    /// ``deleteHistory(before:)`` removes it. (Default: `false`.)
    var tracksHistory: Bool { get }
    /// The number of the last transaction the store committed (0 before the first): the
    /// token a history fetch after "now" starts from. (Default: 0.)
    var currentHistoryToken: UInt64 { get }
    /// The kept history transactions after `bound`, in commit order.
    ///
    /// - Throws: ``CoreDataError`` `.persistentHistoryTokenExpired` when `bound` is a token
    ///   older than history deleted since; `.persistentStoreOperation` from a store that keeps
    ///   no history (the default); the store's own error when it cannot read its history (for
    ///   a damaged file store, ``FileStoreError`` `.corrupt` naming the file and offset).
    func fetchHistory(after bound: StoreHistoryBound) throws -> [StoreHistoryTransaction]
    /// Removes the kept history transactions up to `bound`; returns how many went. The store's
    /// rows are not touched. (Default: throws `.persistentStoreOperation`.)
    func deleteHistory(before bound: StoreHistoryBound) throws -> Int
    /// A read-only view of the store as it is now, for a pinned query generation: its reads
    /// answer as of this moment whatever is committed later, and it refuses commits.
    /// (Default: throws ``CoreDataError`` `.persistentStoreOperation`.)
    func makeQueryGenerationSnapshot() throws -> any PersistentStore
}

extension PersistentStore {
    /// Whether the row exists, by fetching it.
    public func containsRow(_ id: StoreRowID) throws -> Bool { try fetchRow(id) != nil }

    /// The row's version, by fetching it.
    public func rowVersion(_ id: StoreRowID) throws -> Int64? { try fetchRow(id)?.version }

    /// The rows of `ids` that exist, in the order of `ids`, one ``fetchRow(_:)`` each: rows
    /// are read one at a time, so a commit may land between two of them.
    public func fetchRows(_ ids: [StoreRowID]) throws -> [StoreRow] {
        var rows: [StoreRow] = []
        rows.reserveCapacity(ids.count)
        for id in ids {
            if let row = try fetchRow(id) { rows.append(row) }
        }
        return rows
    }

    /// `false`: a store records no history unless it says so.
    public var tracksHistory: Bool { false }

    /// 0: a store without history has no transaction numbers.
    public var currentHistoryToken: UInt64 { 0 }

    /// Throws ``CoreDataError`` `.persistentStoreOperation`: the store keeps no history.
    public func fetchHistory(after bound: StoreHistoryBound) throws -> [StoreHistoryTransaction] {
        throw CoreDataError(
            .persistentStoreOperation,
            "the store \(identifier) (\(type)) keeps no persistent history; use a file or in-memory store with "
                + "NSPersistentHistoryTrackingKey set.")
    }

    /// Throws ``CoreDataError`` `.persistentStoreOperation`: the store keeps no history.
    public func deleteHistory(before bound: StoreHistoryBound) throws -> Int {
        throw CoreDataError(
            .persistentStoreOperation,
            "the store \(identifier) (\(type)) keeps no persistent history; there is none to delete.")
    }

    /// Throws ``CoreDataError`` `.persistentStoreOperation`: the store keeps no generations.
    public func makeQueryGenerationSnapshot() throws -> any PersistentStore {
        throw CoreDataError(
            .persistentStoreOperation,
            "the store \(identifier) (\(type)) cannot pin a query generation; use a file or in-memory store.")
    }

    /// Does nothing: a store whose keys do not outlive it has nothing to record.
    public func recordAllocatedKeys(entities: [Int32]) throws {}

    /// The model configuration the store holds: always `"Default"`, the only one there is
    /// (models have no configurations yet).
    public var configurationName: String { "Default" }

    /// Throws ``CoreDataError`` `.persistentStoreOperation`: the store keeps no metadata of
    /// the application's.
    public func setMetadata(_ metadata: [String: String]) throws {
        throw CoreDataError(
            .persistentStoreOperation,
            "the store \(identifier) (\(type)) keeps no metadata of the application's; use a file, in-memory or PostgreSQL store.")
    }

    /// `false`: a store is written unless it says otherwise (a coordinator also refuses
    /// writes to a store added with ``NSReadOnlyPersistentStoreOption``).
    public var isReadOnly: Bool { false }
}
