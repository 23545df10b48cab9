import Foundation

// String-keyed access. Linux has no key-value coding, so these are implemented directly on
// the entity description: every object answers them, subclass or not.
extension NSManagedObject {
    /// The storage index of `key`, or a trap naming the entity and key (Core Data raises
    /// "this class is not key value coding-compliant" for unknown keys).
    func index(forKey key: String, _ operation: String) -> Int {
        guard let i = entity.propertyIndex(named: key) else {
            programmerError(
                "PersistenceKit: \(operation) — entity '\(entity.name)' has no property '\(key)' (object \(objectID)). "
                    + "Known keys: \(entity.properties.map(\.name).joined(separator: ", ")).")
        }
        return i
    }

    /// The value of the property `key`: the attribute's Swift value (`Int16`, `Int32`,
    /// `Int64`, `Double`, `Float`, `Bool`, `String`, `Date`, `Data`, `UUID`, `URL`,
    /// `Decimal`; a composite's `[String: Any]` by element name) or `nil`; a to-one relationship's object or `nil`; a to-many
    /// relationship's `Set<NSManagedObject>`.
    ///
    /// Traps when the entity has no property named `key`.
    public func value(forKey key: String) -> Any? {
        let i = index(forKey: key, "value(forKey: \"\(key)\")")
        prepareForAccess("value(forKey: \"\(key)\")")
        return anyValue(at: i)
    }

    func anyValue(at i: Int) -> Any? {
        let p = entity.properties[i]
        if let a = p as? NSAttributeDescription {
            return a.anyValue(from: currentAttributeValue(at: i))
        }
        if let r = p as? NSRelationshipDescription, r.isToMany {
            // An ordered relationship reads as Core Data's: an NSOrderedSet.
            return r.isOrdered ? NSOrderedSet(array: orderedToMany(at: i)) : resolvedToMany(at: i)
        }
        return resolvedToOne(at: i)
    }

    /// Sets the property `key`, with change tracking and inverse upkeep.
    ///
    /// Attributes take any Swift value that converts to their type: integers must fit
    /// exactly (an `Int` for an Integer 16 attribute, if it fits); floating-point values
    /// are rounded to a Double or Float attribute's precision. To-one relationships take an
    /// object of the destination entity or `nil`; to-many relationships take a `Set` or
    /// `Array` of them.
    ///
    /// Traps when `key` is unknown or the value has the wrong type — the message names the
    /// entity, key and expected type (Core Data raises an exception). Use
    /// ``validateValue(_:forKey:)`` first to get a thrown error instead.
    public func setValue(_ value: Any?, forKey key: String) {
        let i = index(forKey: key, "setValue(_:forKey: \"\(key)\")")
        prepareForAccess("setValue(_:forKey: \"\(key)\")")
        let p = entity.properties[i]
        if let a = p as? NSAttributeDescription {
            setAttribute(convert(value, for: a), at: i)
        } else if let r = p as? NSRelationshipDescription, r.isToMany {
            if r.isOrdered, let ordered = objectList(value) {
                replaceOrderedToMany(with: ordered, at: i)
            } else {
                replaceToMany(with: objectSet(value, for: r), at: i)
            }
        } else if let r = p as? NSRelationshipDescription {
            setToOne(object(value, for: r), at: i)
        }
    }

    /// The value at `keyPath`: one property key, or keys joined by dots that lead through
    /// to-one relationships (`"shelf.name"`), read as ``value(forKey:)`` reads the last.
    /// `nil` when a relationship on the way is `nil`, as key-value coding answers.
    ///
    /// Traps when a key is unknown, or when a key before the last is not a to-one
    /// relationship: key paths through to-many relationships and collection operators
    /// (`@count`, `@sum`, …) are not supported.
    public func value(forKeyPath keyPath: String) -> Any? {
        guard let (object, key) = lastStep(of: keyPath, "value(forKeyPath:)") else { return nil }
        return object.value(forKey: key)
    }

    /// Sets the value at `keyPath` (see ``value(forKeyPath:)``) as ``setValue(_:forKey:)``
    /// sets the last key on the object the path leads to. Does nothing when a relationship
    /// on the way is `nil`, as key-value coding does.
    ///
    /// Traps as ``value(forKeyPath:)`` and ``setValue(_:forKey:)`` do.
    public func setValue(_ value: Any?, forKeyPath keyPath: String) {
        guard let (object, key) = lastStep(of: keyPath, "setValue(_:forKeyPath:)") else { return }
        object.setValue(value, forKey: key)
    }

    /// The object `keyPath`'s keys before the last lead to, and the last key; `nil` when a
    /// relationship on the way is `nil`.
    private func lastStep(of keyPath: String, _ operation: String) -> (NSManagedObject, String)? {
        let keys = keyPath.split(separator: ".", omittingEmptySubsequences: false)
        var object: NSManagedObject = self
        for key in keys.dropLast() {
            guard let next = object.relatedObject(on: String(key), of: keyPath, operation) else { return nil }
            object = next
        }
        return (object, String(keys[keys.count - 1]))
    }

    /// The object that the to-one relationship `key` (a step of `keyPath`) leads to.
    private func relatedObject(on key: String, of keyPath: String, _ operation: String) -> NSManagedObject? {
        let i = index(forKey: key, "\(operation) \"\(keyPath)\"")
        guard let r = entity.properties[i] as? NSRelationshipDescription, !r.isToMany else {
            programmerError(
                "PersistenceKit: \(operation) \"\(keyPath)\" — '\(key)' of entity '\(entity.name)' is not a to-one "
                    + "relationship, and the path goes on past it (object \(objectID)). Rule: only to-one relationships may "
                    + "come before the last key; paths through to-many relationships and collection operators are not "
                    + "supported (no key-value coding on Linux).")
        }
        return value(forKey: key) as? NSManagedObject
    }

    /// Writes an attribute value (already of the right type) and marks the object changed.
    @usableFromInline
    func setAttribute(_ value: StoreValue, at i: Int) {
        prepareForAccess("setting '\(entity.properties[i].name)'")
        if recordsUndo { recordAttributeForUndo(at: i, replacingWith: value) }
        if valueStorage == .snapshot { moveValuesOutOfSnapshot() }
        if valueStorage == .defaults { takeDefaultValues() }
        if valueStorage == .values {
            // The first write to a new object: its values are still the entity's shared
            // defaults. Copied by the array's copy-on-write, each value went through the
            // runtime's generic copy (measured: 7% of inserting and saving 100,000 objects);
            // `ownCopy()` copies them as `StoreValue`s.
            if storedValues.sharesBuffer(with: entity.defaultValues) { storedValues = entity.defaultValues.ownCopy() }
            storedValues[i] = value
        } else {
            storedSlots[i] = .value(value)
        }
        markChanged()
    }

    /// The attribute value at slot `i` (after `prepareForAccess`).
    @usableFromInline
    func attributeValue(at i: Int) -> StoreValue {
        prepareForAccess("reading '\(entity.properties[i].name)'")
        if flags.contains(.probe) { probedSlot = i }
        noteRead(slot: i)
        return currentAttributeValue(at: i)
    }

    private func convert(_ value: Any?, for a: NSAttributeDescription) -> StoreValue {
        guard let v = a.storeValue(from: value) else {
            programmerError(
                "PersistenceKit: wrong value type for '\(entity.name).\(a.name)' (object \(objectID)): got "
                    + "\(value.map { "\(type(of: $0))" } ?? "nil"), expected \(a.attributeType). Rule: attribute values must "
                    + "convert exactly to the attribute's type.")
        }
        return v
    }

    private func object(_ value: Any?, for r: NSRelationshipDescription) -> NSManagedObject? {
        guard let value, !(value is NSNull) else { return nil }
        if let optional = value as? any _OptionalProtocol {
            return optional._wrappedAny.flatMap { object($0, for: r) }
        }
        guard let o = value as? NSManagedObject else {
            programmerError(
                "PersistenceKit: wrong value type for relationship '\(entity.name).\(r.name)' (object \(objectID)): got "
                    + "\(type(of: value)), expected an object of entity '\(r.destinationEntity?.name ?? "?")' or nil.")
        }
        return o
    }

    /// The objects of an ordered value (an array or an NSOrderedSet), in order; nil for
    /// anything else.
    private func objectList(_ value: Any?) -> [NSManagedObject]? {
        if let array = value as? [NSManagedObject] { return array }
        if let ordered = value as? NSOrderedSet {
            let objects = ordered.array.compactMap { $0 as? NSManagedObject }
            return objects.count == ordered.count ? objects : nil
        }
        return nil
    }

    private func objectSet(_ value: Any?, for r: NSRelationshipDescription) -> Set<NSManagedObject> {
        guard let value, !(value is NSNull) else { return [] }
        if let ordered = value as? NSOrderedSet, let objects = objectList(ordered) { return Set(objects) }
        if let set = value as? Set<NSManagedObject> { return set }
        if let array = value as? [NSManagedObject] { return Set(array) }
        programmerError(
            "PersistenceKit: wrong value type for to-many relationship '\(entity.name).\(r.name)' (object \(objectID)): "
                + "got \(type(of: value)), expected a Set or Array of '\(r.destinationEntity?.name ?? "?")' objects.")
    }

    /// The mutable set of a to-many relationship, for adding and removing objects with
    /// inverse upkeep (Core Data's `mutableSetValue(forKey:)`).
    ///
    /// Traps when `key` is not a to-many relationship.
    public func mutableSetValue(forKey key: String) -> RelationshipSet<NSManagedObject> {
        let i = index(forKey: key, "mutableSetValue(forKey: \"\(key)\")")
        guard (entity.properties[i] as? NSRelationshipDescription)?.isToMany == true else {
            programmerError("PersistenceKit: mutableSetValue(forKey: \"\(key)\") — '\(entity.name).\(key)' is not a to-many relationship.")
        }
        return RelationshipSet(owner: self, index: i)
    }

    // MARK: Primitive access

    /// The stored value of `key` without change notifications (same value types as
    /// ``value(forKey:)``).
    public func primitiveValue(forKey key: String) -> Any? {
        let i = index(forKey: key, "primitiveValue(forKey: \"\(key)\")")
        prepareForAccess("primitiveValue(forKey: \"\(key)\")")
        return anyValue(at: i)
    }

    /// Writes the stored value of `key` with no inverse upkeep and no change tracking; call
    /// ``willChangeValue(forKey:)`` / ``didChangeValue(forKey:)`` around it when the write
    /// should count as a change. Traps on an unknown key or a value of the wrong type.
    public func setPrimitiveValue(_ value: Any?, forKey key: String) {
        let i = index(forKey: key, "setPrimitiveValue(_:forKey: \"\(key)\")")
        prepareForAccess("setPrimitiveValue(_:forKey: \"\(key)\")")
        let p = entity.properties[i]
        if let a = p as? NSAttributeDescription {
            slots[i] = .value(convert(value, for: a))
        } else if let r = p as? NSRelationshipDescription, r.isToMany {
            let set = objectSet(value, for: r)
            for o in set { checkDestination(o, of: r) }
            slots[i] = .toMany(set)
        } else if let r = p as? NSRelationshipDescription {
            let o = object(value, for: r)
            if let o { checkDestination(o, of: r) }
            slots[i] = .toOne(o)
        }
    }

    private func checkDestination(_ target: NSManagedObject, of r: NSRelationshipDescription) {
        guard r.accepts(target.entity) else {
            programmerError(
                "PersistenceKit: wrong value type for relationship '\(entity.name).\(r.name)' (object \(objectID)): got an "
                    + "object of entity '\(target.entity.name)', expected '\(r.destinationEntity?.name ?? "?")'.")
        }
    }

    /// Announces a change of `key`; pairs with ``didChangeValue(forKey:)``.
    public func willChangeValue(forKey key: String) {
        _ = index(forKey: key, "willChangeValue(forKey: \"\(key)\")")
        prepareForAccess("willChangeValue(forKey: \"\(key)\")")
    }

    /// Records a change of `key`: the object becomes updated in its context.
    public func didChangeValue(forKey key: String) {
        _ = index(forKey: key, "didChangeValue(forKey: \"\(key)\")")
        markChanged()
    }

    /// Announces a read of `key`; fires the fault. Pairs with ``didAccessValue(forKey:)``.
    public func willAccessValue(forKey key: String?) {
        if let key { _ = index(forKey: key, "willAccessValue(forKey: \"\(key)\")") }
        prepareForAccess("willAccessValue(forKey:)")
    }

    /// Ends a read of `key`. Does nothing; present for Core Data source compatibility.
    public func didAccessValue(forKey key: String?) {}

    // MARK: Changes

    /// Whether persistent property `i` differs from the last saved or fetched value.
    func persistentValueDiffers(at i: Int) -> Bool {
        if entity.slotKinds[i].isTransient { return false }
        if valueStorage == .snapshot { return false }  // the values are the snapshot's
        let committed: StoreValue = snapshot.map { i < $0.values.count ? $0.values[i] : .null } ?? .null
        if valueStorage == .values || valueStorage == .defaults { return !currentAttributeValue(at: i).isSame(as: committed) }
        switch slots[i] {
        case let .value(v): return !v.isSame(as: committed)
        case .unresolvedToOne, .unresolvedToMany: return false
        case let .toOne(o):
            guard let o else { return !committed.isNull }
            guard let row = o.rowID else { return true }
            return committed != .reference(row)
        case let .toMany(set):
            if entity.properties[i].isOrderedToMany {
                // Order counts: a move alone is a change.
                var rows: [StoreRowID] = []
                for o in orderedToMany(at: i) {
                    guard let row = o.rowID else { return true }
                    rows.append(row)
                }
                if case let .references(old) = committed { return rows != old }
                return !rows.isEmpty
            }
            var rows: [StoreRowID] = []
            rows.reserveCapacity(set.count)
            for o in set {
                guard let row = o.rowID else { return true }
                rows.append(row)
            }
            if case let .references(old) = committed { return rows.sorted() != old }
            return !rows.isEmpty
        }
    }

    /// The persistent properties changed since the object was last fetched or saved, with
    /// their new values (`NSNull` for `nil`). For an inserted object: every persistent
    /// property that has a value.
    public func changedValues() -> [String: Any] {
        prepareForAccess("changedValues()")
        var result: [String: Any] = [:]
        for (i, p) in entity.properties.enumerated() where persistentValueDiffers(at: i) {
            result[p.name] = anyValue(at: i) ?? NSNull()
        }
        return result
    }

    /// Whether any persistent property differs from its last saved or fetched value.
    public var hasPersistentChangedValues: Bool {
        prepareForAccess("hasPersistentChangedValues")
        return entity.properties.indices.contains { persistentValueDiffers(at: $0) }
    }

    /// The last saved or fetched values of `keys` (all persistent properties when `nil`),
    /// `NSNull` for `nil`. Relationships are returned as objects of this context. Empty for
    /// an object never saved.
    public func committedValues(forKeys keys: [String]?) -> [String: Any] {
        prepareForAccess("committedValues(forKeys:)")
        guard let snapshot else { return [:] }
        let names = keys ?? entity.properties.filter { !$0.isTransient }.map(\.name)
        var result: [String: Any] = [:]
        for key in names {
            let i = index(forKey: key, "committedValues(forKeys:)")
            let v = i < snapshot.values.count ? snapshot.values[i] : .null
            switch entity.properties[i] {
            case let a as NSAttributeDescription:
                result[key] = a.anyValue(from: v) ?? NSNull()
            case let r as NSRelationshipDescription:
                let dest = r.destinationEntity
                switch v {
                case let .reference(row):
                    result[key] = dest.flatMap { managedObjectContext?.object(forRow: row, entity: $0) } ?? NSNull()
                case let .references(rows):
                    result[key] = Set(rows.compactMap { row in dest.flatMap { managedObjectContext?.object(forRow: row, entity: $0) } })
                default:
                    result[key] = r.isToMany ? Set<NSManagedObject>() : NSNull()
                }
            default: break
            }
        }
        return result
    }
}
