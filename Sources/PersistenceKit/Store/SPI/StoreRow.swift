import Foundation

/// One persisted object as a store holds it: its row ID, its optimistic-lock version, and
/// one value per property of its entity (in the entity's property order; transient
/// properties hold `.null`).
public struct StoreRow: Sendable, Hashable {
    /// The row's identity.
    public var id: StoreRowID
    /// Incremented by the store on every committed update; 1 after insert.
    public var version: Int64
    /// The values, indexed like the entity's properties.
    public var values: [StoreValue]

    /// Creates a row.
    public init(id: StoreRowID, version: Int64, values: [StoreValue]) {
        self.id = id
        self.version = version
        self.values = values
    }

    /// The value of property `i`; `.null` past the row's end (a row written before the
    /// property existed).
    @inline(__always)
    func value(at i: Int) -> StoreValue { i < values.count ? values[i] : .null }
}
