import Foundation

extension NSManagedObjectContext {
    /// Merges a save made by another context of the same coordinator, from its
    /// `NSManagedObjectContextDidSave` (or did-save-object-IDs) notification.
    ///
    /// Updated objects registered here are refreshed, keeping this context's own unsaved
    /// changes on top; deleted objects are removed from this context; inserted objects are
    /// registered as faults. Then, on this context's queue:
    /// `NSManagedObjectContextObjectsDidChange` for the objects in use here (merged updates
    /// of loaded objects under ``NSRefreshedObjectsKey``, or ``NSUpdatedObjectsKey`` when
    /// they have unsaved changes here; faults that took the new values are not listed), and
    /// `didMergeChangesObjectIDsNotification` with every ID the save inserted, updated and
    /// deleted, and the refreshed objects' IDs. Call it on this context's queue.
    public func mergeChanges(fromContextDidSave notification: Notification) {
        assertOnQueue("mergeChanges(fromContextDidSave:)")
        mergeSavedChanges(Self.changes(from: notification.userInfo ?? [:], coordinator: coordinator))
    }

    /// Merges changes described by a dictionary of object IDs or URIs — the keys of a did-save
    /// notification (``NSInsertedObjectsKey``… or ``NSInsertedObjectIDsKey``…) with values
    /// that are collections of `NSManagedObjectID`, `NSManagedObject` or ID `URL`s — into each
    /// context, on each context's queue (this call waits for them).
    public static func mergeChanges(fromRemoteContextSave changeNotificationData: [AnyHashable: Any], into contexts: [NSManagedObjectContext]) {
        for context in contexts {
            context.performAndWait {
                context.mergeSavedChanges(changes(from: changeNotificationData, coordinator: context.coordinator))
            }
        }
    }

    /// Extracts object IDs from a notification's user info.
    private static func changes(from info: [AnyHashable: Any], coordinator: NSPersistentStoreCoordinator) -> SavedChanges {
        // A reporting save's own changes, for a context of its coordinator: what an automatic
        // merge would get (rows and changed properties in order).
        if let box = info[savedChangesKey] as? SavedChangesBox, box.coordinator === coordinator { return box.changes }
        func ids(_ keys: [String]) -> [NSManagedObjectID] {
            var result: [NSManagedObjectID] = []
            var seen = Set<NSManagedObjectID>()
            for key in keys {
                guard let value = info[key] else { continue }
                let items: [Any]
                if let s = value as? Set<NSManagedObject> {
                    items = Array(s)
                } else if let s = value as? Set<NSManagedObjectID> {
                    items = Array(s)
                } else if let s = value as? Set<URL> {
                    items = Array(s)
                } else if let a = value as? [Any] {
                    items = a
                } else if let s = value as? Set<AnyHashable> {
                    items = Array(s)
                } else {
                    programmerError(
                        "PersistenceKit: merging changes — the value for '\(key)' is a \(type(of: value)), not a collection of "
                            + "NSManagedObjectID, NSManagedObject or URI URL. Rule: pass a did-save notification's user info.")
                }
                for item in items {
                    let id: NSManagedObjectID?
                    switch item {
                    case let o as NSManagedObject: id = Self.ownedID(o.objectID, key: key, coordinator: coordinator)
                    case let i as NSManagedObjectID: id = Self.ownedID(i, key: key, coordinator: coordinator)
                    case let u as URL: id = coordinator.managedObjectID(forURIRepresentation: u)
                    default:
                        programmerError(
                            "PersistenceKit: merging changes — '\(key)' holds a \(type(of: item)); expected NSManagedObjectID, "
                                + "NSManagedObject or URI URL.")
                    }
                    if let id, !id.isTemporaryID, seen.insert(id).inserted { result.append(id) }
                }
            }
            return result
        }
        return SavedChanges(
            inserted: ids([NSInsertedObjectsKey, NSInsertedObjectIDsKey]),
            updated: ids([NSUpdatedObjectsKey, NSUpdatedObjectIDsKey]),
            deleted: ids([NSDeletedObjectsKey, NSDeletedObjectIDsKey]))
    }

    /// `id` as an ID of `coordinator`: itself, or (for another coordinator on the same store)
    /// the ID its URI names here; traps when it names nothing this coordinator has.
    private static func ownedID(_ id: NSManagedObjectID, key: String, coordinator: NSPersistentStoreCoordinator) -> NSManagedObjectID? {
        if id.isTemporaryID || coordinator.owns(id) { return id }
        if let mine = coordinator.managedObjectID(forURIRepresentation: id.uriRepresentation()) { return mine }
        programmerError(
            "PersistenceKit: merging changes — \(id) under '\(key)' belongs to a store this coordinator does not have. "
                + "Rule: merge only saves of the same store.")
    }

    /// Applies another context's save to this one (on this context's queue).
    func mergeSavedChanges(_ changes: SavedChanges) {
        assertOnQueue("merging changes")
        // A pinned context moves to the store's current generation first, so that what it
        // merges is what it reads afterwards (Core Data advances the generation on a merge).
        advanceQueryGeneration()
        var inserted = Set<NSManagedObject>()
        var refreshed = Set<NSManagedObject>()
        var deleted = Set<NSManagedObject>()
        // Saves are broadcast after the commit lock is released, so the merge of a later
        // save that deleted an inserted row can arrive first, find nothing to delete, and
        // leave this insert to register an object for a row that is gone.
        // The IDs are this coordinator's (see `changes(from:)`). An unregistered one is looked
        // up only when it names a row of the primary store, the one store fetches and faults
        // read (an ID of another store, or of one removed meanwhile, registers nothing). No
        // `coordinator.owns` here: it takes the coordinator's lock per ID.
        let store = try? coordinator.primaryStore(for: "merging")
        let number = store.map { storeNumber(for: $0.identifier) }
        for id in changes.inserted {
            if let o = registeredObject(id) {
                inserted.insert(o)
            } else if let row = id.rowID, let store, id.objectKey.store == number,
                (try? store.containsRow(row)) == true
            {
                inserted.insert(object(with: id))
            }
        }
        let rows = changes.rows.isEmpty ? [:] : Dictionary(changes.rows.map { ($0.id, $0) }, uniquingKeysWith: { _, b in b })
        // Observed objects the save updated, with their position in `changes.updated`,
        // collected here where each is looked up anyway (see `ObservationRouter`).
        var observedUpdates: [(object: NSManagedObject, index: Int)] = []
        for (index, id) in changes.updated.enumerated() {
            guard let o = registeredByID[id] else { continue }
            if o.observationRegistrar != nil { observedUpdates.append((o, index)) }
            // An inaccessible object found its row gone: an update saved before the deletion
            // (broadcasts can arrive after the fault fired) must not give it values again and
            // rerun its delete rules on them, or the merge leaves an unchanged shelf "updated"
            // by the nullify rule, after the deletion was merged too.
            if o.flags.contains(.deleted) && inaccessibleObjects.contains(o) { continue }
            let readAt = CommitClock.now
            let saved = id.rowID.flatMap { rows[$0] }
            guard let row = saved ?? rowForFault(o) else { continue }
            // Saves are broadcast after the commit lock is released, so two merges can
            // arrive out of order: never move an object back to an older version.
            if let current = o.snapshot, current.version >= row.version { continue }
            if o.flags.contains(.fault) {
                o.holdRow(row)
                // A held row is checked against later commits like a fetched one; otherwise a
                // merged row, replaced by a save not merged here, passes for current once a
                // later fetch notes a newer reading.
                noteHeldRow(readAt: saved == nil ? readAt : changes.clock)
            } else {
                rebase(o, onto: row)
            }
            // Deleted here, changed there: the merged row may link objects the delete rules
            // never saw, so they run again (`prepareForDeletion()` ran once, in `delete(_:)`),
            // or the save deletes the row and leaves the new links dangling.
            if o.flags.contains(.deleted) {
                pendingDeletes.append(o)
            }
            // A fault takes the new values silently: Core Data announces merged updates only
            // of objects in use (its merge refreshes no fault).
            if !o.flags.contains(.fault) { refreshed.insert(o) }
        }
        for id in changes.deleted {
            guard let o = registeredByID[id] else { continue }
            registeredByID.remove(id)
            insertions.remove(o)
            updatedSet.remove(o)
            deletedSet.remove(o)
            pendingDeletes.removeAll { $0 === o }
            unprocessed.updated.remove(o)
            o.flags.remove(.changeRecorded)
            unprocessed.deleted.remove(o)
            unprocessed.refreshed.remove(o)  // or the invalidated object lives on until then
            rebasedWhileChanged[ObjectIdentifier(o)] = nil
            deleted.insert(o)
        }
        // Objects that pointed at deleted ones let go of them. The saver's changes to those
        // objects arrive as updates, but an object changed here keeps its own relationship
        // values: unlink the deleted objects from those, as Core Data's merge deletes them
        // here. Otherwise a changed to-one keeps the invalidated object, and saving writes a
        // reference to the deleted row.
        if !deleted.isEmpty { unlinkFromChangedObjects(deleted) }
        for o in deleted { o.invalidate() }
        if !deleted.isEmpty { noteDeparture() }
        var announcedRefreshed = Set<NSManagedObject>()
        if !inserted.isEmpty || !refreshed.isEmpty || !deleted.isEmpty {
            var info: [AnyHashable: Any] = [:]
            if !inserted.isEmpty { info[NSInsertedObjectsKey] = inserted }
            announcedRefreshed = addRefreshed(refreshed, to: &info)
            if !deleted.isEmpty { info[NSDeletedObjectsKey] = deleted }
            post(.NSManagedObjectContextObjectsDidChange, userInfo: info)
        }
        // Every ID of the save, registered here or not, as Core Data's did-merge carries them;
        // refreshed: the objects objects-did-change listed as refreshed (so never a dirty
        // one), not every registered object.
        // Not filtered by `coordinator.owns`: the IDs are this coordinator's already (a
        // notification's are mapped or refused by `changes(from:)`), and the check takes a
        // lock per ID (measured: it doubled merging a 100,000-object save here).
        let merged = ObjectIDChanges(
            inserted: Set(building: changes.inserted), updated: Set(building: changes.updated), deleted: Set(building: changes.deleted))
        if merged.inserted.isEmpty && merged.updated.isEmpty && merged.deleted.isEmpty { return }
        forwardToMergingChildren(changes, except: nil)
        postObjectIDs(
            NSManagedObjectContext.didMergeChangesObjectIDsNotification, merged, refreshed: Set(announcedRefreshed.map(\.objectID)))
        instrumentingRouter?.routeMerge(changes, observedUpdates: observedUpdates, inserted: inserted, deleted: deleted)
    }

    /// Removes every reference to `gone` from the relationships of this context's changed
    /// objects (inserted, updated or deleted here), whose values a merge does not replace.
    ///
    /// Where the deleted object's rule for that relationship is cascade, the changed object
    /// is deleted here as well: Core Data's merge calls `delete(_:)` on the objects deleted
    /// elsewhere, and their rules then reach what this context linked to them; unlinked
    /// only, a book inserted here on a shelf another context deleted would be saved without
    /// a shelf. Other rules unlink, as nullify does.
    private func unlinkFromChangedObjects(_ gone: Set<NSManagedObject>) {
        let goneRows = Set(gone.compactMap(\.rowID))
        var changed = insertions.objects
        changed.append(contentsOf: updatedSet)
        changed.append(contentsOf: deletedSet)
        var cascaded: [NSManagedObject] = []
        for o in changed where !gone.contains(o) && !o.entity.hasOnlyPersistentAttributes {
            o.loadSlots()
            var reached = false
            for (i, kind) in o.entity.slotKinds.enumerated() {
                switch (kind, o.storedSlots[i]) {
                case let (.toOne, .toOne(target?)) where gone.contains(target):
                    o.storedSlots[i] = .toOne(nil)
                case let (.toOne, .unresolvedToOne(row?)) where goneRows.contains(row):
                    o.storedSlots[i] = .unresolvedToOne(nil)
                case var (.toMany, .toMany(targets)) where !targets.isDisjoint(with: gone):
                    targets.subtract(gone)
                    o.storedSlots[i] = .toMany(targets)
                    o.forgetToManyEdits()
                case let (.toMany, .unresolvedToMany(rows)) where rows.contains(where: goneRows.contains):
                    o.storedSlots[i] = .unresolvedToMany(rows.filter { !goneRows.contains($0) })
                    o.forgetToManyEdits()
                default:
                    continue
                }
                let inverse = (o.entity.properties[i] as? NSRelationshipDescription)?.inverseRelationship
                if inverse?.deleteRule == .cascadeDeleteRule { reached = true }
            }
            if reached && !o.flags.contains(.deleted) { cascaded.append(o) }
        }
        for o in cascaded { delete(o) }
    }

    /// After a merge or a conflict resolution chose `o`'s to-one relationship `i` over the
    /// value in `losing` (the store's or this context's), makes the other ends agree: the
    /// losing target lets go of `o`, and the chosen one lists it. Without this the file
    /// store, which keeps both ends of a link, would save one end that the other denied: a
    /// book changed to different shelves in two contexts would end up in two shelves. No
    /// effect on to-many relationships (`mergedToMany` merges their values;
    /// after a conflict, `reconcileToMany` settles their other ends) or attributes.
    func reconcileToOne(of o: NSManagedObject, at i: Int, losing: Slot) {
        guard let r = o.entity.properties[i] as? NSRelationshipDescription, !r.isToMany,
            let inverse = r.inverseRelationship, let destination = r.destinationEntity
        else { return }
        let loser: NSManagedObject? =
            switch losing {
            case let .toOne(target): target
            case let .unresolvedToOne(row?): object(forRow: row, entity: destination)
            default: nil
            }
        var winner = o.resolvedToOne(at: i)
        if let w = winner, isGoneFromStore(w) || (w.flags.contains(.deleted) && !o.flags.contains(.deleted)) {
            // The chosen target's row was deleted elsewhere (an unfired fault here): the
            // link cannot be kept, and firing the fault would trap.
            o.primitiveSetToOne(nil, at: i)
            winner = nil
        }
        if let loser, loser !== winner, !loser.flags.contains(.invalidated), !isGoneFromStore(loser) {
            bringUpToDate(loser)  // a stale loaded loser may not list `o` yet, though its row does
            loser.unlink(o, at: inverse.index)
        }
        if let winner, !winner.flags.contains(.invalidated) {
            winner.prepareForAccess("updating the inverse '\(inverse.name)'")  // loads a fault
            // A stale loaded winner may list `o` while its row no longer does: checked against
            // its newest row, or the link is not written.
            bringUpToDate(winner)
            let listed =
                inverse.isToMany ? winner.resolvedToMany(at: inverse.index).contains(o) : winner.resolvedToOne(at: inverse.index) === o
            if !listed { winner.link(o, at: inverse.index) }
        }
    }

    /// After a by-property merge policy settled `o`'s to-many relationship `i` (`before`:
    /// its value until then; `o`'s snapshot: the store's row it was settled against), makes
    /// the other ends agree with the value it has now: each target it lists lists it back,
    /// and each target it no longer lists, or that the store's row listed, lets go of it —
    /// each brought up to date first, so that the save writes both ends alike. Targets whose
    /// row is gone, or that this save deletes, are dropped from the value.
    /// Why: the policy settles each object in conflict by itself, and a set it keeps can
    /// still be unlike the rows of its targets. In the randomized conflict test (seeds 4869
    /// and 6284) an author's set of books, the same in the store at the two versions
    /// compared (another save made and unmade a link in between), keeps this context's link
    /// to a book whose row no longer lists the author — the book, also in conflict, takes
    /// the store's authors (4869), or is a stale copy not saved at all (6284).
    /// The callers run it once every conflicting object is settled, so that each target is
    /// measured against its settled row; a target settled later follows the values the
    /// earlier calls left. Cost: only targets whose link differs between `before`, the
    /// stored value and the current one are looked at.
    func reconcileToMany(of o: NSManagedObject, at i: Int, before: Slot) {
        guard let r = o.entity.properties[i] as? NSRelationshipDescription, r.isToMany, !o.flags.contains(.invalidated),
            let inverse = r.inverseRelationship, let destination = r.destinationEntity, let stored = o.snapshot?.value(at: i)
        else { return }
        // Targets by row (inserted ones, which have none yet, by identity), so that the three
        // values are compared without turning every stored row into an object.
        enum End: Hashable {
            case row(StoreRowID)
            case unsaved(ObjectIdentifier)
        }
        var objects: [End: NSManagedObject] = [:]
        func ends(_ slot: Slot) -> Set<End> {
            switch slot {
            case let .toMany(set):
                return Set(
                    set.map { t in
                        let end = t.rowID.map(End.row) ?? .unsaved(ObjectIdentifier(t))
                        objects[end] = t
                        return end
                    })
            case let .unresolvedToMany(rows): return Set(rows.map(End.row))
            default: return []
            }
        }
        let was = ends(before), now = ends(o.slots[i])
        let inStore: Set<End> = if case let .references(rows) = stored { Set(rows.map(End.row)) } else { [] }
        let all = was.union(now).union(inStore)
        let differing = all.subtracting(was.intersection(now).intersection(inStore))
        for end in differing {
            let t: NSManagedObject
            if let known = objects[end] {
                t = known
            } else if case let .row(row) = end {
                t = object(forRow: row, entity: destination)
            } else {
                continue
            }
            if t.flags.contains(.invalidated) { continue }
            if now.contains(end) {
                if isGoneFromStore(t) || t.flags.contains(.deleted) {
                    o.primitiveRemove(t, toManyAt: i)  // the link cannot be kept (see `reconcileToOne`)
                    continue
                }
                t.prepareForAccess("updating the inverse '\(inverse.name)'")  // loads a fault
                bringUpToDate(t)  // a stale loaded target may list `o` while its row does not
                let listed =
                    inverse.isToMany ? t.resolvedToMany(at: inverse.index).contains(o) : t.resolvedToOne(at: inverse.index) === o
                if !listed { t.link(o, at: inverse.index) }
            } else if !t.flags.contains(.deleted), !isGoneFromStore(t) {
                t.prepareForAccess("updating the inverse '\(inverse.name)'")
                bringUpToDate(t)
                t.unlink(o, at: inverse.index)
            }
        }
    }

    /// Whether `t`'s row no longer exists in the store (deleted by another context or
    /// coordinator whose save this context has not merged).
    /// Loaded objects count too: one loaded before another coordinator deleted its row and
    /// kept in a to-many this save writes would leave the store listing a missing row
    /// (under the overwrite policy, for one).
    func isGoneFromStore(_ t: NSManagedObject) -> Bool {
        if t.flags.contains(.inserted) || t.flags.contains(.invalidated) { return false }
        guard let row = t.rowID, let store = try? coordinator.primaryStore(for: "checking a row") else { return false }
        return (try? store.containsRow(row)) == false
    }

    /// Moves a loaded, unchanged-or-changed object onto its newest store row when the row
    /// is newer than its snapshot (keeping its own changes on top).
    func bringUpToDate(_ t: NSManagedObject) {
        guard t.flags.isDisjoint(with: [.fault, .inserted, .deleted, .invalidated]), let snapshot = t.snapshot,
            let id = t.rowID, let store = try? coordinator.primaryStore(for: "bringing an object up to date")
        else { return }
        // The version first, from the row table: most calls find the object current, and
        // decoding its row each time (a shelf with all its book keys) made deleting books
        // one pass at a time quadratic (measured: 4,000 deletions took 3.6 s).
        guard let version = try? store.rowVersion(id), version > snapshot.version, let row = try? store.fetchRow(id)
        else { return }
        let key = ObjectIdentifier(t)
        let readVersion = rebasedWhileChanged[key]?.readVersion ?? snapshot.version
        rebase(t, onto: row)
        // Its edits now sit on a row another context saved, which the save's version check
        // no longer sees: remembered, so that the error policy still reports the conflict.
        // Otherwise deleting one of a shelf's books moves the edited shelf onto the row
        // another context saved with a new name, and the save overwrites that name without
        // a conflict.
        if t.flags.contains(.updated) { rebasedWhileChanged[key] = (t, readVersion) }
    }

    /// After a conflict resolution replaced all of `o`'s relationships with one side's,
    /// makes the other ends agree with `o`: the targets of the losing values (`losing`, slot
    /// by slot) let go of it, and the targets it keeps list it. With `ancestor`, only the
    /// relationships the store changed since then. Without this, the overwrite and rollback
    /// policies leave targets listing an object that no longer points back, and save them
    /// so.
    func reconcileRelationships(of o: NSManagedObject, losing: ContiguousArray<Slot>, changedSince ancestor: StoreRow?, _ current: StoreRow) {
        for case let r as NSRelationshipDescription in o.entity.properties {
            let i = r.index
            if let ancestor, ancestor.value(at: i) == current.value(at: i) { continue }
            guard let inverse = r.inverseRelationship, let destination = r.destinationEntity else { continue }
            if !r.isToMany {
                reconcileToOne(of: o, at: i, losing: losing[i])
                continue
            }
            let lost: [NSManagedObject] =
                switch losing[i] {
                case let .toMany(set): Array(set)
                case let .unresolvedToMany(rows): rows.map { object(forRow: $0, entity: destination) }
                default: []
                }
            let kept = o.resolvedToMany(at: i)
            for t in lost where !kept.contains(t) && !t.flags.contains(.invalidated) && !isGoneFromStore(t) {
                t.prepareForAccess("updating the inverse '\(inverse.name)'")  // loads a fault
                bringUpToDate(t)
                t.unlink(o, at: inverse.index)
            }
            // Targets whose row is gone, or that this save deletes, are not kept: the store's
            // version (rollback) may still list an object deleted here.
            for t in kept where isGoneFromStore(t) || t.flags.contains(.deleted) { o.primitiveRemove(t, toManyAt: i) }
            for t in o.resolvedToMany(at: i) where !t.flags.contains(.invalidated) {
                t.prepareForAccess("updating the inverse '\(inverse.name)'")
                bringUpToDate(t)  // as for a to-one winner above
                let listed = inverse.isToMany ? t.resolvedToMany(at: inverse.index).contains(o) : t.resolvedToOne(at: inverse.index) === o
                if !listed { t.link(o, at: inverse.index) }
            }
        }
    }

    /// Moves a loaded object onto a newer store row, keeping the properties it changed
    /// since its old snapshot. A to-many relationship changed on both sides keeps both
    /// sides' additions and removals, as a conflict merge does (`mergedToMany`).
    func rebase(_ o: NSManagedObject, onto row: StoreRow) {
        // Moved on by a merge, a refresh or a settled conflict: its edits are on top of what
        // it was told of, so no conflict is left to report (`bringUpToDate` notes it again).
        if !rebasedWhileChanged.isEmpty { rebasedWhileChanged[ObjectIdentifier(o)] = nil }
        if o.valueStorage == .snapshot && !o.flags.contains(.updated) {
            o.install(row)  // nothing changed since the old snapshot: the new one is the values
            return
        }
        let changed = o.entity.properties.indices.filter { o.persistentValueDiffers(at: $0) }
        let transient = o.entity.properties.indices.filter { o.entity.properties[$0].isTransient }
        var slots = o.decode(row)
        let ancestor = o.snapshot
        let saved = slots
        for i in changed + transient { slots[i] = o.slots[i] }
        // A set is links, not one value: the saver's changes to it count too. Copying this
        // context's whole set back would drop the saver's removals, and the store would then
        // hold a link one side no longer has.
        for i in changed {
            guard let r = o.entity.properties[i] as? NSRelationshipDescription, r.isToMany, let ancestor else { continue }
            let before = ancestor.value(at: i)
            let after = row.value(at: i)
            if before != after {
                slots[i] = .toMany(mergedToMany(o, at: i, ancestor: before, theirs: after, destination: r.destinationEntity))
            }
        }
        o.slots = slots
        o.snapshot = row
        for i in changed { reconcileToOne(of: o, at: i, losing: saved[i]) }  // this context's value stays
        if changed.isEmpty && o.flags.contains(.updated) {
            o.flags.subtract([.updated, .changeRecorded])
            updatedSet.remove(o)
        }
    }
}
