import Foundation

/// The error contexts, coordinators and containers throw. Its ``code`` carries Core Data's
/// numeric error code (for example 1570 for a missing required property), and its
/// ``description`` says what went wrong, with which object and key, and what to do.
public struct CoreDataError: Error, CustomStringConvertible, Sendable {
    /// Core Data's error codes, with their numeric values.
    public enum Code: Int, Sendable, Hashable {
        /// The operation was cancelled (Foundation's `NSUserCancelledError`).
        case userCancelled = 3072
        /// A value failed validation (unknown key, wrong type, custom validation).
        case managedObjectValidation = 1550
        /// A save would break a uniqueness constraint (see ``CoreDataError/constraintConflicts``).
        case managedObjectConstraintMerge = 1551
        /// Several validation errors, listed in ``CoreDataError/detailedErrors``.
        case validationMultipleErrors = 1560
        /// A required property is `nil`.
        case validationMissingMandatoryProperty = 1570
        /// A to-many relationship has fewer objects than its minimum.
        case validationRelationshipLacksMinimumCount = 1580
        /// A to-many relationship has more objects than its maximum.
        case validationRelationshipExceedsMaximumCount = 1590
        /// A deletion was refused by a deny delete rule.
        case validationRelationshipDeniedDelete = 1600
        /// A number above the maximum its attribute's validation allows.
        case validationNumberTooLarge = 1610
        /// A number below the minimum its attribute's validation allows.
        case validationNumberTooSmall = 1620
        /// A date after the latest its attribute's validation allows.
        case validationDateTooLate = 1630
        /// A date before the earliest its attribute's validation allows.
        case validationDateTooSoon = 1640
        /// A string longer than its attribute's validation allows.
        case validationStringTooLong = 1660
        /// A string shorter than its attribute's validation allows.
        case validationStringTooShort = 1670
        /// A string that does not match its attribute's regular expression.
        case validationStringPatternMatching = 1680
        /// The object does not exist (in the store, or in this coordinator).
        case managedObjectReferentialIntegrity = 133000
        /// An object from another coordinator or store was used.
        case managedObjectExternalRelationship = 133010
        /// A save conflicted with changes saved by someone else (optimistic locking).
        case managedObjectMerge = 133020
        /// The store type is unknown.
        case persistentStoreInvalidType = 134000
        /// The store was created with a different model.
        case persistentStoreIncompatibleSchema = 134020
        /// The store failed to save.
        case persistentStoreSave = 134030
        /// A general Core Data error (for example: a save with no store loaded).
        case coreData = 134060
        /// The store cannot do what was asked of it (for example: pin a query generation on
        /// a store that keeps no generations, or read history from a store that keeps none).
        case persistentStoreOperation = 134070
        /// The store could not be opened.
        case persistentStoreOpen = 134080
        /// The same store was added twice.
        case persistentStoreAlreadyAdded = 134081
        /// The store was created with a model that does not fit the coordinator's, and
        /// automatic migration was off; the store's own error is ``CoreDataError/underlying``.
        case persistentStoreIncompatibleVersionHash = 134100
        /// A migration failed (Core Data's `NSMigrationError`); the store is unchanged and the
        /// ``MigrationError`` is the `underlying`.
        case migration = 134110
        /// No model the migration knows is the one the store was written with (Core Data's
        /// `NSMigrationMissingSourceModelError`).
        case migrationMissingSourceModel = 134130
        /// A history fetch named a point older than history deleted since
        /// (`deleteHistory(before:)`): the transactions after it are no longer all there.
        case persistentHistoryTokenExpired = 134301
    }

    /// What went wrong, as Core Data's code.
    public let code: Code
    /// A sentence saying what went wrong and what to do.
    public let message: String
    /// The object involved, if any.
    public let objectID: NSManagedObjectID?
    /// The property involved, if any.
    public let key: String?
    /// For a validation error, the value that failed, when it has one: for a to-many count
    /// or a deny rule, the targets' IDs as a `Set<NSManagedObjectID>` (Core Data gives the
    /// objects; an error is `Sendable` and objects are not). `nil` for a missing value.
    public let value: (any Sendable)?
    /// For `.validationMultipleErrors`: the individual errors, one per problem.
    public let detailedErrors: [CoreDataError]
    /// For `.managedObjectMerge`: the conflicting objects.
    public let conflicts: [NSMergeConflict]
    /// For `.managedObjectConstraintMerge`: the broken uniqueness constraints.
    public let constraintConflicts: [NSConstraintConflict]
    /// A lower-level error that caused this one (for example a store I/O error).
    public let underlying: (any Error & Sendable)?

    init(
        _ code: Code, objectID: NSManagedObjectID? = nil, key: String? = nil, value: (any Sendable)? = nil, _ message: String,
        detailedErrors: [CoreDataError] = [], conflicts: [NSMergeConflict] = [], constraintConflicts: [NSConstraintConflict] = [],
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.objectID = objectID
        self.key = key
        self.value = value
        self.detailedErrors = detailedErrors
        self.conflicts = conflicts
        self.constraintConflicts = constraintConflicts
        self.underlying = underlying
    }

    /// One error for a list of errors: `nil` for none, the error itself for one, and a
    /// `.validationMultipleErrors` error holding all of them for several.
    static func combining(_ errors: [CoreDataError]) -> CoreDataError? {
        let flat = errors.flatMap { $0.code == .validationMultipleErrors ? $0.detailedErrors : [$0] }
        switch flat.count {
        case 0: return nil
        case 1: return flat[0]
        default:
            return CoreDataError(
                .validationMultipleErrors,
                "\(flat.count) validation errors; see detailedErrors.", detailedErrors: flat)
        }
    }

    /// A readable summary for logs and messages.
    public var description: String {
        var s = "CoreDataError \(code.rawValue) (\(code))"
        if let objectID { s += " on \(objectID)" }
        if let key { s += ", key '\(key)'" }
        s += ": \(message)"
        for e in detailedErrors { s += "\n  - \(e.description)" }
        if let underlying { s += "\n  caused by: \(underlying)" }
        return s
    }
}
