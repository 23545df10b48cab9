import Foundation

/// One uniqueness constraint a save would break, as Core Data's `NSConstraintConflict`: the
/// constraint, the values in conflict, the objects of the save holding them and, when the
/// store already holds them, the stored object.
///
/// Objects are given by their IDs (an error crosses queues; objects do not): look them up
/// with `object(with:)` on the saving context. Snapshots hold the persistent attributes by
/// name (a `nil` value is left out), as `NSNull`-free dictionaries.
public struct NSConstraintConflict: Sendable, CustomStringConvertible {
    /// The names of the constrained attributes, in the entity's property order.
    public let constraint: [String]
    /// The values the conflicting objects share, by attribute name.
    public let constraintValues: [String: any Sendable]
    /// The stored object holding the values; `nil` when the conflict is between objects of
    /// the save only.
    public let databaseObject: NSManagedObjectID?
    /// The objects of the save holding the values, in save order (inserted, then updated).
    public let conflictingObjects: [NSManagedObjectID]
    /// The values each of ``conflictingObjects`` was saving, in the same order.
    public let conflictingSnapshots: [[String: any Sendable]]
    /// The stored object's values, when there is a stored object.
    public let databaseSnapshot: [String: any Sendable]?

    /// A readable summary for logs and messages.
    public var description: String {
        let values = constraint.map { "\($0) = \(constraintValues[$0].map { "\($0)" } ?? "nil")" }.joined(separator: ", ")
        let holders = conflictingObjects.map(\.description).joined(separator: ", ")
        if let databaseObject { return "\(holders) would repeat the stored \(databaseObject) (\(values))" }
        return "\(holders) share \(values)"
    }
}
