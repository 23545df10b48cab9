import Foundation

extension NSManagedObjectContext {
    /// Whether the context has unsaved inserts, updates or deletes.
    public var hasChanges: Bool {
        assertOnQueue("hasChanges")
        return !insertions.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty
    }

    /// Objects inserted and not saved yet.
    public var insertedObjects: Set<NSManagedObject> {
        assertOnQueue("insertedObjects")
        return Set(insertions.objects)
    }

    /// Objects changed since they were fetched or saved (not counting inserted or deleted ones).
    public var updatedObjects: Set<NSManagedObject> {
        assertOnQueue("updatedObjects")
        return updatedSet
    }

    /// Objects deleted and not saved yet.
    public var deletedObjects: Set<NSManagedObject> {
        assertOnQueue("deletedObjects")
        return deletedSet
    }

    /// Every object the context holds, faults included.
    public var registeredObjects: Set<NSManagedObject> {
        assertOnQueue("registeredObjects")
        var objects = Set(registeredByID.values)
        for o in insertions.objects { objects.insert(o) }
        return objects
    }

    /// Registers a new object for insertion at the next save and calls its
    /// `awakeFromInsert()`. Inserting an object already inserted here does nothing;
    /// inserting an object deleted here undoes the deletion.
    ///
    /// Traps when the object belongs to another context or to another model.
    public func insert(_ object: NSManagedObject) {
        assertOnQueue("insert(_:)", object: object)
        if object.managedObjectContext === self {
            if object.flags.contains(.deleted), object.storedSnapshot == nil, inaccessibleObjects.remove(object) != nil {
                // An inaccessible fault has no row to come back to: undoing its deletion makes
                // it a fault again, as rollback() does. Left as it is, it stays an object with
                // empty values and no row, neither deleted nor saved: its edits fail validation
                // or are announced as saved without being written.
                object.flags.remove(.deleted)
                deletedSet.remove(object)
                pendingDeletes.removeAll { $0 === object }
                unprocessed.deleted.remove(object)
                object.turnIntoFault(keepingSnapshot: false)
                return
            }
            if object.flags.contains(.deleted) {
                object.flags.remove(.deleted)
                deletedSet.remove(object)
                pendingDeletes.removeAll { $0 === object }
                unprocessed.deleted.remove(object)
                // Edits made before the deletion still count. (Delete rules that already ran
                // on related objects are not undone, as documented in Differences.md.)
                if !object.flags.contains(.inserted),
                    object.entity.properties.indices.contains(where: { object.persistentValueDiffers(at: $0) })
                {
                    objectDidChange(object)
                }
                if queue.registersUndo.load(ordering: .relaxed) { recordInsertForUndo(object) }
            }
            return
        }
        guard object.managedObjectContext == nil, !object.flags.contains(.invalidated) else {
            programmerError(
                "PersistenceKit: insert(_:) — \(object.objectID) already belongs to context "
                    + "'\(object.managedObjectContext?.debugName ?? "another context")' or was removed from one; it cannot "
                    + "be inserted into '\(debugName)'. Rule: an object lives in one context; use object(with:) to get "
                    + "it in another.")
        }
        // The entity `init(context:)` just looked up is known to be in this context's model;
        // only other entities need the model comparison (a weak load and two retains of the
        // model, measured at a fortieth of inserting 100,000 objects).
        let knownEntity = entityCache.generation == currentCoordinatorGeneration && entityCache.entity === object.entity
        guard knownEntity || object.entity.managedObjectModel === coordinator.managedObjectModel else {
            programmerError(
                "PersistenceKit: insert(_:) — entity '\(object.entity.name)' is not part of the model of context "
                    + "'\(debugName)'. Rule: objects must be created from the entity descriptions of the context's model.")
        }
        // An object detached by deleting it before a save keeps its ID; if that ID is
        // permanent (obtainPermanentIDs) another object may have been registered under it
        // since. Registering both would leave one outside the registry still pointing at
        // this context (a dangling reference once the context is freed).
        // (Only a permanent key can be taken: temporary keys are unique in the process, and a
        // new object has no key yet.)
        if object.hasPermanentKey, !coordinator.owns(object.objectID) {
            programmerError(
                "PersistenceKit: insert(_:) — \(object.objectID) has a permanent ID of a store that context "
                    + "'\(debugName)' does not use (another coordinator's). Rule: an object cannot move between "
                    + "coordinators; insert a new object and copy its values.")
        }
        if object.hasPermanentKey, let other = registeredByID[object.objectKey, object.entity], other !== object {
            programmerError(
                "PersistenceKit: insert(_:) — context '\(debugName)' already holds another object with ID \(object.objectID). "
                    + "Rule: an object ID names one object per context; insert a new object instead of re-inserting a "
                    + "deleted one whose ID is in use.")
        }
        object.managedObjectContext = self
        object.flags = [.inserted]
        // Made outside a context: the save hands a new object's value array to the store.
        if object.valueStorage == .defaults { object.takeDefaultValues() }
        if object.hasPermanentKey {
            registeredByID.insert(object)
        } else if object.hasTemporaryKey {
            temporaries.insert(object)
        }
        insertions.append(object)  // announced from there (see `PendingChanges`)
        noteChangesPending()
        if queue.registersUndo.load(ordering: .relaxed) { recordInsertForUndo(object) }
        if !object.hasAwokenFromInsert {
            object.hasAwokenFromInsert = true
            object.awakeFromInsert()
        }
    }

    /// Marks an object for deletion at the next save and calls its `prepareForDeletion()`
    /// before returning. Delete rules run when pending changes are processed (at the end of
    /// the perform block, before a fetch or save, or when you call `processPendingChanges()`).
    ///
    /// Traps when the object is not registered in this context.
    public func delete(_ object: NSManagedObject) {
        assertOnQueue("delete(_:)", object: object)
        var object = object
        if object.isRowStandIn {
            // From a getter a fetch's predicate ran: the row's registered object, or the
            // stand-in made that object; the stand-in itself, which has no context, must not
            // go into the deleted set.
            if let registered = registeredByID[object.objectKey, object.entity] { object = registered } else { adopt(object) }
        }
        guard object.managedObjectContext === self else {
            programmerError(
                "PersistenceKit: delete(_:) — \(object.objectID) is not in context '\(debugName)'. Rule: delete an "
                    + "object through the context that holds it.")
        }
        if object.flags.contains(.deleted) { return }
        object.prepareForAccess("delete(_:)")  // delete rules and deny checks need the values
        object.flags.insert(.deleted)
        object.flags.subtract([.updated, .changeRecorded])
        updatedSet.remove(object)
        deletedSet.insert(object)
        pendingDeletes.append(object)
        unprocessed.deleted.insert(object)
        unprocessed.updated.remove(object)
        noteChangesPending()
        if queue.registersUndo.load(ordering: .relaxed) { recordDeleteForUndo(object) }
        // Here, as Core Data does, not when the deletion is processed: code after `delete(_:)`
        // (and tests written against Core Data) expects it to have run. Once per deletion:
        // delete rules that run again after a merge or refresh do not call it again. Objects
        // a cascade deletes get it when the cascade reaches them.
        object.prepareForDeletion()
    }

    /// Called by objects whenever one of their values changes.
    func objectDidChange(_ object: NSManagedObject) {
        if !object.flags.isDisjoint(with: [.inserted, .deleted]) { return }
        // A fetch's stand-in, written by a getter its predicate ran, is no object of this
        // context: nothing to save.
        if object.isRowStandIn { return }
        if !object.flags.contains(.updated) {
            object.flags.insert(.updated)
            updatedSet.insert(object)
        }
        object.flags.insert(.changeRecorded)
        unprocessed.updated.insert(object)
        noteChangesPending()
    }

    /// Notes that a change waits for `processPendingChanges()`. A private queue processes
    /// it when the `perform` block or actor job ends; the main queue, like Core Data's at
    /// the end of a run-loop turn, on its next turn — also after main-actor code that
    /// changed the view context outside any `perform`, whose changes and refreshes would
    /// otherwise go unannounced until the next fetch or save.
    @inline(__always)
    func noteChangesPending() {
        queue.changesPending.store(true, ordering: .relaxed)
        if queue.kind == .main && !queue.mainQueueProcessingScheduled.load(ordering: .relaxed) { scheduleMainQueueProcessing() }
    }

    @inline(never)
    private func scheduleMainQueueProcessing() {
        guard !queue.mainQueueProcessingScheduled.exchange(true, ordering: .relaxed) else { return }
        let queue = self.queue
        DispatchQueue.main.async { [weak self] in
            queue.mainQueueProcessingScheduled.store(false, ordering: .relaxed)
            self?.processPendingChangesIfNeeded()
        }
    }

    /// Forgets the changes not yet announced (objects may note changes again).
    func clearUnprocessed() {
        for o in unprocessed.updated { o.flags.remove(.changeRecorded) }
        unprocessed = PendingChanges()
        insertions.markAnnounced()
        announcedInsertions = nil  // set again by processPendingChanges, after this
    }

    /// Applies delete rules to pending deletions and posts
    /// `NSManagedObjectContextObjectsDidChange` for the changes made since the last call.
    public func processPendingChanges() {
        assertOnQueue("processPendingChanges()")
        queue.changesPending.store(false, ordering: .relaxed)
        applyDeleteRules()
        if !hasUnprocessedChanges { return }
        let hadInserts = insertions.hasUnannounced
        // Sized up front: built from a lazy filter, the set grew by rehashing (measured: a
        // tenth of saving 100,000 inserts).
        var inserted = Set<NSManagedObject>(minimumCapacity: hadInserts ? insertions.count : 0)
        // `isOwned(by:)`, not `managedObjectContext === self`: the getter returns the context
        // retained, two atomic operations per object of a large save. Not `insert`: see
        // `Set(building:)`.
        insertions.takeUnannounced { o in
            if o.flags.contains(.inserted) && o.isOwned(by: self) {
                o.flags.insert(.insertAnnounced)
                inserted.update(with: o)
            }
        }
        let changes = unprocessed
        let previouslyAnnounced = announcedInsertions
        clearUnprocessed()
        var info: [AnyHashable: Any] = [:]
        // Every member is a pending insertion, so equal counts mean equal sets.
        // With no new inserts, the set announced before still stands (the save checks its
        // version); dropped by a processing for updates or refreshes alone, it would make
        // the next save of many inserts build the set again.
        announcedInsertions =
            !hadInserts ? previouslyAnnounced : inserted.count == insertions.count ? (insertions.version, inserted) : nil
        if !inserted.isEmpty { info[NSInsertedObjectsKey] = inserted }
        if !changes.updated.isEmpty { info[NSUpdatedObjectsKey] = changes.updated }
        if !changes.deleted.isEmpty { info[NSDeletedObjectsKey] = changes.deleted }
        if !changes.refreshed.isEmpty {
            // Only objects still here: a later reset or merged deletion took others away.
            // Not those deleted since: they are announced as deleted only (otherwise a
            // refreshed object deleted before the processing is listed as updated too).
            addRefreshed(
                changes.refreshed.subtracting(changes.deleted).filter {
                    $0.managedObjectContext === self && !$0.flags.contains(.invalidated)
                }, to: &info)
        }
        // Nothing left to announce (an insert deleted before it was announced): no empty
        // notification.
        if info.isEmpty { return }
        post(.NSManagedObjectContextObjectsDidChange, userInfo: info)
    }

    /// Runs delete rules for every pending deletion, including deletions they cascade to.
    private func applyDeleteRules() {
        // In rounds: the deletions pending now, then those their rules cascaded to, and so
        // on; each round in the order the deletions were made. (Taking them one at a time
        // with `removeFirst()` moved the rest of the array each time: deleting 160,000
        // objects in one save took 1.8 s, four times the objects sixteen times as long.)
        var caughtUp = Set<ObjectIdentifier>()
        while !pendingDeletes.isEmpty {
            let round = pendingDeletes
            pendingDeletes = []
            for object in round { applyDeleteRules(to: object, caughtUp: &caughtUp) }
        }
    }

    /// Whether a delete rule can reach `t`: not when it is invalidated, nor when it is a
    /// fault whose row is gone from the store (another coordinator deleted it, and this
    /// context has not merged that yet). Such a row has nothing left to delete or unlink:
    /// its deleter ran its delete rules and saved them with the deletion.
    /// Without this (the randomized conflict test, seeds 736, 1669, 1683, 2833), a cascade
    /// (run again at a save, after a merge gave a pending deletion new targets) reaches a
    /// book's cover deleted by the other coordinator, and firing the fault traps ("could not
    /// fulfill the fault"). The user did nothing wrong, and a rule cannot throw (pending
    /// changes are processed by fetches and at the end of perform blocks too), so the
    /// vanished target is skipped; the rest of the graph is handled as usual.
    /// Costs nothing extra: a fault firing would read the same row, which it now holds.
    private func deleteRuleReaches(_ t: NSManagedObject) -> Bool {
        if t.flags.contains(.invalidated) { return false }
        guard t.flags.contains(.fault), t.snapshot == nil else { return true }
        let readAt = CommitClock.now
        guard let row = rowForFault(t) else { return false }
        t.holdRow(row)
        noteHeldRow(readAt: readAt)
        return true
    }

    /// The delete rules of one pending deletion (see `applyDeleteRules()`). `caughtUp` holds
    /// the nullify targets already brought up to date in this pass.
    private func applyDeleteRules(to object: NSManagedObject, caughtUp: inout Set<ObjectIdentifier>) {
        // A deletion merged from elsewhere may have invalidated it meanwhile.
        guard !object.flags.contains(.invalidated), object.flags.contains(.deleted) else { return }
        for case let r as NSRelationshipDescription in object.entity.properties {
            guard let inverse = r.inverseRelationship else { continue }
            let targets: [NSManagedObject] =
                r.isToMany ? Array(object.resolvedToMany(at: r.index)) : object.resolvedToOne(at: r.index).map { [$0] } ?? []
            switch r.deleteRule {
            case .nullifyDeleteRule:
                for t in targets where deleteRuleReaches(t) {
                    // A changed target is brought up to date first (keeping its changes), so
                    // that what the rule leaves is compared with its newest row. Otherwise an
                    // author changed here (a book added) whose snapshot predates the same
                    // change saved by another coordinator loses that book to this rule, equals
                    // its old snapshot again and is not saved, so its row keeps listing the
                    // deleted book (the randomized conflict test, seed 2221).
                    // (An unchanged one is saved anyway, against the version it was read at.)
                    // Once per target and pass: the first call moves it onto its newest row.
                    if t.flags.contains(.updated), caughtUp.insert(ObjectIdentifier(t)).inserted { bringUpToDate(t) }
                    t.unlink(object, at: inverse.index)
                }
            case .cascadeDeleteRule:
                for t in targets where deleteRuleReaches(t) {
                    if t.flags.contains(.deleted) {
                        t.unlink(object, at: inverse.index)
                    } else {
                        delete(t)
                    }
                }
            case .denyDeleteRule, .noActionDeleteRule:
                break
            }
        }
        if object.flags.contains(.inserted) {
            // Inserted then deleted before any save: the object simply goes away. It was
            // never in the store, so whatever the rule nothing may keep pointing at it.
            // Otherwise, under deny or no action, the saved objects keep it, the save drops
            // the link silently, and they show as changed forever.
            for case let r as NSRelationshipDescription in object.entity.properties
            where r.deleteRule == .denyDeleteRule || r.deleteRule == .noActionDeleteRule {
                guard let inverse = r.inverseRelationship else { continue }
                let targets = r.isToMany ? Array(object.resolvedToMany(at: r.index)) : object.resolvedToOne(at: r.index).map { [$0] } ?? []
                for t in targets where deleteRuleReaches(t) { t.unlink(object, at: inverse.index) }
            }
            insertions.remove(object)
            deletedSet.remove(object)
            // Observers told of the insert hear of the deletion too; an insert not yet
            // announced simply never happened. Without the first half, an announced insert
            // deleted before a save is never announced as gone.
            if !object.flags.contains(.insertAnnounced) { unprocessed.deleted.remove(object) }
            unregister(object)
            // Detached, not invalidated: as in Core Data it keeps its values and can still
            // be read (observers of the change often do); it just has no context.
            object.flags = []
            object.managedObjectContext = nil
            noteDeparture()
        }
    }
}
