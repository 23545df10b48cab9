import Foundation

// Ordered to-many relationships (`NSRelationshipDescription.isOrdered`): the slot's set holds
// the targets, as for any to-many, so membership, inverses, merging and change tracking work
// as they do for sets; `toManyOrders` keeps their order. The order is a list of identities
// that may lag behind the set: a target added where the order was not told (a merge, an
// inverse set from the other side before the order was read) goes last, and one no longer in
// the set is skipped, each time the order is read (`orderedToMany(at:)`). Rows store the
// targets in order, and a row read back gives the order again.

extension NSPropertyDescription {
    /// Whether this is an ordered to-many relationship.
    var isOrderedToMany: Bool {
        guard let r = self as? NSRelationshipDescription else { return false }
        return r.isOrdered && r.isToMany
    }
}

extension NSManagedObject {
    /// Records the order of ordered to-many slot `i`.
    func setToManyOrder(_ order: [ObjectIdentifier], at i: Int) {
        let extras = self.extras ?? ObjectExtras()
        self.extras = extras
        if extras.toManyOrders == nil { extras.toManyOrders = [:] }
        extras.toManyOrders?[i] = order
    }

    /// The targets of ordered to-many slot `i`, first to last: the recorded order, without
    /// targets that left the set, then targets the order does not list yet (by row, then as
    /// the set gives them). Records the result as the order.
    func orderedToMany(at i: Int) -> [NSManagedObject] {
        let set = resolvedToMany(at: i)
        var byID: [ObjectIdentifier: NSManagedObject] = [:]
        byID.reserveCapacity(set.count)
        for o in set { byID[ObjectIdentifier(o)] = o }
        var result: [NSManagedObject] = []
        result.reserveCapacity(set.count)
        for id in toManyOrders?[i] ?? [] {
            if let o = byID.removeValue(forKey: id) { result.append(o) }
        }
        if !byID.isEmpty {
            let rest = byID.values.sorted { a, b in
                switch (a.rowID, b.rowID) {
                case let (x?, y?): return x < y
                case (_?, nil): return true
                case (nil, _?): return false
                case (nil, nil): return a.insertionIndex < b.insertionIndex
                }
            }
            result += rest
        }
        setToManyOrder(result.map(ObjectIdentifier.init), at: i)
        return result
    }

    /// Makes `targets`, in this order, the targets of ordered to-many slot `i`: those not
    /// there are added and those left out removed (inverses kept), and the order is recorded
    /// as a change of this object. A target listed twice counts once, at its first place.
    func replaceOrderedToMany(with targets: [NSManagedObject], at i: Int) {
        prepareForAccess("setting '\(entity.properties[i].name)'")
        var seen = Set<ObjectIdentifier>()
        let unique = targets.filter { seen.insert(ObjectIdentifier($0)).inserted }
        let before = orderedToMany(at: i)
        replaceToMany(with: Set(unique), at: i)
        setToManyOrder(unique.map(ObjectIdentifier.init), at: i)
        if before.map(ObjectIdentifier.init) != unique.map(ObjectIdentifier.init) { markChanged() }
    }

    /// Traps unless slot `i` is an ordered to-many relationship.
    func requireOrdered(_ i: Int, _ operation: String) {
        guard entity.properties[i].isOrderedToMany else {
            programmerError(
                "PersistenceKit: \(operation) — '\(entity.name).\(entity.properties[i].name)' is not an ordered to-many "
                    + "relationship. Rule: positions exist only in relationships declared as an array (isOrdered).")
        }
    }
}

extension Array: RelationshipValue where Element: NSManagedObject {
    /// See ``RelationshipValue``.
    public typealias Destination = Element
    /// See ``RelationshipValue``: an array declares an ordered to-many relationship.
    public static var isToMany: Bool { true }
    /// See ``RelationshipValue``.
    public static var isOrdered: Bool { true }
    /// See ``RelationshipValue``.
    public static func read(from object: NSManagedObject, slot: Int) -> Self {
        object.prepareForAccess("reading '\(object.entity.properties[slot].name)'")
        object.noteRead(slot: slot)
        if object.flags.contains(.probe) { object.probedSlot = slot }
        _ = object.resolvedToManyLoadingTargets(at: slot)
        return object.orderedToMany(at: slot).map { downcast($0, to: Element.self, in: object, slot: slot) }
    }
    /// See ``RelationshipValue``.
    public func write(to object: NSManagedObject, slot: Int) {
        object.replaceOrderedToMany(with: self, at: slot)
    }
}

extension RelationshipSet {
    /// The objects of an ordered relationship, first to last. Traps for an unordered one.
    public var orderedObjects: [Element] {
        owner.requireOrdered(index, "orderedObjects")
        owner.prepareForAccess("reading '\(owner.entity.properties[index].name)'")
        owner.noteRead(slot: index)
        _ = owner.resolvedToManyLoadingTargets(at: index)
        return owner.orderedToMany(at: index).map { downcast($0, to: Element.self, in: owner, slot: index) }
    }

    /// The object at `position` of an ordered relationship (as `NSOrderedSet.object(at:)`).
    /// Traps for an unordered relationship or a position out of range.
    public subscript(position: Int) -> Element { orderedObjects[position] }

    /// The position of `object` in an ordered relationship, or `nil` (as
    /// `NSOrderedSet.index(of:)`, with `nil` for `NSNotFound`).
    public func firstIndex(of object: Element) -> Int? {
        orderedObjects.firstIndex { $0 === object }
    }

    /// Puts `object` at `position` of an ordered relationship (`NSMutableOrderedSet`'s
    /// `insert(_:at:)`): added with its inverse when it was not there, moved when it was.
    /// Traps for an unordered relationship or a position past the end.
    public func insert(_ object: Element, at position: Int) {
        var list: [NSManagedObject] = orderedObjects
        list.removeAll { $0 === object }
        guard position >= 0 && position <= list.count else {
            programmerError("PersistenceKit: insert(_:at: \(position)) — position out of range 0...\(list.count).")
        }
        list.insert(object, at: position)
        owner.replaceOrderedToMany(with: list, at: index)
    }

    /// Moves the objects at `offsets` of an ordered relationship so that they stand before
    /// the object at `destination` (as `MutableCollection.move(fromOffsets:toOffset:)`, and
    /// `NSMutableOrderedSet.moveObjects(at:to:)`). Membership does not change.
    public func move(fromOffsets offsets: IndexSet, toOffset destination: Int) {
        let list: [NSManagedObject] = orderedObjects
        guard offsets.allSatisfy({ $0 >= 0 && $0 < list.count }), destination >= 0, destination <= list.count else {
            programmerError(
                "PersistenceKit: move(fromOffsets:toOffset: \(destination)) — offsets out of range 0..<\(list.count).")
        }
        let moving = offsets.map { list[$0] }
        var rest: [NSManagedObject] = []
        for (i, o) in list.enumerated() where !offsets.contains(i) { rest.append(o) }
        let insertAt = destination - offsets.count(in: 0..<destination)
        rest.insert(contentsOf: moving, at: insertAt)
        owner.replaceOrderedToMany(with: rest, at: index)
    }

    /// Removes the object at `position` of an ordered relationship (and clears its inverse).
    public func remove(at position: Int) {
        let list: [NSManagedObject] = orderedObjects
        guard position >= 0 && position < list.count else {
            programmerError("PersistenceKit: remove(at: \(position)) — position out of range 0..<\(list.count).")
        }
        owner.removeFromToMany(CollectionOfOne(list[position]), at: index)
    }
}
