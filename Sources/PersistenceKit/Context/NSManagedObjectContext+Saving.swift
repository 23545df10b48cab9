import Foundation

/// What one save changed, in a form that can cross to other contexts' queues.
struct SavedChanges: Sendable {
    var inserted: [NSManagedObjectID] = []
    var updated: [NSManagedObjectID] = []
    var deleted: [NSManagedObjectID] = []
    /// The rows as committed, so merging contexts need not read them back.
    var rows: [StoreRow] = []
    /// The ``CommitClock`` reading as of which `rows` are current (0: not known).
    var clock: UInt64 = 0
    /// The properties each updated object changed, when the saving context reported them
    /// (see `NSManagedObjectContext+Observation.swift`); `nil`: object IDs only.
    var changedProperties: ChangedProperties?
    /// Where `changedProperties.ids` start in `updated`: they are its tail, in the same order.
    var changedPropertiesStart = 0
}

// The save pipeline:
//   process pending changes (delete rules) → will-save notification and willSave() hooks
//   → validation (every error of every object, reported together) → permanent IDs
//   → one store transaction, with optimistic-lock versions → merge policy on conflict
//   → object state, didSave() hooks, did-save notifications, automatic merges elsewhere.
// Nothing in the context changes before the store has committed, so a failed save leaves
// the store untouched and the context's pending changes exactly as they were (merge
// policies other than the default error policy are the exception: resolving a conflict
// rewrites the conflicting objects, as in Core Data).
extension NSManagedObjectContext {
    /// Saves the context's inserts, updates and deletes to the store as one atomic
    /// transaction. With no changes nothing is written, but will-save, then did-save and
    /// did-save object IDs (with no objects) are posted, as Core Data does: check
    /// ``hasChanges`` first to skip them. What a will-save observer changes is saved too.
    ///
    /// - Throws: ``CoreDataError``: a validation code (several problems come back together as
    ///   `.validationMultipleErrors`, one detailed error per problem and object);
    ///   `.managedObjectConstraintMerge` with the ``NSConstraintConflict``s when the save would
    ///   break a uniqueness constraint and the merge policy is ``NSErrorMergePolicy`` (other
    ///   policies resolve it: see NSManagedObjectContext+ConstraintConflicts.swift);
    ///   `.managedObjectMerge` with the conflicts when another context saved the same objects
    ///   first and the merge policy is ``NSErrorMergePolicy`` — and under any policy when an
    ///   object this save updates was deleted from the store meanwhile (no policy brings a
    ///   deleted row back; its `NSMergeConflict` has `newVersionNumber` 0), or when the
    ///   16th attempt of the commit still conflicts; `.coreData` when there is something to
    ///   write and no store is loaded (checked before will-save, and again after it, for
    ///   what a will-save observer changed); `.persistentStoreSave` when the store fails. After a thrown error the store
    ///   holds nothing of this save (but for a store on a server whose connection dropped
    ///   during the commit: its error, the `underlying`, says whether the save committed).
    ///   The context keeps its changes as they were, except
    ///   where another merge policy already resolved a conflict in an earlier attempt of
    ///   this save: those objects keep the resolved values.
    public func save() throws {
        assertOnQueue("save()")
        programmerCheck(
            !isSaving,
            "PersistenceKit: save() called on context '\(debugName)' while it is already saving (from willSave/didSave "
                + "or a will-save observer). Rule: do not save recursively.")
        processPendingChanges()
        // Inaccessible faults have no row left to delete: dropped here, not written (a delete
        // of a missing row would be a conflict), and again below for any a hook fired.
        discardInaccessibleObjects()
        // A save with nothing to write needs no store (none may be loaded yet).
        let loadedStore = hasUnsavedChanges ? try coordinator.primaryStore(for: "save()") : nil
        if let loadedStore { try coordinator.refuseWrites(to: loadedStore, "save()") }
        isSaving = true
        defer { isSaving = false }

        post(.NSManagedObjectContextWillSave, userInfo: nil)
        instrumentingRouter?.viewContextWillSave()
        // What will-save observers changed is processed before the hooks, so that the first
        // round below covers it and what is unprocessed after the round is the hooks' doing.
        processPendingChanges()
        guard hasUnsavedChanges else {
            // Core Data posts will-save and did-save for a save with nothing to write too (a
            // public Core Data test suite shows it), and code counting saves by did-save
            // counts these. Nothing goes to the store.
            finishEmptySave()
            return
        }
        let store = try loadedStore ?? coordinator.primaryStore(for: "save()")
        // Again: a will-save observer may have made the changes (no store was looked up then).
        try coordinator.refuseWrites(to: store, "save()")
        // Core Data promises no order for willSave(); iterating the sets saves three sorts.
        insertions.forEach { $0.willSave() }
        for set in [updatedSet, deletedSet] {
            for o in set { o.willSave() }
        }
        try callWillSaveOnObjectsTheHooksChanged()
        discardInaccessibleObjects()
        // Derived attributes last: they read what the hooks left.
        updateDerivedAttributes()
        // Ordered once per save: hooks, validation, key allocation and the transaction all
        // use these (sorting 100k inserts five times was a measurable share of a save).
        var inserted = insertions.objects
        var insertedVersion = insertions.version
        var updated = objectsInSaveOrder(updatedSet)
        var deleted = objectsInSaveOrder(deletedSet)
        try validatePendingChanges(inserted, updated, deleted)
        try includeChangesOfValidationHooks(&inserted, &insertedVersion, &updated, &deleted)
        try reportConflictsOfRebasedObjects()

        // Usually none has a permanent ID yet: then no second array of every object.
        let needingRows = inserted.contains(where: \.hasPermanentKey) ? inserted.filter { !$0.hasPermanentKey } : inserted
        try allocateRows(for: needingRows, in: store, ordered: true)
        // Success or failure, the rows handed out are this attempt's only (after a commit,
        // finishSave clears them in its pass over the objects).
        var finished = false
        defer { if !finished { for o in needingRows { o.pendingRow = nil } } }
        let reportsChanges = reportsChangedProperties
        for attempt in 1...16 {
            // Per attempt: resolving a conflict changes what the objects changed.
            let (transaction, written, changed) = makeTransaction(
                inserted: inserted, updated: updated.filter { updatedSet.contains($0) }, reportingChanges: reportsChanges,
                deleted: deleted.filter { deletedSet.contains($0) })
            let result: StoreCommitResult
            let clock: UInt64
            do {
                (result, clock) = try coordinator.commit(transaction, to: store)
            } catch let error as CoreDataError {
                throw error
            } catch where error is FileStoreError || error is StoreIOError {
                throw CoreDataError(
                    .persistentStoreSave, "the store failed to save: \(error). Nothing of this save was written; "
                        + "the context keeps its changes.",
                    underlying: error)
            } catch {
                // A store of another kind (a database server) says itself whether the save
                // reached it: a dropped connection can leave that unknown to this process.
                throw CoreDataError(
                    .persistentStoreSave, "the store failed to save: \(error). The context keeps its changes.",
                    underlying: error)
            }
            switch result {
            case let .committed(rows):
                finished = true
                finishSave(
                    inserted: inserted, insertedVersion: insertedVersion, updated: updated, deleted: deleted,
                    written: written, sent: transaction, committed: rows, clock: clock, store: store, changed: changed)
                advanceQueryGeneration()  // a pinned context reads what it just saved
                return
            case let .conflicts(conflicts):
                try resolve(conflicts, store: store, finalAttempt: attempt == 16)
                // Resolving may change other objects (the other ends of relationships it
                // settled): they are saved too.
                updated = objectsInSaveOrder(updatedSet)
            case let .constraintConflicts(clashes):
                try resolve(clashes, sent: transaction, written: written, store: store, finalAttempt: attempt == 16)
                // Objects that left the save leave its lists (see +ConstraintConflicts.swift).
                inserted = inserted.filter { $0.flags.contains(.inserted) }
                insertedVersion = insertions.version
                updated = objectsInSaveOrder(updatedSet)
            }
        }
    }

    /// Whether any insert, update or deletion waits for a save.
    private var hasUnsavedChanges: Bool { !insertions.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty }

    /// The did-save notifications of a save that wrote nothing: no objects, no IDs. (The
    /// `didSaveObjectIDs()` stream, ours, not Core Data's, yields only saves that wrote.)
    private func finishEmptySave() {
        post(.NSManagedObjectContextDidSave, userInfo: [:])
        postObjectIDs(NSManagedObjectContext.didSaveObjectIDsNotification, ObjectIDChanges(inserted: [], updated: [], deleted: []))
    }

    /// Under the error policy, a changed object that link upkeep moved onto a row saved
    /// elsewhere (`rebasedWhileChanged`) is a conflict, reported before anything is
    /// written, as the store's version check would have reported it. Other policies save
    /// it: its edits already sit on the newer row.
    private func reportConflictsOfRebasedObjects() throws {
        guard !rebasedWhileChanged.isEmpty else { return }
        rebasedWhileChanged = rebasedWhileChanged.filter { updatedSet.contains($0.value.object) }
        guard !rebasedWhileChanged.isEmpty, mergePolicyStorage.mergeType == .errorMergePolicyType else { return }
        let conflicts = rebasedWhileChanged.values.map { entry in
            NSMergeConflict(
                objectID: entry.object.objectID, oldVersionNumber: Int(entry.readVersion),
                newVersionNumber: Int(entry.object.snapshot?.version ?? 0))
        }
        .sorted { $0.oldVersionNumber < $1.oldVersionNumber }
        throw Self.mergeConflictError(conflicts)
    }

    /// The error of a save that met `conflicts` under the error policy (or on its last attempt).
    static func mergeConflictError(_ conflicts: [NSMergeConflict]) -> CoreDataError {
        CoreDataError(
            .managedObjectMerge,
            "the save conflicts with changes saved elsewhere since these objects were read "
                + "(\(conflicts.map(\.description).joined(separator: "; "))). Nothing was written. Refresh the objects "
                + "(refresh(_:mergeChanges:)) and save again, or set a merge policy such as "
                + "NSMergeByPropertyObjectTrumpMergePolicy.",
            conflicts: conflicts)
    }

    /// Objects the validation hooks inserted, changed or deleted beyond the lists join this
    /// save: in rounds, each processing them (delete rules), calling their `willSave()` and
    /// validating them, until a round finds nothing new. `save()` saves every pending change,
    /// whoever made it. Dropped from the sets unsaved, such changes would be lost for good:
    /// the objects, still flagged changed, never enter the sets again, and a link a hook
    /// removed is saved on one end only. When the hooks changed nothing, the check is an
    /// empty set.
    private func includeChangesOfValidationHooks(
        _ inserted: inout [NSManagedObject], _ insertedVersion: inout Int,
        _ updated: inout [NSManagedObject], _ deleted: inout [NSManagedObject]
    ) throws {
        for round in 1... {
            // After the first round the willSave() hooks have processed what they changed:
            // only the comparison below finds it.
            if round == 1 && !hasUnprocessedChanges && pendingDeletes.isEmpty && insertions.version == insertedVersion { return }
            processPendingChanges()
            discardInaccessibleObjects()
            let listedInserts = Set(inserted.lazy.map(ObjectIdentifier.init))
            let newInserted = insertions.objects.filter { !listedInserts.contains(ObjectIdentifier($0)) }
            let newUpdated = objectsInSaveOrder(updatedSet.subtracting(updated))
            let newDeleted = objectsInSaveOrder(deletedSet.subtracting(deleted))
            inserted = insertions.objects  // without inserts a hook deleted again
            insertedVersion = insertions.version
            if newInserted.isEmpty && newUpdated.isEmpty && newDeleted.isEmpty { return }
            guard round < 100 else {
                throw CoreDataError(
                    .coreData, "validation hooks in context '\(debugName)' still changed other objects after 100 rounds "
                        + "(among them \((newInserted + newUpdated + newDeleted)[0].objectID)). Rule: validateFor…() "
                        + "should check objects, not keep changing them. Nothing was saved.")
            }
            for o in newInserted { o.willSave() }
            for o in newUpdated { o.willSave() }
            for o in newDeleted { o.willSave() }
            try callWillSaveOnObjectsTheHooksChanged()
            try validatePendingChanges(newInserted, newUpdated, newDeleted)
            updated += newUpdated
            deleted += newDeleted
        }
    }

    /// Objects ordered for hooks, validation and key allocation: insertion order, then ID.
    func objectsInSaveOrder(_ set: Set<NSManagedObject>) -> [NSManagedObject] {
        set.sorted {
            if $0.insertionIndex != $1.insertionIndex { return $0.insertionIndex < $1.insertionIndex }
            let a = $0.rowID, b = $1.rowID
            if let a, let b { return a < b }
            return a == nil && b != nil
        }
    }

    /// Runs the validate hooks of every changed object and reports all failures at once.
    private func validatePendingChanges(
        _ inserted: [NSManagedObject], _ updated: [NSManagedObject], _ deleted: [NSManagedObject]
    ) throws {
        var errors: [any Error] = []
        func collect(_ body: () throws -> Void) {
            do { try body() } catch { errors.append(error) }
        }
        for o in inserted where o.entity.isAbstract {
            errors.append(
                CoreDataError(
                    .managedObjectValidation, objectID: o.objectID,
                    "\(o.objectID) is an object of the abstract entity '\(o.entity.name)', which has no objects of its own; "
                        + "insert an object of one of its sub-entities (\(o.entity.subentities.map(\.name).sorted().joined(separator: ", "))) "
                        + "instead."))
        }
        for o in inserted { collect { try o.validateForInsert() } }
        for o in updated { collect { try o.validateForUpdate() } }
        for o in deleted { collect { try o.validateForDelete() } }
        for o in inserted where !o.entity.hasOnlyPersistentAttributes { errors += danglingReferences(of: o) }
        for o in updated where !o.entity.hasOnlyPersistentAttributes { errors += danglingReferences(of: o) }
        if errors.count == 1 { throw errors[0] }
        let typed = errors.map { e -> CoreDataError in
            (e as? CoreDataError) ?? CoreDataError(.managedObjectValidation, "\(e)")
        }
        if let combined = CoreDataError.combining(typed) { throw combined }
    }

    /// Relationship targets a save cannot store: objects that are not in this context (never
    /// inserted, detached, invalidated, or another context's). Core Data fails the save with
    /// "Dangling reference to an invalid object"; writing them dropped the link silently.
    private func danglingReferences(of o: NSManagedObject) -> [CoreDataError] {
        var errors: [CoreDataError] = []
        func check(_ t: NSManagedObject, _ i: Int) {
            if !t.isOwned(by: self) {
                errors.append(
                    CoreDataError(
                        .managedObjectValidation, objectID: o.objectID, key: o.entity.properties[i].name,
                        "dangling reference: '\(o.entity.name).\(o.entity.properties[i].name)' points at \(t.objectID), "
                            + "which is not in context '\(debugName)' (never inserted, deleted, or in another context). "
                            + "Insert it here, or bring it over with object(with:)."))
            }
        }
        // The set is walked in place, with an identity check per target: copying it into an
        // array and loading each target's context was half of saving a shelf of 50,000 books
        // that gained one.
        for (i, kind) in o.entity.slotKinds.enumerated() where kind == .toOne || kind == .toMany {
            switch o.slots[i] {
            case let .toOne(t?): check(t, i)
            case let .toMany(set):
                // Only the targets added since the snapshot, when that is known to suffice.
                if let added = o.toManyTargetsToCheck(at: i) {
                    for t in added { check(t, i) }
                    assert(
                        set.allSatisfy { $0.isOwned(by: self) || added.contains($0) },
                        "PersistenceKit internal error: a target of \(o.objectID).\(o.entity.properties[i].name) left the "
                            + "context without the tracked to-many edits noticing")
                } else {
                    for t in set { check(t, i) }
                }
            default: continue
            }
        }
        return errors
    }

    /// The store transaction for the current changes, and the objects whose rows it writes
    /// (inserts then updates, in transaction order).
    /// The transaction that writes the objects, the objects written (inserted, then
    /// updated), and, with `reportingChanges`, the properties each of `updated` changed
    /// (`ChangedProperties`, in `updated`'s order: compared here, while each object's values
    /// are at hand, not in a pass of their own over every updated object).
    private func makeTransaction(
        inserted: [NSManagedObject], updated: [NSManagedObject], reportingChanges: Bool = false, deleted: [NSManagedObject]
    ) -> (StoreTransaction, [NSManagedObject], ChangedProperties?) {
        let rowFor: (NSManagedObject) -> StoreRowID? = { o in o.rowID ?? o.pendingRow }
        func encode(_ o: NSManagedObject) -> [StoreValue] {
            if o.valueStorage == .values { return o.storedValues }  // the same storage: no copy
            let kinds = o.entity.slotKinds
            return kinds.indices.map { i in kinds[i].isTransient ? .null : o.encodedValue(at: i, rowFor: rowFor) }
        }
        var t = StoreTransaction()
        t.author = transactionAuthor
        t.contextName = name
        // Every inserted object is written, so the list of written objects starts with
        // `inserted` itself (a copy of it was a pass over every object, retaining each).
        var writtenUpdates: [NSManagedObject] = []
        t.inserts.reserveCapacity(inserted.count)
        for o in inserted {
            guard let id = rowFor(o) else {
                programmerError("PersistenceKit internal error: inserted object \(o.objectID) has no row to save to")
            }
            // Version 1, the version the store gives an insert: a store may then hand back
            // this very array as the committed rows (see `FileStore.commit`).
            t.inserts.append(StoreRow(id: id, version: 1, values: encode(o)))
        }
        // Every edited object is written and checked against its row's version, even one
        // whose values equal its snapshot again, as Core Data checks every edited object.
        // Skipped, a link's end edited against a stale copy, its edit undone by a later one,
        // would keep the store's newer row, which lists a link the other end's save removed:
        // one-sided in the file store. Written, it meets that row as a conflict, which the
        // merge policy settles or reports.
        var changed = ChangedProperties()
        if reportingChanges {
            changed.ids.reserveCapacity(updated.count)
            changed.masks.reserveCapacity(updated.count)
        }
        for o in updated {
            guard let id = o.rowID, let snapshot = o.snapshot else {
                // Listed all the same, so that the list matches the announced one by position.
                if reportingChanges { changed.append(o.objectID, mask: 0) }
                continue
            }
            let values = encode(o)
            if reportingChanges { changed.append(o.objectID, mask: ChangedProperties.mask(values, against: snapshot.values)) }
            t.updates.append(StoreRow(id: id, version: snapshot.version, values: values))
            writtenUpdates.append(o)
        }
        for o in deleted {
            guard let id = o.rowID else { continue }  // never saved: nothing to delete
            // The version read last; a fault without one asks the store (gone: nothing to do).
            guard let version = o.snapshot?.version ?? rowForFault(o)?.version else { continue }
            t.deletes.append((id: id, expectedVersion: version))
        }
        return (t, writtenUpdates.isEmpty ? inserted : inserted + writtenUpdates, reportingChanges ? changed : nil)
    }

    /// Applies the merge policy to conflicting objects, or throws the conflicts.
    private func resolve(_ conflicts: [StoreConflict], store: any PersistentStore, finalAttempt: Bool) throws {
        let model = coordinator.managedObjectModel
        var objects: [(StoreConflict, NSManagedObject)] = []
        var reported: [NSMergeConflict] = []
        for c in conflicts {
            guard let entity = model.entity(at: c.id.entity) else { continue }
            let id = NSManagedObjectID(entity: entity, row: c.id, store: store.identifier)
            reported.append(
                NSMergeConflict(objectID: id, oldVersionNumber: Int(c.expectedVersion), newVersionNumber: Int(c.current?.version ?? 0)))
            if let o = registeredByID[id] { objects.append((c, o)) }
        }
        let policy = mergePolicyStorage.mergeType
        let updatedButGone = conflicts.contains { $0.current == nil }
        if policy == .errorMergePolicyType || updatedButGone || finalAttempt {
            throw Self.mergeConflictError(reported)
        }
        // To-many relationships a by-property policy settled, whose other ends are made to
        // agree once every conflicting object is settled (see `reconcileToMany`): first those
        // the trumping side changed, so that where two settled ends disagree about a link,
        // that side's answer stands.
        var settledByWinner: [(NSManagedObject, Int, Slot)] = []
        var settledOtherwise: [(NSManagedObject, Int, Slot)] = []
        for (c, o) in objects {
            guard let current = c.current, let ancestor = o.snapshot else { continue }
            // A deletion stands whatever the policy (unless the store wins everything): the
            // targets the store links to the row let go of it, and nothing links back.
            if o.flags.contains(.deleted) && policy != .rollbackMergePolicyType {
                let theirs = o.decode(current)
                o.snapshot = StoreRow(id: ancestor.id, version: current.version, values: ancestor.values)
                for case let r as NSRelationshipDescription in o.entity.properties {
                    guard let inverse = r.inverseRelationship, let destination = r.destinationEntity else { continue }
                    let targets: [NSManagedObject] =
                        switch theirs[r.index] {
                        case let .toOne(t?): [t]
                        case let .unresolvedToOne(row?): [object(forRow: row, entity: destination)]
                        case let .toMany(set): Array(set)
                        case let .unresolvedToMany(rows): rows.map { object(forRow: $0, entity: destination) }
                        default: []
                        }
                    for t in targets where !t.flags.contains(.invalidated) && !isGoneFromStore(t) {
                        t.prepareForAccess("updating the inverse '\(inverse.name)'")
                        bringUpToDate(t)
                        t.unlink(o, at: inverse.index)
                    }
                }
                continue
            }
            switch policy {
            case .errorMergePolicyType:
                break
            case .overwriteMergePolicyType:
                // This context's attributes and to-one relationships win: the other ends the
                // store gave `o` let go. A to-many keeps the store's links plus this context's
                // own additions and removals: Core Data writes a to-many as changes to the
                // other ends' foreign keys (or join rows), never as the whole set. Writing this
                // context's whole set would take another context's new book off the shelf, and
                // move back a book it had moved elsewhere.
                let theirs = o.decode(current)
                for case let r as NSRelationshipDescription in o.entity.properties where r.isToMany {
                    let before = ancestor.value(at: r.index), after = current.value(at: r.index)
                    guard !before.isSame(as: after) else { continue }
                    o.slots[r.index] = .toMany(mergedToMany(o, at: r.index, ancestor: before, theirs: after, destination: r.destinationEntity))
                }
                o.snapshot = StoreRow(id: ancestor.id, version: current.version, values: ancestor.values)
                reconcileRelationships(of: o, losing: theirs, changedSince: ancestor, current)
            case .rollbackMergePolicyType:
                // The store's relationships win: the other ends this context gave `o` (or took
                // from it, by the nullify rule of a deletion now undone) follow — except where
                // another object's own unsaved change made or broke the link: that object is
                // not in conflict, and its change is saved, as Core Data saves a book's
                // foreign key whatever becomes of its shelf. (Rolled back with `o`, a book
                // inserted on the shelf would be saved without it, and a book taken off it put
                // back.) Only to-manys count, and only targets not in conflict themselves:
                // `o`'s own to-one is its own column, which the rollback restores. (Counting
                // them, a book moved to another shelf stays there, both shelves' inverse
                // changes taken for their own, and with both ends in conflict each keeps the
                // link for the other.)
                let held = linksHeldByOthers(o).filter { link in
                    (o.entity.properties[link.index] as? NSRelationshipDescription)?.isToMany == true
                        && !objects.contains { $0.1 === link.target }
                }
                let mine = o.slots
                o.install(current)
                o.flags.subtract([.updated, .deleted, .changeRecorded])
                updatedSet.remove(o)
                deletedSet.remove(o)
                for (i, target, linked) in held {
                    if linked { o.link(target, at: i) } else { o.unlink(target, at: i) }
                }
                reconcileRelationships(of: o, losing: mine, changedSince: nil, current)
            case .mergeByPropertyObjectTrumpMergePolicyType, .mergeByPropertyStoreTrumpMergePolicyType:
                let objectWins = policy == .mergeByPropertyObjectTrumpMergePolicyType
                let mine = Set(o.entity.properties.indices.filter { o.persistentValueDiffers(at: $0) })
                let theirs = o.decode(current)
                for (i, p) in o.entity.properties.enumerated() where !p.isTransient {
                    let before = ancestor.value(at: i)
                    let after = current.value(at: i)
                    let theyChanged = !before.isSame(as: after)
                    if let r = p as? NSRelationshipDescription, r.isToMany, mine.contains(i) || theyChanged {
                        let settled = (o, i, o.slots[i])
                        if objectWins ? mine.contains(i) : theyChanged {
                            settledByWinner.append(settled)
                        } else {
                            settledOtherwise.append(settled)
                        }
                    }
                    if let r = p as? NSRelationshipDescription, r.isToMany, mine.contains(i), theyChanged {
                        // Both sides changed the set: keep both sides' additions and removals
                        // (a to-many relationship is a set of links, not one value).
                        o.slots[i] = .toMany(mergedToMany(o, at: i, ancestor: before, theirs: after, destination: r.destinationEntity))
                    } else if objectWins ? !mine.contains(i) : theyChanged {
                        let previous = p is NSRelationshipDescription ? o.slots[i] : nil
                        o.slots[i] = theirs[i]
                        if let previous { reconcileToOne(of: o, at: i, losing: previous) }
                    } else if p is NSRelationshipDescription, theyChanged {
                        reconcileToOne(of: o, at: i, losing: theirs[i])  // this context's value stays
                    }
                }
                o.snapshot = current
            }
        }
        for (o, i, before) in settledByWinner + settledOtherwise { reconcileToMany(of: o, at: i, before: before) }
    }

    /// After the first round of `willSave()` hooks: objects the hooks inserted, changed
    /// (an updated object changing itself included) or deleted, and objects their delete
    /// rules deleted, get `willSave()` too, round after round until a round changes
    /// nothing, as in Core Data; with one round only, an object dirtied by another object's
    /// hook would be saved without its own hook. Processes pending changes.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` when the hooks still change objects after
    ///   100 rounds (each hook dirtying another, endlessly); nothing is saved.
    private func callWillSaveOnObjectsTheHooksChanged() throws {
        // `save()` processed pending changes just before the hooks, so what is unprocessed
        // now is theirs. The usual case, hooks that change nothing, costs little: empty
        // sets, and one comparison of counts.
        for round in 1... {
            let changed = unprocessed
            let changedInserts = insertions.unannounced
            let deletedBefore = deletedSet
            processPendingChanges()
            var next: [NSManagedObject] = []
            var seen = Set<ObjectIdentifier>()
            func add(_ o: NSManagedObject) { if seen.insert(ObjectIdentifier(o)).inserted { next.append(o) } }
            for o in changedInserts where o.flags.contains(.inserted) && o.isOwned(by: self) { add(o) }
            for o in changed.updated where o.flags.contains(.updated) { add(o) }
            if deletedSet.count != deletedBefore.count || !changed.deleted.isEmpty {
                for o in deletedSet where !deletedBefore.contains(o) { add(o) }
            }
            if next.isEmpty { return }
            guard round < 100 else {
                throw CoreDataError(
                    .coreData, "willSave() hooks in context '\(debugName)' still changed objects after 100 rounds (\(next.count) "
                        + "objects, among them \(next[0].objectID)). Rule: a willSave() that changes its object must "
                        + "stop changing it once its values are final. Nothing was saved.")
            }
            for o in next { o.willSave() }
        }
    }

    /// Three-way merge of a to-many relationship: this context's set, plus what the store
    /// added since `ancestor`, minus what the store removed.
    func mergedToMany(
        _ o: NSManagedObject, at i: Int, ancestor: StoreValue, theirs: StoreValue, destination: NSEntityDescription?
    ) -> Set<NSManagedObject> {
        func rows(_ v: StoreValue) -> Set<StoreRowID> {
            if case let .references(r) = v { return Set(r) }
            return []
        }
        let base = rows(ancestor), stored = rows(theirs)
        var result = o.resolvedToMany(at: i)
        guard let destination else { return result }
        for row in stored.subtracting(base) { result.insert(object(forRow: row, entity: destination)) }
        for row in base.subtracting(stored) { result.remove(object(forRow: row, entity: destination)) }
        return result
    }

    /// Updates object state after the store committed, then announces the save.
    /// `committed[i]` is the row the store wrote for `written[i]` (`sent` holds the rows as
    /// this context sent them); rows after those are rows the store wrote besides, to keep
    /// both ends of links in agreement (`LinkKeeper`).
    private func finishSave(
        inserted: [NSManagedObject], insertedVersion: Int, updated allUpdated: [NSManagedObject],
        deleted allDeleted: [NSManagedObject],
        written: [NSManagedObject], sent: StoreTransaction, committed: [StoreRow], clock: UInt64, store: any PersistentStore,
        changed: ChangedProperties?
    ) {
        // A merge policy may have dropped objects from the sets; the sets are the truth.
        let updated = allUpdated.filter { updatedSet.contains($0) }
        let deleted = allDeleted.filter { deletedSet.contains($0) }
        // A set announced while the list was the one `inserted` was taken from is its set.
        let insertedSet =
            announcedInsertions.flatMap { $0.version == insertedVersion ? $0.objects : nil } ?? Set(building: inserted)
        announcedInsertions = nil
        // Objects inserted after `inserted` was final (while conflicts were resolved; what the
        // validation hooks insert joins the save, see `includeChangesOfValidationHooks`) are
        // not in this save: they stay inserted, for the next one.
        // Emptying the list would drop them, leaving objects neither saved nor tracked that
        // still point at this context — dangling once it is freed.
        let leftovers = insertions.version == insertedVersion ? [] : insertions.objects.filter { !insertedSet.contains($0) }
        insertions.removeAll(resettingObjects: false)  // the pass below resets the saved ones
        for o in leftovers { insertions.append(o) }
        // Likewise objects changed or deleted after the lists were final, and faults found
        // inaccessible then: not in this save, they stay changed or deleted for the next one.
        // Emptying the sets would lose such changes (validation hooks' among them), and an
        // object still flagged updated would never enter the set again, so its later edits
        // would be lost too; inaccessible faults would stay `isDeleted` and never be
        // discarded. `updated` and `deleted` are subsets of the sets: equal counts, nothing
        // left, and no pass over a large save.
        if updatedSet.count == updated.count { updatedSet = [] } else { updatedSet.subtract(updated) }
        if !rebasedWhileChanged.isEmpty { rebasedWhileChanged = rebasedWhileChanged.filter { updatedSet.contains($0.value.object) } }
        if deletedSet.count == deleted.count { deletedSet = [] } else { deletedSet.subtract(deleted) }

        var changes = SavedChanges(rows: committed, clock: clock, changedProperties: changed)
        changes.inserted.reserveCapacity(inserted.count)
        func keepCommitted(_ row: StoreRow, in o: NSManagedObject, sent: StoreRow) {
            if o.entity.hasOnlyPersistentAttributes {
                // The row holds exactly the object's values: keep them once, in the snapshot
                // (a second array of slots per saved object was a fifth of its memory).
                o.install(row)
            } else {
                o.loadSlots()  // what `snapshot`'s setter does, inlined for the save of many objects
                o.forgetToManyEdits()
                o.storedSnapshot = row
                // The store keeps each link as its owning end has it: where this object's
                // other end said otherwise (two ends read at different times), the object
                // takes the stored links, or it would keep showing what the store denies.
                // Usually the store returns the values as sent, in the same array: `==` on
                // one buffer is a single comparison. Else compared slot by slot as sent.
                if sent.values != row.values {
                    for (i, kind) in o.entity.slotKinds.enumerated() where kind == .toOne || kind == .toMany {
                        if sent.value(at: i) != row.value(at: i) { o.slots[i] = o.decode(row)[i] }
                    }
                } else {
                    // The row holds the values as they are: the next save can start from it.
                    o.startTrackingToManyEdits()
                }
            }
        }
        // `written` starts with `inserted` (see makeTransaction): one pass over the inserted
        // objects does all their bookkeeping (each pass over 100,000 objects is cache misses
        // on every one of them).
        assert(written.count >= inserted.count && zip(written, inserted).allSatisfy { $0 === $1 })
        let number = storeNumber(for: store.identifier)
        // The objects that got their permanent keys now, registered under them together
        // after this pass (see `ObjectRegistry.insert(contentsOf:)`): usually every inserted
        // object, and then `inserted` itself. (A list of its own retained every object while
        // it was at hand and released each when the save ended, out of cache by then:
        // measured −3% of inserting and saving 100,000 objects.)
        var keyed: [NSManagedObject] = []
        var everyInsertKeyed = true
        for (i, o) in inserted.enumerated() {
            if let row = o.pendingRow {
                givePermanentKey(row, storeNumber: number, to: o)
                if !everyInsertKeyed { keyed.append(o) }
            } else if everyInsertKeyed {
                everyInsertKeyed = false
                keyed = Array(inserted[..<i])
            }
            o.pendingRow = nil
            o.insertionIndex = -1
            o.flags = []
            changes.inserted.append(o.objectID)
            keepCommitted(committed[i], in: o, sent: sent.inserts[i])
        }
        for i in inserted.count..<written.count {
            keepCommitted(committed[i], in: written[i], sent: sent.updates[i - inserted.count])
        }
        registerPermanentKeys(of: everyInsertKeyed ? inserted : keyed)
        // Rows the store wrote besides (the other ends of links): objects holding them here
        // move onto them, and the save announces them as updated (as faults when they were
        // not registered here), so that contexts merging the notification's objects or IDs
        // take them too, and they get `didSave()` like every object the save announces.
        // Unregistered ones must be in the objects too, not the IDs notification only, or a
        // context merging the objects keeps a stale copy and its next save conflicts.
        var alsoUpdated: [NSManagedObject] = []
        let model = coordinator.managedObjectModel
        for row in committed.dropFirst(written.count) {
            guard let entity = model.entity(at: row.id.entity) else { continue }
            let id = NSManagedObjectID(entity: entity, row: row.id, store: store.identifier)
            changes.updated.append(id)
            guard let o = registeredByID[id] else {
                alsoUpdated.append(object(with: id))
                continue
            }
            if o.flags.contains(.invalidated) { continue }
            if o.flags.contains(.fault) {
                o.dropRow()
            } else if let snapshot = o.snapshot, snapshot.version < row.version, !o.flags.contains(.deleted) {
                rebase(o, onto: row)
            }
            alsoUpdated.append(o)
        }
        changes.changedPropertiesStart = changes.updated.count
        for o in updated {
            o.flags.subtract([.updated, .changeRecorded])
            changes.updated.append(o.objectID)
        }
        for o in deleted { changes.deleted.append(o.objectID) }
        // Cleared before the didSave() hooks, so that what they change is announced and saved
        // later like any other change; cleared after them, the hooks' changes would never be
        // announced.
        // The left-over changes are still to be announced by objects-did-change.
        let unsavedUpdates = updatedSet.isEmpty ? [] : unprocessed.updated.intersection(updatedSet)
        let unsavedDeletes = deletedSet.isEmpty ? [] : unprocessed.deleted.intersection(deletedSet)
        clearUnprocessed()
        insertions.markUnannounced()  // the list holds the leftovers only
        for o in unsavedUpdates { o.flags.insert(.changeRecorded) }
        unprocessed.updated = unsavedUpdates
        unprocessed.deleted = unsavedDeletes
        if hasUnprocessedChanges { noteChangesPending() }
        for o in inserted { o.didSave() }
        for o in updated { o.didSave() }
        for o in alsoUpdated { o.didSave() }
        for o in deleted { o.didSave() }
        // Deleted objects stay registered through `didSave()` (it may read their context),
        // then leave the registry and their context together.
        for o in deleted {
            registeredByID.remove(o)
            o.invalidate()
        }
        if !deleted.isEmpty { noteDeparture() }

        var info: [AnyHashable: Any] = [:]
        if !inserted.isEmpty { info[NSInsertedObjectsKey] = insertedSet }
        if !updated.isEmpty || !alsoUpdated.isEmpty { info[NSUpdatedObjectsKey] = Set(building: updated + alsoUpdated) }
        if !deleted.isEmpty { info[NSDeletedObjectsKey] = Set(building: deleted) }
        if changed != nil { info[Self.savedChangesKey] = SavedChangesBox(changes, coordinator: coordinator) }
        post(.NSManagedObjectContextDidSave, userInfo: info)
        let ids = ObjectIDChanges(
            inserted: Set(building: changes.inserted), updated: Set(building: changes.updated), deleted: Set(building: changes.deleted))
        postObjectIDs(NSManagedObjectContext.didSaveObjectIDsNotification, ids)
        // A merge policy may have resolved every change away: the stream yields only writes.
        if !(ids.inserted.isEmpty && ids.updated.isEmpty && ids.deleted.isEmpty) { publishDidSave(ids) }
        coordinator.broadcast(changes, from: self)
        forwardToMergingChildren(changes, except: nil)
        instrumentingRouter?.routeOwnSave(updated: updated, changed: changed, inserted: inserted, linkedEnds: alsoUpdated)
    }
}
