import Foundation

// Inaccessible faults: objects whose row is gone by the time their values are needed — most
// often because another context deleted it and this one has not merged that save yet. Core
// Data turns them into deleted objects by default instead of raising, so code that walks a
// relationship while another context deletes its targets keeps running; ported code relies
// on that, and trapping here crashed it where it ran fine on Apple platforms.

extension NSManagedObjectContext {
    /// Whether a fault whose row no longer exists becomes a deleted object when its values
    /// are needed (`true`, the default, as in Core Data) instead of trapping (`false`).
    ///
    /// Such an object reads every attribute as `nil` (a non-optional `@Attribute` reads its
    /// declared default, as it does for any missing value), its to-one relationships as
    /// `nil` and its to-many relationships as empty; `isDeleted` is `true` and it is in
    /// ``deletedObjects``. It is exempt from validation, delete rules and `willSave()`, and
    /// the next ``save()`` or ``reset()`` discards it: the save writes nothing for it (its
    /// row is already gone) and does not list it in its notifications. ``rollback()`` turns
    /// it back into a fault (which, its row still missing, does the same when read again).
    /// A store that fails to read the row is not a missing row: that still traps, with the
    /// store's error. Like the other settings of a context, it may be read and set from any
    /// thread.
    public var shouldDeleteInaccessibleFaults: Bool {
        get { settings.withLock { $0.deletesInaccessibleFaults } }
        set { settings.withLock { $0.deletesInaccessibleFaults = newValue } }
    }

    /// Makes a fault whose row is gone a deleted object with empty values.
    func turnIntoInaccessibleDeletion(_ o: NSManagedObject) {
        o.storedSnapshot = nil
        o.storedValues = []
        o.storedSlots = ContiguousArray(
            o.entity.slotKinds.map { kind -> Slot in
                switch kind {
                case .attribute, .transientAttribute: .value(.null)
                case .toOne: .toOne(nil)
                case .toMany: .toMany([])
                }
            })
        o.valueStorage = .slots
        o.flags.remove(.fault)
        o.flags.subtract([.updated, .changeRecorded])
        o.flags.insert(.deleted)
        updatedSet.remove(o)
        unprocessed.updated.remove(o)
        deletedSet.insert(o)
        inaccessibleObjects.insert(o)
    }

    /// Drops the inaccessible objects still pending as deletions: out of the deleted set and
    /// the registry, invalidated like an object whose deletion was saved.
    func discardInaccessibleObjects() {
        guard !inaccessibleObjects.isEmpty else { return }
        let objects = inaccessibleObjects
        inaccessibleObjects = []
        for o in objects where o.managedObjectContext === self && deletedSet.contains(o) {
            deletedSet.remove(o)
            pendingDeletes.removeAll { $0 === o }
            unprocessed.deleted.remove(o)
            registeredByID.remove(o)
            o.invalidate()
        }
    }
}
