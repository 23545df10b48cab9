import Foundation

extension NSManagedObjectContext {
    /// Executes a batch request (``NSBatchInsertRequest``, ``NSBatchUpdateRequest``,
    /// ``NSBatchDeleteRequest``) against the store of this context's coordinator, in one
    /// commit, and returns its result (cast it: `as? NSBatchDeleteResult`); or a history
    /// request (``NSPersistentHistoryChangeRequest``, result ``NSPersistentHistoryResult``),
    /// which reads or deletes the stores' persistent history. Call it on this context's
    /// queue.
    ///
    /// As in Core Data, the store changes and no context does, this one included: its
    /// objects keep the values they have, and its unsaved changes take no part. Merge the
    /// IDs of an object-IDs result with
    /// ``mergeChanges(fromRemoteContextSave:into:)`` to bring contexts up to date.
    ///
    /// - Throws: ``CoreDataError`` — `.coreData` for an unknown entity, a predicate the store
    ///   cannot run, or no store; `.managedObjectValidation` and
    ///   `.validationMissingMandatoryProperty` for values that do not fit (naming the entity,
    ///   key and object); `.validationRelationshipDeniedDelete` for a batch delete a deny
    ///   rule refuses; `.managedObjectMerge` when other writers kept changing the rows read.
    ///   A predicate format that does not parse throws its ``PredicateFormatError``. Nothing
    ///   is written when it throws. A history request throws as
    ///   ``PersistentStore/fetchHistory(after:)`` and ``PersistentStore/deleteHistory(before:)``
    ///   do (`.persistentHistoryTokenExpired`, `.persistentStoreOperation`, the store's error).
    @discardableResult
    public func execute(_ request: NSPersistentStoreRequest) throws -> NSPersistentStoreResult {
        assertOnQueue("execute(_:)")
        return try request.run(in: self)
    }
}
