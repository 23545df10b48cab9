import Foundation

/// The ways a save can resolve conflicts with changes that another context saved after
/// this context read the objects (optimistic locking).
public enum NSMergePolicyType: UInt, Sendable {
    /// Fail the save and report the conflicts.
    case errorMergePolicyType = 0
    /// Property by property: properties the store changed take the store's value; the
    /// others keep this context's changes.
    case mergeByPropertyStoreTrumpMergePolicyType = 1
    /// Property by property: properties this context changed keep its values; the others
    /// take the store's.
    case mergeByPropertyObjectTrumpMergePolicyType = 2
    /// This context's version of each conflicting object replaces the store's entirely.
    case overwriteMergePolicyType = 3
    /// This context's changes to conflicting objects are discarded for the store's version.
    case rollbackMergePolicyType = 4
}

/// A merge policy: how a context's save resolves conflicts. Use the shared instances
/// (``NSErrorMergePolicy``, ``NSMergeByPropertyObjectTrumpMergePolicy``, …).
public final class NSMergePolicy: Sendable, Equatable, CustomStringConvertible {
    /// The policy's type.
    public let mergeType: NSMergePolicyType

    /// Creates a policy of the given type.
    public init(merge type: NSMergePolicyType) {
        self.mergeType = type
    }

    /// Fails on conflict (the default).
    public static let error = NSMergePolicy(merge: .errorMergePolicyType)
    /// Store values win per property.
    public static let mergeByPropertyStoreTrump = NSMergePolicy(merge: .mergeByPropertyStoreTrumpMergePolicyType)
    /// In-memory changes win per property.
    public static let mergeByPropertyObjectTrump = NSMergePolicy(merge: .mergeByPropertyObjectTrumpMergePolicyType)
    /// In-memory objects overwrite the store.
    public static let overwrite = NSMergePolicy(merge: .overwriteMergePolicyType)
    /// In-memory changes are discarded on conflict.
    public static let rollback = NSMergePolicy(merge: .rollbackMergePolicyType)

    /// Whether both policies resolve conflicts the same way (the same merge type).
    public static func == (lhs: NSMergePolicy, rhs: NSMergePolicy) -> Bool { lhs.mergeType == rhs.mergeType }

    /// A readable summary for logs and messages.
    public var description: String { "NSMergePolicy(\(mergeType))" }
}

/// Fails a conflicting save with the conflicts (Core Data's default).
public let NSErrorMergePolicy = NSMergePolicy.error
/// Resolves conflicts property by property, store values winning.
public let NSMergeByPropertyStoreTrumpMergePolicy = NSMergePolicy.mergeByPropertyStoreTrump
/// Resolves conflicts property by property, in-memory changes winning.
public let NSMergeByPropertyObjectTrumpMergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
/// Resolves conflicts by writing the in-memory objects over the store's.
public let NSOverwriteMergePolicy = NSMergePolicy.overwrite
/// Resolves conflicts by discarding the in-memory changes.
public let NSRollbackMergePolicy = NSMergePolicy.rollback

/// One object whose save conflicted with a newer version in the store.
public struct NSMergeConflict: Sendable, CustomStringConvertible {
    /// The object in conflict.
    public let objectID: NSManagedObjectID
    /// The version this context last read.
    public let oldVersionNumber: Int
    /// The version now in the store (0 when the object was deleted there).
    public let newVersionNumber: Int

    /// A readable summary for logs and messages.
    public var description: String {
        newVersionNumber == 0
            ? "\(objectID) was deleted in the store after version \(oldVersionNumber) was read"
            : "\(objectID) is at version \(newVersionNumber) in the store, but version \(oldVersionNumber) was read"
    }
}
