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
            preconditionFailure("PersistenceKit: '\(entity.name).\(entity.properties[i].name)' is not a relationship.")
        }
        return r
    }

    /// The to-one target at slot `i`, turning a stored row ID into an object on first read.
    func resolvedToOne(at i: Int) -> NSManagedObject? {
        switch slots[i] {
        case let .toOne(o): return o
        case let .unresolvedToOne(row):
            let target = row.flatMap { resolve($0, relationship: relationship(at: i)) }
            slots[i] = .toOne(target)
            return target
        default:
            preconditionFailure("PersistenceKit: '\(entity.name).\(entity.properties[i].name)' is not a to-one relationship.")
        }
    }

    /// On a probe object (see `NSEntityDescription.attributeIndex(forKeyPath:)`): a blank,
    /// detached object of to-one slot `i`'s destination, so that a computed property that
    /// unwraps the relationship (`parent!.name`) reads a default value instead of trapping
    /// while the probe tells it from an attribute (found in review). `nil` on other objects.
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
            let set = Set(rows.compactMap { resolve($0, relationship: r) })
            slots[i] = .toMany(set)
            return set
        default:
            preconditionFailure("PersistenceKit: '\(entity.name).\(entity.properties[i].name)' is not a to-many relationship.")
        }
    }

    private func resolve(_ row: StoreRowID, relationship r: NSRelationshipDescription) -> NSManagedObject? {
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

    func primitiveSetToOne(_ target: NSManagedObject?, at i: Int) {
        slots[i] = .toOne(target)
        markChanged()
    }

    func primitiveInsert(_ target: NSManagedObject, toManyAt i: Int) {
        var set = resolvedToMany(at: i)
        slots[i] = .toMany([])  // drop the slot's reference so the insert does not copy the set
        set.insert(target)
        slots[i] = .toMany(set)
        markChanged()
    }

    func primitiveRemove(_ target: NSManagedObject, toManyAt i: Int) {
        var set = resolvedToMany(at: i)
        slots[i] = .toMany([])
        set.remove(target)
        slots[i] = .toMany(set)
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
        old?.unlink(self, at: inverse)
        target?.link(self, at: inverse)
        primitiveSetToOne(target, at: i)
    }

    /// Adds `targets` to to-many slot `i`, keeping inverses.
    func addToMany(_ targets: some Sequence<NSManagedObject>, at i: Int) {
        prepareForAccess("adding to '\(entity.properties[i].name)'")
        let r = relationship(at: i)
        let inverse = inverseIndex(of: r)
        var current = resolvedToMany(at: i)
        for t in targets where !current.contains(t) {
            checkTarget(t, of: r)
            t.link(self, at: inverse)
            current.insert(t)
            primitiveInsert(t, toManyAt: i)
        }
    }

    /// Removes `targets` from to-many slot `i`, keeping inverses.
    func removeFromToMany(_ targets: some Sequence<NSManagedObject>, at i: Int) {
        prepareForAccess("removing from '\(entity.properties[i].name)'")
        let r = relationship(at: i)
        let inverse = inverseIndex(of: r)
        var current = resolvedToMany(at: i)
        for t in targets where current.contains(t) {
            t.unlink(self, at: inverse)
            current.remove(t)
            primitiveRemove(t, toManyAt: i)
        }
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
    func link(_ source: NSManagedObject, at j: Int) {
        prepareForAccess("updating the inverse '\(entity.properties[j].name)'")
        let rj = relationship(at: j)
        if rj.isToMany {
            primitiveInsert(source, toManyAt: j)
            return
        }
        let previous = resolvedToOne(at: j)
        if previous === source { return }
        if let previous {
            // `previous` pointed at self through the source's relationship; that link moves.
            previous.unlink(self, at: inverseIndex(of: rj))
        }
        primitiveSetToOne(source, at: j)
    }

    /// Removes `source` from this object's relationship `j`.
    func unlink(_ source: NSManagedObject, at j: Int) {
        prepareForAccess("updating the inverse '\(entity.properties[j].name)'")
        // A target loaded before another context linked `source` to it does not list
        // `source`, though its row does: bring it up to date first, or the removal is lost
        // and the store keeps a link that the other end denies.
        let isToMany = relationship(at: j).isToMany
        func lists() -> Bool { isToMany ? resolvedToMany(at: j).contains(source) : resolvedToOne(at: j) === source }
        if !lists() {
            managedObjectContext?.bringUpToDate(self)
            guard lists() else { return }
        }
        if isToMany { primitiveRemove(source, toManyAt: j) } else { primitiveSetToOne(nil, at: j) }
    }

    private func inverseIndex(of r: NSRelationshipDescription) -> Int {
        guard let inverse = r.inverseRelationship, inverse.index >= 0 else {
            preconditionFailure(
                "PersistenceKit: relationship '\(entity.name).\(r.name)' has no inverse; validate the model "
                    + "(NSManagedObjectModel.validate()) before using it.")
        }
        return inverse.index
    }

    private func checkTarget(_ target: NSManagedObject?, of r: NSRelationshipDescription) {
        guard let target else { return }
        guard target.entity === r.destinationEntity else {
            preconditionFailure(
                "PersistenceKit: cannot set '\(entity.name).\(r.name)' to \(target.objectID): the relationship's "
                    + "destination is '\(r.destinationEntity?.name ?? "?")', not '\(target.entity.name)'.")
        }
        guard target.managedObjectContext === managedObjectContext else {
            preconditionFailure(
                "PersistenceKit: illegal attempt to relate \(objectID) and \(target.objectID) through '\(r.name)': "
                    + "the objects are in different contexts. Rule: related objects must live in the same context; "
                    + "bring the other object over with context.object(with: id).")
        }
    }
}
