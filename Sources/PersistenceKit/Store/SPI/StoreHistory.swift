import Foundation

/// One change a committed transaction made to one row, as a store records it in its
/// persistent history (see ``PersistentStore/fetchHistory(after:)``).
public struct StoreHistoryChange: Sendable, Hashable {
    /// What happened to the row, with Core Data's raw values (see
    /// ``NSPersistentHistoryChangeType``).
    public enum Kind: UInt8, Sendable, Hashable {
        /// The row was inserted.
        case insert = 0
        /// The row was updated.
        case update = 1
        /// The row was deleted.
        case delete = 2
    }

    /// What happened to the row.
    public var kind: Kind
    /// The row changed.
    public var row: StoreRowID
    /// For an update, the property indexes whose stored values changed, ascending; empty
    /// otherwise.
    public var updatedColumns: [Int]
    /// For a delete, the values the row held in the properties marked
    /// ``NSAttributeDescription/preservesValueInHistoryOnDeletion``, as (property index, value)
    /// pairs in ascending index order; empty otherwise.
    public var tombstone: [StoreTombstoneValue]

    /// Creates a change record.
    public init(kind: Kind, row: StoreRowID, updatedColumns: [Int] = [], tombstone: [StoreTombstoneValue] = []) {
        self.kind = kind
        self.row = row
        self.updatedColumns = updatedColumns
        self.tombstone = tombstone
    }
}

/// One preserved value of a deleted row: its property index and the value it held.
public struct StoreTombstoneValue: Sendable, Hashable {
    /// The property's index in its entity.
    public var column: Int
    /// The value the row held there when it was deleted.
    public var value: StoreValue

    /// Creates a tombstone value.
    public init(column: Int, value: StoreValue) {
        self.column = column
        self.value = value
    }
}

/// One committed transaction as a store's persistent history holds it.
public struct StoreHistoryTransaction: Sendable, Hashable {
    /// The transaction's number in its store: greater than every earlier transaction's, and
    /// never reused, not even after the history before it was deleted or the store reopened.
    public var token: UInt64
    /// When the store committed it.
    public var timestamp: Date
    /// The saving context's `transactionAuthor`, if it had one.
    public var author: String?
    /// The saving context's `name`, if it had one.
    public var contextName: String?
    /// The rows it changed: inserts, updates and deletes in the order the store applied them.
    public var changes: [StoreHistoryChange]

    /// Creates a history transaction.
    public init(token: UInt64, timestamp: Date, author: String?, contextName: String?, changes: [StoreHistoryChange]) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.changes = changes
    }
}

/// Where a history request starts (a fetch: the transactions after it) or ends (a delete:
/// the transactions up to it).
public enum StoreHistoryBound: Sendable, Hashable {
    /// Every transaction: a fetch from the start, a delete of all history.
    case all
    /// The point right after the transaction numbered so (see
    /// ``StoreHistoryTransaction/token``).
    case token(UInt64)
    /// A moment: a fetch gets transactions committed after it, a delete removes those
    /// committed before it.
    case date(Date)
}
