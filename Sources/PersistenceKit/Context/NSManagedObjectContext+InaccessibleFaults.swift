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
    /// row is already gone) and does not list it in its notifications; relationships that
    /// held it because the store did when they were read let go of it. ``rollback()`` (or
    /// ``insert(_:)``, undoing the deletion) turns it back into a fault (which, its row
    /// still missing, does the same when read again).
    /// A store that fails to read the row is not a missing row: that still traps, with the
    /// store's error. Like the other settings of a context, it may be read and set from any
    /// thread.
    public var shouldDeleteInaccessibleFaults: Bool {
        get { settings.withLock { $0.deletesInaccessibleFaults } }
        set { settings.withLock { $0.deletesInaccessibleFaults = newValue } }
    }

    /// Makes a fault whose row is gone a deleted object with empty values.
    func turnIntoInaccessibleDeletion(_ o: NSManagedObject) {
        o.forgetToManyEdits()
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
        unprocessed.refreshed.remove(o)
        deletedSet.insert(o)
        inaccessibleObjects.insert(o)
    }

    /// Drops the inaccessible objects still pending as deletions: out of the deleted set and
    /// the registry, invalidated like an object whose deletion was saved.
    func discardInaccessibleObjects() {
        guard !inaccessibleObjects.isEmpty else { return }
        let objects = inaccessibleObjects
        inaccessibleObjects = []
        var discarded = Set<NSManagedObject>()
        for o in objects where o.managedObjectContext === self && deletedSet.contains(o) {
            deletedSet.remove(o)
            pendingDeletes.removeAll { $0 === o }
            unprocessed.deleted.remove(o)
            unprocessed.refreshed.remove(o)
            registeredByID.remove(o)
            discarded.insert(o)
        }
        unlinkDiscarded(discarded)
        for o in discarded { o.invalidate() }
        if !discarded.isEmpty { noteDeparture() }
    }

    /// Lets go of discarded inaccessible objects where another object's relationship holds
    /// them because the store did when that object was read: as for any other deleted
    /// object, whose delete rules nullify such links, nothing keeps pointing at them.
    /// Otherwise a shelf whose books were walked keeps the discarded book after the save;
    /// reading it traps, and saving the shelf fails with a dangling reference. A link
    /// this context made after reading (not in the holder's snapshot) is left for save
    /// validation to report, as for any link to a deleted object.
    private func unlinkDiscarded(_ gone: Set<NSManagedObject>) {
        guard !gone.isEmpty else { return }
        for o in registeredByID.values
        where o.valueStorage == .slots && !o.storedSlots.isEmpty && !gone.contains(o) && !o.entity.hasOnlyPersistentAttributes {
            guard let snapshot = o.storedSnapshot else { continue }
            for (i, kind) in o.entity.slotKinds.enumerated() {
                switch (kind, o.storedSlots[i]) {
                case let (.toOne, .toOne(t?)) where gone.contains(t):
                    if let row = t.rowID, snapshot.value(at: i) == .reference(row) { o.storedSlots[i] = .toOne(nil) }
                case var (.toMany, .toMany(targets)) where !targets.isDisjoint(with: gone):
                    guard case let .references(rows) = snapshot.value(at: i) else { continue }
                    let stored = Set(rows)
                    targets = targets.filter { t in !(gone.contains(t) && t.rowID.map(stored.contains) == true) }
                    o.storedSlots[i] = .toMany(targets)
                    o.forgetToManyEdits()
                default:
                    break
                }
            }
        }
    }
}
