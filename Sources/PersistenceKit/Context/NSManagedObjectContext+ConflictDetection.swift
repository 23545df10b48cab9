import Foundation

extension NSManagedObjectContext {
    /// Marks `object` for conflict detection, as Core Data's: the next `save()` checks it
    /// against the store like an edited object, so that if another context or process saved
    /// it since this context read it, the save meets a merge conflict, which the merge
    /// policy settles (under the error policy, the save fails with
    /// ``CoreDataError/Code/managedObjectMerge``). Inserted and deleted objects are checked
    /// anyway; for them this does nothing.
    ///
    /// Unlike Core Data, the object counts as updated until the save (it is in
    /// ``updatedObjects``, and the save writes its row unchanged, moving its version on).
    public func detectConflicts(for object: NSManagedObject) {
        assertOnQueue("detectConflicts(for:)")
        guard object.managedObjectContext === self else {
            programmerError(
                "PersistenceKit: detectConflicts(for:) — \(object.objectID) is not in context '\(debugName)'. Rule: mark "
                    + "only this context's objects.")
        }
        if !object.flags.isDisjoint(with: [.inserted, .deleted]) { return }
        // Its values and the version they were read at: what the save checks.
        object.prepareForAccess("detectConflicts(for:)")
        objectDidChange(object)
    }
}
