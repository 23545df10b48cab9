import Foundation

/// A row whose stored version differed from the version a transaction expected.
public struct StoreConflict: Sendable, Hashable {
    /// The row in conflict.
    public var id: StoreRowID
    /// The version the writer expected.
    public var expectedVersion: Int64
    /// The row as the store holds it now; `nil` when it was deleted.
    public var current: StoreRow?

    /// Creates a conflict record.
    public init(id: StoreRowID, expectedVersion: Int64, current: StoreRow?) {
        self.id = id
        self.expectedVersion = expectedVersion
        self.current = current
    }
}
