import Foundation

/// Everything one save writes, applied by a store all at once or not at all.
///
/// Updates and deletes carry the version the saving context last saw; the store refuses
/// the whole transaction when any of them no longer matches (optimistic locking).
public struct StoreTransaction: Sendable {
    /// Rows to create (their version is ignored; the store sets 1).
    public var inserts: [StoreRow] = []
    /// Rows to replace: `row.version` is the version the writer expects to find.
    public var updates: [StoreRow] = []
    /// Rows to remove, with the version the writer expects to find.
    public var deletes: [(id: StoreRowID, expectedVersion: Int64)] = []

    /// Creates an empty transaction.
    public init() {}

    /// Whether the transaction writes nothing.
    public var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
}
