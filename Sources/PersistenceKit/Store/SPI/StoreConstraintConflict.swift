import Foundation

/// Rows of a transaction that would break a uniqueness constraint of their entity (see
/// ``NSEntityDescription/uniquenessConstraints``): two rows holding the same constrained
/// values, or a row taking the values a stored row holds. A constraint declared on a
/// super-entity holds across its sub-entities, so the rows may be of different entities.
public struct StoreConstraintConflict: Sendable, Hashable {
    /// The index in the model of the entity declaring the constraint (the highest one when
    /// several of a family do); each row's own entity is in its ID.
    public var entity: Int32
    /// The property indexes of the constraint, ascending.
    public var columns: [Int]
    /// The values the rows share, one per column.
    public var values: [StoreValue]
    /// The transaction's rows (inserted or updated) holding `values`, in transaction order.
    public var rows: [StoreRowID]
    /// The stored row holding `values`, as the store holds it now; `nil` when the conflict
    /// is between rows of the transaction only.
    public var stored: StoreRow?

    /// Creates a conflict record.
    public init(entity: Int32, columns: [Int], values: [StoreValue], rows: [StoreRowID], stored: StoreRow?) {
        self.entity = entity
        self.columns = columns
        self.values = values
        self.rows = rows
        self.stored = stored
    }
}
