import Foundation

// Inverse upkeep. Every relationship has an inverse (the model checks it), and every change
// made through a public setter is mirrored on the other side, for one-to-one, one-to-many
// and many-to-many. The `primitive…` functions change one side only and mark the object
// changed; `link`/`unlink` keep the other side's *previous* partner consistent too (moving
// a book to a new shelf removes it from the old shelf's set).
extension NSManagedObject {
    func relationship(at i: Int) -> NSRelationshipDescription {
        // The slot layout follows `entity.properties`; callers pass relationship indexes only.
        guard let r = entity.properties[i] as? NSRelationshipDescription else {
            programmerError("PersistenceKit: '\(entity.name).\(entity.properties[i].name)' is not a relationship.")
        }
        return r
    }

    /// The to-one target at slot `i`, turning a stored row ID into an object on first read.
    func resolvedToOne(at i: Int) -> NSManagedObject? {
        switch slots[i] {
        case let .toOne(o): return o
        case let .unresolvedToOne(row):
            let target = row.flatMap { resolve($0, relationship: relationship(at: i)) }
            storedSlots[i] = .toOne(target)  // the same link as an object: to-many edits stay tracked
            return target
        default:
            programmerError("PersistenceKit: '\(entity.name).\(entity.properties[i].name)' is not a to-one relationship.")
        }
    }

    /// On a probe object (see `NSEntityDescription.attributeIndex(forKeyPath:)`): a blank,
    /// detached object of to-one slot `i`'s destination, so that a computed property that
    /// unwraps the relationship (`parent!.name`) reads a default value instead of trapping
    /// while the probe tells it from an attribute. `nil` on other objects.
    func blankTargetIfProbe(at i: Int) -> NSManagedObject? {
        guard flags.contains(.probe), let destination = relationship(at: i).destinationEntity else { return nil }
        return destination.managedObjectClass.init(entity: destination, insertInto: nil)
    }

    /// The to-many targets at slot `i`, turning stored row IDs into objects on first read.
    func resolvedToMany(at i: Int) -> Set<NSManagedObject> {
        switch slots[i] {
        case let .toMany(s): return s
        case let .unresolvedToMany(rows):
            let r = relationship(at: i)
            let set: Set<NSManagedObject>
            if let context = managedObjectContext, let destination = r.destinationEntity {
                let objects = context.objects(forRows: rows, entity: destination)
                // An ordered relationship's rows are stored in its order.
                if r.isOrdered { setToManyOrder(objects.map(ObjectIdentifier.init), at: i) }
                set = Set(objects)
            } else {
                set = []
            }
            // The same targets as objects: the tracked to-many edits still describe them,
            // unless a row did not resolve.
            storedSlots[i] = .toMany(set)
            if set.count != rows.count { forgetToManyEdits() }
            return set
        default:
            programmerError("PersistenceKit: '\(entity.name).\(entity.properties[i].name)' is not a to-many relationship.")
        }
    }

    private func resolve(_ row: StoreRowID, relationship r: NSRelationshipDescription) -> NSManagedObject? {
        // A fetch's stand-in reaches the fetching context here (see `managedObjectContext`).
        guard let context = managedObjectContext, let destination = r.destinationEntity else { return nil }
        return context.object(forRow: row, entity: destination)
    }

    /// The number of targets at to-many slot `i`, without materializing unresolved targets.
    func toManyCount(at i: Int) -> Int {
        switch slots[i] {
        case let .toMany(s): s.count
        case let .unresolvedToMany(rows): rows.count
        default: 0
        }
    }

    // MARK: One side only

    // These write `storedSlots` (loaded by `resolved…`/`loadSlots`), not `slots`, whose
    // writes end the tracking of to-many edits: a to-one changes no to-many, and the
    // to-many changes are recorded (NSManagedObject+ToManyEdits.swift).

    func primitiveSetToOne(_ target: NSManagedObject?, at i: Int) {
        loadSlots()
        if recordsUndo { recordToOneForUndo(at: i, replacingWith: target) }
        storedSlots[i] = .toOne(target)
        markChanged()
    }

    func primitiveInsert(_ target: NSManagedObject, toManyAt i: Int) {
        var set = resolvedToMany(at: i)
        storedSlots[i] = .toMany([])  // drop the slot's reference so the insert does not copy the set
        let isNew = set.insert(target).inserted
        storedSlots[i] = .toMany(set)
        if isNew && relationship(at: i).isOrdered {
            // In place, through the side storage: a copy of the order per insert would be quadratic.
            extras?.toManyOrders?[i]?.append(ObjectIdentifier(target))
        }
        if isNew { recordToManyEdit(target, at: i, added: true) }
        if isNew && recordsUndo { recordToManyForUndo(target, at: i, added: true) }
        markChanged()
    }

    func primitiveRemove(_ target: NSManagedObject, toManyAt i: Int) {
        var set = resolvedToMany(at: i)
        storedSlots[i] = .toMany([])
        let wasThere = set.remove(target) != nil
        storedSlots[i] = .toMany(set)
        if wasThere { recordToManyEdit(target, at: i, added: false) }
        if wasThere && recordsUndo { recordToManyForUndo(target, at: i, added: false) }
        markChanged()
    }

    /// Tells the context that this object changed.
    @inline(__always)
    func markChanged() {
        // Inserted and deleted objects are never "updated"; an object already recorded as
        // changed needs no second note before the next processPendingChanges().
        if !flags.isDisjoint(with: [.inserted, .deleted, .changeRecorded]) { return }
        managedObjectContext?.objectDidChange(self)
    }

    // MARK: Both sides

    /// Sets to-one slot `i` to `target` and keeps the inverse of the old and new targets.
    func setToOne(_ target: NSManagedObject?, at i: Int) {
        prepareForAccess("setting '\(entity.properties[i].name)'")
        let r = relationship(at: i)
        checkTarget(target, of: r)
        let old = resolvedToOne(at: i)
        if old === target { return }
        let inverse = inverseIndex(of: r)
        let oldAgreed = old?.unlink(self, at: inverse) ?? true
        let targetAgreed = target?.link(self, at: inverse) ?? true
        primitiveSetToOne(target, at: i)
        if !oldAgreed || !targetAgreed { catchUpAfterDisagreement() }
    }

    /// Adds `targets` to to-many slot `i`, keeping inverses.
    func addToMany(_ targets: some Sequence<NSManagedObject>, at i: Int) {
        prepareForAccess("adding to '\(entity.properties[i].name)'")
        let r = relationship(at: i)
        let inverse = inverseIndex(of: r)
        var agreed = true
        // Membership is looked up in the slot each time, not in a copy of the set kept
        // across the loop: a second reference made every insert below copy the whole set
        // (adding 20,000 books to a shelf one by one took ~100 µs each at the end).
        for t in targets where !holds(t, at: i) {
            checkTarget(t, of: r)
            if !t.link(self, at: inverse) { agreed = false }
            primitiveInsert(t, toManyAt: i)
        }
        if !agreed { catchUpAfterDisagreement() }
    }

    /// Removes `targets` from to-many slot `i`, keeping inverses.
    func removeFromToMany(_ targets: some Sequence<NSManagedObject>, at i: Int) {
        prepareForAccess("removing from '\(entity.properties[i].name)'")
        let r = relationship(at: i)
        let inverse = inverseIndex(of: r)
        var agreed = true
        for t in targets where holds(t, at: i) {  // in the slot, as in `addToMany`
            if !t.unlink(self, at: inverse) { agreed = false }
            primitiveRemove(t, toManyAt: i)
        }
        if !agreed { catchUpAfterDisagreement() }
    }

    /// Called after a change of this object's relationship found the other end already as
    /// the change leaves it (`link` found the link there, `unlink` found it gone, each after
    /// bringing that end up to date), though this object's value said otherwise: the two
    /// ends were read at different versions of their rows, and this one is the stale one.
    /// Moving it onto its newest row (keeping the change, and settling the other ends of its
    /// stored value) makes the save write both ends alike.
    /// Without it (the randomized conflict test shows it with seeds 177, 181, 239): a book
    /// read before another coordinator gave it an author gets that author here, but only the
    /// book records the change (the fresher author already lists it). Taken out again, the
    /// book equals its stale snapshot and is not saved while the author is, so the store
    /// keeps the link on the book's side only; kept, the book's addition, measured against
    /// the stale snapshot, survives merges of a later removal. A book moved off a shelf that
    /// no longer lists it keeps its stale snapshot likewise, and when another context puts
    /// it back on that shelf, the conflict resolution sees "unchanged in the store" and
    /// leaves the shelf listing it.
    private func catchUpAfterDisagreement() {
        managedObjectContext?.bringUpToDate(self)
    }

    /// Replaces the whole to-many set at slot `i`.
    func replaceToMany(with targets: Set<NSManagedObject>, at i: Int) {
        prepareForAccess("setting '\(entity.properties[i].name)'")
        let current = resolvedToMany(at: i)
        removeFromToMany(current.subtracting(targets), at: i)
        addToMany(targets.subtracting(current), at: i)
    }

    /// Makes `source` a target of this object's relationship `j` (the inverse of the
    /// source's relationship); a to-one `j` first lets go of its previous target.
    ///
    /// - Returns: `false` when this end already held the link (checked against its newest
    ///   row): the source's own value, which lacked it, is then the stale one.
    @discardableResult
    func link(_ source: NSManagedObject, at j: Int) -> Bool {
        prepareForAccess("updating the inverse '\(entity.properties[j].name)'")
        let rj = relationship(at: j)
        // A target loaded before another coordinator unlinked it from `source` still lists
        // `source`, though its row no longer does. Taken for "nothing to do", the link is
        // saved on the source's side only (the randomized conflict test, seed 211): bring
        // this end up to date first (as `unlink` does); only a link its newest row holds is
        // already made.
        if holds(source, at: j) {
            managedObjectContext?.bringUpToDate(self)
            if holds(source, at: j) { return false }
        }
        if rj.isToMany {
            primitiveInsert(source, toManyAt: j)
            return true
        }
        var agreed = true
        if let previous = resolvedToOne(at: j) {
            // `previous` pointed at self through the source's relationship; that link moves.
            agreed = previous.unlink(self, at: inverseIndex(of: rj))
        }
        primitiveSetToOne(source, at: j)
        if !agreed { catchUpAfterDisagreement() }
        return true
    }

    /// Removes `source` from this object's relationship `j`.
    ///
    /// - Returns: `false` when this end did not hold the link (checked against its newest
    ///   row): the source's own value, which listed it, is then the stale one.
    @discardableResult
    func unlink(_ source: NSManagedObject, at j: Int) -> Bool {
        prepareForAccess("updating the inverse '\(entity.properties[j].name)'")
        // A target loaded before another context linked `source` to it does not list
        // `source`, though its row does: bring it up to date first, or the removal is lost
        // and the store keeps a link that the other end denies.
        if !holds(source, at: j) {
            managedObjectContext?.bringUpToDate(self)
            guard holds(source, at: j) else { return false }
        }
        if relationship(at: j).isToMany { primitiveRemove(source, toManyAt: j) } else { primitiveSetToOne(nil, at: j) }
        return true
    }

    /// Whether this object's relationship `j` lists `source` (in memory).
    private func holds(_ source: NSManagedObject, at j: Int) -> Bool {
        relationship(at: j).isToMany ? resolvedToMany(at: j).contains(source) : resolvedToOne(at: j) === source
    }

    private func inverseIndex(of r: NSRelationshipDescription) -> Int {
        guard let inverse = r.inverseRelationship, inverse.index >= 0 else {
            programmerError(
                "PersistenceKit: relationship '\(entity.name).\(r.name)' has no inverse; validate the model "
                    + "(NSManagedObjectModel.validate()) before using it.")
        }
        return inverse.index
    }

    private func checkTarget(_ target: NSManagedObject?, of r: NSRelationshipDescription) {
        guard let target else { return }
        guard r.accepts(target.entity) else {
            programmerError(
                "PersistenceKit: cannot set '\(entity.name).\(r.name)' to \(target.objectID): the relationship's "
                    + "destination is '\(r.destinationEntity?.name ?? "?")', not '\(target.entity.name)'.")
        }
        guard target.managedObjectContext === managedObjectContext else {
            programmerError(
                "PersistenceKit: illegal attempt to relate \(objectID) and \(target.objectID) through '\(r.name)': "
                    + "the objects are in different contexts. Rule: related objects must live in the same context; "
                    + "bring the other object over with context.object(with: id).")
        }
    }
}
