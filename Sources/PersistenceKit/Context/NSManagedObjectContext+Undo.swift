import Foundation

// Undo for a context's changes.
//
// Every change is recorded when it is made, at the level where it changes one object:
// an attribute write, one side of a relationship (the inverse side records its own change),
// an insert, a deletion. The delete rules of a deletion are changes of that kind too, made
// when pending changes are processed, so they join the group open then. Undoing runs the
// group's reversals newest first, so every object returns to its state, both sides of
// every link included, without the inverse upkeep having to be reversed.
//
// Groups: with `groupsByEvent`, the first change recorded while no group is open opens
// one, and the context closes it when its `perform` block, model actor job or main-queue
// turn ends (where it processes pending changes), the way a run-loop turn ends Core Data's
// groups. `performAndWait` leaves it open, as it leaves changes unprocessed.

extension NSManagedObjectContext {
    /// The undo manager that records this context's changes; `nil` (the default, as for
    /// Core Data contexts outside the document architecture) records nothing. Setting `nil`
    /// stops the recording; the actions recorded so far stay with the manager.
    ///
    /// Use the manager on the context's queue only. Changes made by a save (the
    /// `willSave()` of objects, for instance) are not recorded.
    public var undoManager: UndoManager? {
        get {
            assertOnQueue("undoManager")
            return storedUndoManager
        }
        set {
            assertOnQueue("undoManager")
            if storedUndoManager === newValue { return }
            storedUndoManager?.removeContext(self)
            storedUndoManager = newValue
            newValue?.addContext(self)
            queue.registersUndo.store(newValue != nil, ordering: .relaxed)
        }
    }

    /// Reverses the newest group of changes recorded by ``undoManager`` (see
    /// `UndoManager.undo()`). The undone state is pending: a save stores it. Does nothing
    /// without an undo manager.
    public func undo() {
        assertOnQueue("undo()")
        storedUndoManager?.undo()
    }

    /// Replays the newest undone group of changes (see `UndoManager.redo()`). Does nothing
    /// without an undo manager.
    public func redo() {
        assertOnQueue("redo()")
        storedUndoManager?.redo()
    }

    // MARK: Recording

    /// The manager to record a change with now: none while saving or while its
    /// registration is disabled. Called only when `queue.registersUndo` is set.
    func undoRecorder() -> UndoManager? {
        guard !isSaving, let manager = storedUndoManager, manager.isUndoRegistrationEnabled else { return nil }
        // The group this opens closes where pending changes are processed; a change that
        // does not make the context note pending changes (an inserted object's attribute)
        // must still bring the main queue's processing turn.
        if manager.opensEventGroupOnRegistration { noteChangesPending() }
        return manager
    }

    /// Records the reversal of inserting `object` (or of bringing back its deletion).
    func recordInsertForUndo(_ object: NSManagedObject) {
        guard let manager = undoRecorder() else { return }
        manager.registerUndo(withTarget: object) { [weak self] o in
            guard let self, o.isOwned(by: self), !o.flags.contains(.deleted) else { return }
            self.delete(o)
        }
    }

    /// Records the reversal of deleting `object`.
    func recordDeleteForUndo(_ object: NSManagedObject) {
        guard let manager = undoRecorder() else { return }
        manager.registerUndo(withTarget: object) { [weak self] o in
            // Back into the context: still here as a pending deletion, or detached after an
            // insert's deletion was processed. A deletion saved since has invalidated the
            // object: there is nothing left to bring back.
            guard let self, !o.flags.contains(.invalidated) else { return }
            if o.isOwned(by: self) ? o.flags.contains(.deleted) : o.owningContext == nil { self.insert(o) }
        }
    }

    /// Closes the group of changes that recording opened (see `UndoManager.groupsByEvent`):
    /// called where a `perform` block, model actor job or main-queue turn ends.
    func closeUndoEventGroup() {
        storedUndoManager?.closeEventGroup()
    }

    /// Empties the undo manager's stacks: a rollback or reset leaves nothing to undo.
    func removeAllUndoActions() {
        storedUndoManager?.removeAllActions()
    }

    /// Before the undo manager closes or runs a group: processes pending changes, so that
    /// delete rules record their changes in the group. Only on this context's queue (a
    /// manager shared with a context elsewhere does not reach into it).
    func undoCheckpoint() {
        guard queue.isCurrentOrHeldByMainActor else { return }
        if hasUnprocessedChanges || !pendingDeletes.isEmpty { processPendingChanges() }
    }

    /// After an undo or redo changed `object`: an object whose values are back to its
    /// last saved ones is no longer updated, so that undoing every change since a save
    /// leaves the context without changes.
    func settleAfterUndo(_ object: NSManagedObject) {
        guard object.flags.contains(.updated), !object.flags.contains(.fault), object.isOwned(by: self),
            !object.entity.properties.indices.contains(where: { object.persistentValueDiffers(at: $0) })
        else { return }
        object.flags.subtract([.updated, .changeRecorded])
        updatedSet.remove(object)
    }
}
