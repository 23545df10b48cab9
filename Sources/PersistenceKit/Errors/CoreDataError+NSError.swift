import Foundation

// Core Data code reads errors as `NSError`: `error as NSError`, then `code` against
// Core Data's constants and `userInfo` under Core Data's keys. Without this, the bridged
// error has the domain "PersistenceKit.CoreDataError" and code 1, so such code compiles and
// reads the wrong values.

/// The `userInfo` key of the individual errors of a `NSValidationMultipleErrorsError`.
public let NSDetailedErrorsKey = "NSDetailedErrors"
/// The `userInfo` key of the object a validation error is about. Holds its
/// `NSManagedObjectID` (Core Data puts the object itself; objects do not leave their queue here).
public let NSValidationObjectErrorKey = "NSValidationErrorObject"
/// The `userInfo` key of the property a validation error is about.
public let NSValidationKeyErrorKey = "NSValidationErrorKey"
/// The `userInfo` key of the value that failed validation (see ``CoreDataError/value``).
public let NSValidationValueErrorKey = "NSValidationErrorValue"
/// The `userInfo` key of the merge conflicts (`[NSMergeConflict]`) of a `NSManagedObjectMergeError`,
/// and of the constraint conflicts (`[NSConstraintConflict]`) of a
/// `NSManagedObjectConstraintMergeError`.
public let NSPersistentStoreSaveConflictsErrorKey = "conflictList"

/// Core Data's error code for a value that failed validation.
public let NSManagedObjectValidationError = CoreDataError.Code.managedObjectValidation.rawValue
/// Core Data's error code for a save that would break a uniqueness constraint (see
/// ``NSConstraintConflict``).
public let NSManagedObjectConstraintMergeError = CoreDataError.Code.managedObjectConstraintMerge.rawValue
/// Core Data's error code for several validation errors (see ``NSDetailedErrorsKey``).
public let NSValidationMultipleErrorsError = CoreDataError.Code.validationMultipleErrors.rawValue
/// Core Data's error code for a required property that is `nil`.
public let NSValidationMissingMandatoryPropertyError = CoreDataError.Code.validationMissingMandatoryProperty.rawValue
/// Core Data's error code for a to-many relationship below its minimum count.
public let NSValidationRelationshipLacksMinimumCountError = CoreDataError.Code.validationRelationshipLacksMinimumCount.rawValue
/// Core Data's error code for a to-many relationship above its maximum count.
public let NSValidationRelationshipExceedsMaximumCountError =
    CoreDataError.Code.validationRelationshipExceedsMaximumCount.rawValue
/// Core Data's error code for a deletion refused by a deny rule.
public let NSValidationRelationshipDeniedDeleteError = CoreDataError.Code.validationRelationshipDeniedDelete.rawValue
/// Core Data's error code for a number above its attribute's maximum.
public let NSValidationNumberTooLargeError = CoreDataError.Code.validationNumberTooLarge.rawValue
/// Core Data's error code for a number below its attribute's minimum.
public let NSValidationNumberTooSmallError = CoreDataError.Code.validationNumberTooSmall.rawValue
/// Core Data's error code for a date after its attribute's latest.
public let NSValidationDateTooLateError = CoreDataError.Code.validationDateTooLate.rawValue
/// Core Data's error code for a date before its attribute's earliest.
public let NSValidationDateTooSoonError = CoreDataError.Code.validationDateTooSoon.rawValue
/// Core Data's error code for a string longer than its attribute's maximum length.
public let NSValidationStringTooLongError = CoreDataError.Code.validationStringTooLong.rawValue
/// Core Data's error code for a string shorter than its attribute's minimum length.
public let NSValidationStringTooShortError = CoreDataError.Code.validationStringTooShort.rawValue
/// Core Data's error code for a string that does not match its attribute's regular expression.
public let NSValidationStringPatternMatchingError = CoreDataError.Code.validationStringPatternMatching.rawValue
/// Core Data's error code for an object that does not exist.
public let NSManagedObjectReferentialIntegrityError = CoreDataError.Code.managedObjectReferentialIntegrity.rawValue
/// Core Data's error code for an object of another coordinator or store.
public let NSManagedObjectExternalRelationshipError = CoreDataError.Code.managedObjectExternalRelationship.rawValue
/// Core Data's error code for a save that conflicts with changes saved elsewhere.
public let NSManagedObjectMergeError = CoreDataError.Code.managedObjectMerge.rawValue
/// Core Data's error code for an unknown store type.
public let NSPersistentStoreInvalidTypeError = CoreDataError.Code.persistentStoreInvalidType.rawValue
/// Core Data's error code for a store made with another model.
public let NSPersistentStoreIncompatibleSchemaError = CoreDataError.Code.persistentStoreIncompatibleSchema.rawValue
/// Core Data's error code for a store that failed to save.
public let NSPersistentStoreSaveError = CoreDataError.Code.persistentStoreSave.rawValue
/// Core Data's general error code.
public let NSCoreDataError = CoreDataError.Code.coreData.rawValue
/// Core Data's error code for a store that could not be opened.
public let NSPersistentStoreOpenError = CoreDataError.Code.persistentStoreOpen.rawValue
/// Core Data's error code for a store made with a model that does not fit.
public let NSPersistentStoreIncompatibleVersionHashError = CoreDataError.Code.persistentStoreIncompatibleVersionHash.rawValue
/// Core Data's code for a failed migration (134110); the store is unchanged.
public let NSMigrationError = CoreDataError.Code.migration.rawValue
/// Core Data's code for a migration that found no model the store was written with (134130).
public let NSMigrationMissingSourceModelError = CoreDataError.Code.migrationMissingSourceModel.rawValue

extension CoreDataError: CustomNSError {
    /// `NSCocoaErrorDomain`, Core Data's domain.
    public static var errorDomain: String { NSCocoaErrorDomain }

    /// ``code``'s numeric value, as Core Data's.
    public var errorCode: Int { code.rawValue }

    /// The description (`NSLocalizedDescriptionKey`), and what Core Data's keys hold:
    /// ``NSDetailedErrorsKey`` (as `NSError`s), ``NSValidationObjectErrorKey`` (the object ID),
    /// ``NSValidationKeyErrorKey``, ``NSValidationValueErrorKey``,
    /// ``NSPersistentStoreSaveConflictsErrorKey`` (merge or constraint conflicts) and
    /// `NSUnderlyingErrorKey`, each only when set.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if !detailedErrors.isEmpty { info[NSDetailedErrorsKey] = detailedErrors.map { $0 as NSError } }
        if let objectID { info[NSValidationObjectErrorKey] = objectID }
        if let key { info[NSValidationKeyErrorKey] = key }
        if let value { info[NSValidationValueErrorKey] = value }
        if !conflicts.isEmpty { info[NSPersistentStoreSaveConflictsErrorKey] = conflicts }
        if !constraintConflicts.isEmpty { info[NSPersistentStoreSaveConflictsErrorKey] = constraintConflicts }
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return info
    }
}
