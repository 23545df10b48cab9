import Foundation

/// The identity of one row in a persistent store: the entity's index in the model and a
/// primary key that the store allocated.
///
/// Row IDs are what stores deal in; contexts wrap them in ``NSManagedObjectID``.
public struct StoreRowID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The index of the row's entity in ``NSManagedObjectModel/entities`` (entities are
    /// ordered by name, so the index is stable for a given model).
    public var entity: Int32
    /// The primary key, unique within the entity, allocated by the store (starts at 1).
    public var primaryKey: Int64

    /// Creates a row ID from an entity index and a primary key.
    public init(entity: Int32, primaryKey: Int64) {
        self.entity = entity
        self.primaryKey = primaryKey
    }

    /// Orders rows by entity index, then primary key.
    public static func < (lhs: StoreRowID, rhs: StoreRowID) -> Bool {
        (lhs.entity, lhs.primaryKey) < (rhs.entity, rhs.primaryKey)
    }

    /// A readable summary for logs and messages.
    public var description: String { "row(\(entity):\(primaryKey))" }
}
