import Foundation

/// The outcome of committing a transaction.
public enum StoreCommitResult: Sendable {
    /// Everything was written; the committed rows with their new versions: the inserts,
    /// then the updates, each in transaction order (with the other ends of their links as
    /// the store keeps them), then the rows the store wrote besides to keep link ends in
    /// agreement (see ``PersistentStore/commit(_:)``).
    case committed([StoreRow])
    /// Nothing was written because these rows changed since the writer read them.
    case conflicts([StoreConflict])
    /// Nothing was written because the transaction would leave two rows of an entity with
    /// the same values for one of its uniqueness constraints (reported after the version
    /// checks pass: a transaction with both kinds reports ``conflicts(_:)``).
    case constraintConflicts([StoreConstraintConflict])
}
