import Foundation

extension NSManagedObjectContext {
    /// Updates an object from the store.
    ///
    /// With `flag == false` the object's unsaved changes are discarded and it becomes a fault
    /// that reloads from the store on next access. With `flag == true` its values are
    /// reloaded and its unsaved changes — a pending deletion included — are kept on top, and
    /// transient values are kept (an unchanged object just becomes a fault, unless its entity
    /// has transient attributes: then it reloads now). Inserted objects are left alone.
    ///
    /// The next objects-did-change (at the next `processPendingChanges()`: the end of the
    /// `perform` block, a fetch, a save, or your own call) lists the object under
    /// ``NSRefreshedObjectsKey``, or ``NSUpdatedObjectsKey`` when it still has unsaved
    /// changes; several refreshes are announced together, with the other pending changes.
    public func refresh(_ object: NSManagedObject, mergeChanges flag: Bool) {
        assertOnQueue("refresh(_:mergeChanges:)", object: object)
        guard object.managedObjectContext === self, !object.flags.contains(.inserted) else { return }
        refreshOne(object, mergeChanges: flag)
        instrumentingRouter?.routeRefresh(CollectionOfOne(object))
        // Not posted here: Core Data collects refreshed objects and announces them when it
        // processes pending changes, not with a notification per refresh.
        unprocessed.refreshed.insert(object)
        noteChangesPending()
    }

    private func refreshOne(_ object: NSManagedObject, mergeChanges flag: Bool) {
        if !rebasedWhileChanged.isEmpty { rebasedWhileChanged[ObjectIdentifier(object)] = nil }
        if flag && object.flags.contains(.updated) && !object.flags.contains(.fault) {
            if let row = rowForFault(object) { rebase(object, onto: row) }
            return
        }
        // Merging leaves transient values alone: an unchanged object of an entity with
        // transient attributes takes the saved values now instead of becoming a fault,
        // which would forget them: a transient set before a save would read its default
        // after refresh(_:mergeChanges: true) and refreshAllObjects().
        if flag && !object.flags.contains(.fault) && !object.flags.contains(.deleted) && object.entity.hasTransientAttributes,
            let row = rowForFault(object)
        {
            rebase(object, onto: row)
            return
        }
        if object.flags.contains(.deleted) {
            if flag {
                // The deletion stays, on top of the saved values as they are now: the next
                // save expects the current version. A deletion that met a conflict and kept
                // expecting the old version could be saved by no save after a refresh — the
                // documented way out of an optimistic-locking failure.
                if object.flags.contains(.fault) {
                    object.dropRow()  // the save reads the current version
                } else if let row = rowForFault(object) {
                    rebase(object, onto: row)
                    // The current row may link objects the delete rules never saw: they run
                    // again at the next processing, as after a merge; otherwise a book put on
                    // the shelf meanwhile survives the shelf's cascade, without a shelf.
                    pendingDeletes.append(object)
                }
                return
            }
            // Discarding pending changes discards a pending deletion as well (its delete rules,
            // if already applied to other objects, stay applied there).
            object.flags.remove(.deleted)
            deletedSet.remove(object)
            pendingDeletes.removeAll { $0 === object }
            unprocessed.deleted.remove(object)
        }
        let held = flag ? [] : linksHeldByOthers(object)
        updatedSet.remove(object)
        unprocessed.updated.remove(object)
        object.flags.subtract([.updated, .changeRecorded])
        if !object.flags.contains(.fault) { object.turnIntoFault(keepingSnapshot: false) } else { object.dropRow() }
        // The discarded changes are this object's side of its links only: where another
        // object's unsaved change still makes a link (or still leaves one out), this side
        // follows it again, so a save stores both ends alike. Otherwise a shelf refreshed
        // after a new book was put on it loses the book, the book keeps the shelf, and the
        // save stores a link on one side only.
        for (i, target, linked) in held {
            if linked { object.link(target, at: i) } else { object.unlink(target, at: i) }
        }
    }

    /// For an object about to drop its unsaved changes: each relationship change it made
    /// (a target added or removed) that the target's own unsaved state agrees with.
    func linksHeldByOthers(_ o: NSManagedObject) -> [(index: Int, target: NSManagedObject, linked: Bool)] {
        guard o.flags.contains(.updated), !o.flags.contains(.fault), let snapshot = o.snapshot else { return [] }
        var held: [(index: Int, target: NSManagedObject, linked: Bool)] = []
        for case let r as NSRelationshipDescription in o.entity.properties where o.persistentValueDiffers(at: r.index) {
            guard let inverse = r.inverseRelationship, let destination = r.destinationEntity else { continue }
            let current: Set<NSManagedObject> = r.isToMany ? o.resolvedToMany(at: r.index) : Set(o.resolvedToOne(at: r.index).map { [$0] } ?? [])
            let storedRows: [StoreRowID] =
                switch snapshot.value(at: r.index) {
                case let .reference(row): [row]
                case let .references(rows): rows
                default: []
                }
            let stored = Set(storedRows.map { object(forRow: $0, entity: destination) })
            /// Whether `t`'s own unsaved state links it to `o`.
            func linksBack(_ t: NSManagedObject) -> Bool {
                inverse.isToMany ? t.resolvedToMany(at: inverse.index).contains(o) : t.resolvedToOne(at: inverse.index) === o
            }
            for t in current.subtracting(stored) where t.hasChangesUnchecked && !t.flags.contains(.fault) && linksBack(t) {
                held.append((r.index, t, true))
            }
            for t in stored.subtracting(current) where t.hasChangesUnchecked && !t.flags.contains(.fault) && !linksBack(t) {
                held.append((r.index, t, false))
            }
        }
        return held
    }

    /// Refreshes every registered object with `mergeChanges: true`: unchanged objects become
    /// faults (those with transient attributes reload instead, keeping the transient
    /// values), changed and deleted objects reload and keep their unsaved changes. Then
    /// processes pending changes: one objects-did-change lists every refreshed object (see
    /// ``refresh(_:mergeChanges:)``) beside the other pending changes.
    public func refreshAllObjects() {
        assertOnQueue("refreshAllObjects()")
        advanceQueryGeneration()  // a pinned context refreshes to the store as it is now
        for o in registeredByID.values where !o.flags.contains(.inserted) {
            refreshOne(o, mergeChanges: true)
            unprocessed.refreshed.insert(o)
        }
        instrumentingRouter?.routeRefresh(registeredByID.values)
        processPendingChanges()
    }

    /// Discards every unsaved change: inserted objects leave the context, deleted objects
    /// come back, updated objects return to their last saved values.
    public func rollback() {
        assertOnQueue("rollback()")
        let inserted = Set(insertions.objects)
        var restored = Set<NSManagedObject>()
        for o in inserted {
            unregister(o)
            o.invalidate()
        }
        if !inserted.isEmpty { noteDeparture() }
        // Not the discarded inserts: a pending delete of one is in `deletedSet` too, and it
        // must not be reported refreshed and turned into a fault after being invalidated.
        for o in updatedSet.union(deletedSet).subtracting(inserted) {
            o.flags.subtract([.updated, .deleted, .changeRecorded])
            if let snapshot = o.snapshot { o.install(snapshot) } else { o.turnIntoFault(keepingSnapshot: false) }
            restored.insert(o)
        }
        // Refreshes not announced yet are announced with the restored objects: the rollback
        // discards the pending changes they would have been posted with.
        for o in unprocessed.refreshed where o.managedObjectContext === self && !o.flags.contains(.invalidated) {
            restored.insert(o)
        }
        insertions.removeAll()
        updatedSet = []
        deletedSet = []
        inaccessibleObjects = []
        rebasedWhileChanged = [:]
        pendingDeletes = []
        clearUnprocessed()
        removeAllUndoActions()
        var info: [AnyHashable: Any] = [:]
        if !inserted.isEmpty { info[NSInvalidatedObjectsKey] = inserted }
        if !restored.isEmpty { info[NSRefreshedObjectsKey] = restored }
        if !info.isEmpty { post(.NSManagedObjectContextObjectsDidChange, userInfo: info) }
    }

    /// Forgets every object: all registered objects are invalidated (using one afterwards
    /// traps) and unsaved changes are lost. Posts objects-did-change with
    /// ``NSInvalidatedAllObjectsKey``.
    public func reset() {
        assertOnQueue("reset()")
        advanceQueryGeneration()
        let inserted = insertions.objects.filter { !$0.hasPermanentKey }
        let ids = registeredByID.values.map(\.objectID) + inserted.map(\.objectID)
        for o in registeredByID.values { o.invalidate() }
        for o in inserted { o.invalidate() }
        noteDeparture()
        registeredByID = ObjectRegistry()
        temporaries = ObjectRegistry()
        heldRowsSince = .max
        rebasedWhileChanged = [:]
        insertions.removeAll()
        updatedSet = []
        deletedSet = []
        inaccessibleObjects = []
        pendingDeletes = []
        clearUnprocessed()
        removeAllUndoActions()
        post(.NSManagedObjectContextObjectsDidChange, userInfo: [NSInvalidatedAllObjectsKey: ids])
    }
}
