import Foundation

extension NSManagedObject {
    /// Runs before every read or write of the object's values: checks the queue, rejects
    /// invalidated objects, and fires the fault.
    @inline(__always)
    func prepareForAccess(_ operation: @autoclosure () -> String) {
        checkQueue(operation())
        if !flags.isDisjoint(with: [.fault, .invalidated]) {
            prepareSlowPath(operation)
        }
    }

    /// Traps when checks are on and the caller is not on the owning context's queue.
    @inline(__always)
    func checkQueue(_ operation: @autoclosure () -> String) {
        if NSManagedObjectContext.checksQueues, let queue = contextQueue, !queue.isCurrent {
            guard let context = managedObjectContext else {
                programmerError(
                    "PersistenceKit concurrency violation: \(operation()) on \(objectID) from the wrong thread, after its "
                        + "context was deallocated. Rule: use an object only on its context's queue.")
            }
            context.assertOnQueue(operation(), object: self)
        }
    }

    // The operation stays an autoclosure down to the trap: built eagerly, the message cost a
    // string interpolation for every fault fired (measured: a visible share of a fetch).
    private func prepareSlowPath(_ operation: () -> String) {
        if flags.contains(.invalidated) {
            programmerError(
                "PersistenceKit: \(operation()) on \(objectID) — the object is no longer usable: its deletion was "
                    + "saved, or its context was reset, rolled back or deallocated. Rule: after a delete is saved or a context "
                    + "is reset, fetch the object again (existingObject(with:) throws if it is gone).")
        }
        if flags.contains(.fault) { fireFault() }
    }

    /// Loads the object's values: from the row captured when it was fetched, or else from the
    /// store. When the row no longer exists the object becomes a deleted object with empty
    /// values (``NSManagedObjectContext/shouldDeleteInaccessibleFaults``), or, with that
    /// setting off, traps (Core Data raises "could not fulfill a fault").
    func fireFault() {
        // A fault made for a fetched row already holds it as its values (`holdRow`), unless
        // a commit replaced that row since: then it loads the current one below.
        if valueStorage == .snapshot, storedSnapshot != nil {
            if noCommitSinceRowsWereFetched || (owningContext?.heldRowIsCurrent(storedSnapshot!) ?? true) {
                flags.remove(.fault)
                // A fetch's stand-in is read to judge its row, not fetched (Core Data runs no
                // hook on the rows its SQL filters and sorts).
                if !moreFlags.contains(.rowStandIn) { awakeFromFetch() }
                return
            }
            dropRow()
        }
        let row: StoreRow
        if let snapshot {
            row = snapshot
        } else {
            guard let context = managedObjectContext else {
                programmerError(
                    "PersistenceKit: \(objectID) is a fault that is not in any context, so its values cannot be loaded.")
            }
            let found: StoreRow?
            do {
                found = try context.loadRowForFault(self)
            } catch {
                programmerError(
                    "PersistenceKit: could not fulfill the fault for \(objectID) in context '\(context.debugName)': "
                        + "reading its row failed: \(error)")
            }
            guard let loaded = found else {
                guard context.shouldDeleteInaccessibleFaults else {
                    programmerError(
                        "PersistenceKit: could not fulfill the fault for \(objectID) in context '\(context.debugName)': "
                            + "the object was deleted from the store and the context's shouldDeleteInaccessibleFaults is "
                            + "false. Rule: use existingObject(with:) to check that an object exists before reading it "
                            + "through object(with:), or leave shouldDeleteInaccessibleFaults on.")
                }
                context.turnIntoInaccessibleDeletion(self)
                return
            }
            row = loaded
        }
        install(row)
        flags.remove(.fault)
        awakeFromFetch()
    }

    /// Makes a fault hold `row` as the values it will have when fired: firing then only
    /// clears the fault flag. (Measured: setting the snapshot through its accessor, then
    /// installing it again when the fault fired, was a twentieth of a filtered fetch.)
    @inline(__always)
    func holdRow(_ row: StoreRow) {
        assert(flags.contains(.fault), "PersistenceKit internal error: holdRow on \(objectID), which is not a fault")
        install(row)
    }

    /// ``holdRow(_:)`` for a row the caller gives up (see ``install(taking:)``).
    @inline(__always)
    func holdRow(taking row: inout StoreRow) {
        assert(flags.contains(.fault), "PersistenceKit internal error: holdRow on \(objectID), which is not a fault")
        install(taking: &row)
    }

    /// Makes a fault forget the row it holds: it loads its values from the store when fired.
    func dropRow() {
        assert(flags.contains(.fault), "PersistenceKit internal error: dropRow on \(objectID), which is not a fault")
        forgetToManyEdits()
        storedSnapshot = nil
        storedSlots = []
        storedValues = []
        valueStorage = .slots
    }

    /// Replaces the object's values and snapshot with a store row. The values stay in the
    /// snapshot until something needs them elsewhere (see ``ValueStorage``).
    func install(_ row: StoreRow) {
        forgetToManyEdits()
        storedSnapshot = row
        releaseValuesOutsideSnapshot()
    }

    /// ``install(_:)`` for a row the caller gives up: its values move into the object, and
    /// `row` is left holding none (its ID and version stay).
    ///
    /// Regression guard: a fetch installs rows it never reads again, and copying one retained
    /// its values array — memory the store wrote before the fetch came back to that row, so
    /// the retain was a cache miss per object (measured: a sixth of a filtered fetch of
    /// 25,000 objects). The swap moves the reference without touching the array; keep it a
    /// swap (passing the row `consuming` still compiled to a retain and a release).
    @inline(__always)
    func install(taking row: inout StoreRow) {
        forgetToManyEdits()
        storedSnapshot = StoreRow(id: row.id, version: row.version, values: [])
        swap(&storedSnapshot!.values, &row.values)
        releaseValuesOutsideSnapshot()
    }

    /// Empties the slots and the value array, and makes the snapshot the home of the values.
    @inline(__always)
    private func releaseValuesOutsideSnapshot() {
        // Emptied only when not empty already: each assignment retained the new empty
        // array and released the old one (a fetch installs a row in every new object).
        if !storedSlots.isEmpty { storedSlots = [] }
        if !storedValues.isEmpty { storedValues = [] }
        valueStorage = .snapshot
    }

    /// Moves the values from the snapshot or the value array into slots.
    @inline(never)
    func moveValuesIntoSlots() {
        assert(storedSlots.isEmpty, "PersistenceKit internal error: \(objectID) has slots while its values live elsewhere")
        assert(
            valueStorage != .values || storedValues.count == entity.slotKinds.count,
            "PersistenceKit internal error: \(objectID) holds \(storedValues.count) values for \(entity.slotKinds.count) properties")
        switch valueStorage {
        case .slots: return
        case .values:
            storedSlots = ContiguousArray(storedValues.lazy.map { .value($0) })
            storedValues = []
        case .defaults:
            storedSlots = entity.defaultSlots  // shared until written, like the values
        case .snapshot:
            guard let row = storedSnapshot else {
                programmerError("PersistenceKit internal error: \(objectID) keeps its values in a snapshot it does not have.")
            }
            storedSlots = decode(row)
            startTrackingToManyEdits()  // the slots are the snapshot's values
        }
        valueStorage = .slots
    }

    /// Moves the values out of the snapshot, before the snapshot changes or a value is
    /// written: into a value array when the entity has persistent attributes only (no
    /// decoding, and the array shares the snapshot's storage until written), else slots.
    @inline(never)
    func moveValuesOutOfSnapshot() {
        guard valueStorage == .snapshot, let row = storedSnapshot else { return moveValuesIntoSlots() }
        guard entity.hasOnlyPersistentAttributes else { return moveValuesIntoSlots() }
        var values = row.values
        let count = entity.slotKinds.count
        if values.count < count { values += repeatElement(StoreValue.null, count: count - values.count) }  // as `decode(_:)` reads
        storedValues = values
        valueStorage = .values
    }

    /// Moves the values of an object made outside a context (see `ValueStorage.defaults`)
    /// into the value array, which shares the entity's defaults until written.
    @inline(never)
    func takeDefaultValues() {
        assert(valueStorage == .defaults, "PersistenceKit internal error: \(objectID) holds values of its own already")
        storedValues = entity.defaultValues
        valueStorage = .values
    }

    /// Whether attribute `i` has no value, matched where the value lives (a copy of the value
    /// cost a retain and a release per checked attribute of every saved object).
    @inline(__always)
    func attributeIsNull(at i: Int) -> Bool {
        switch valueStorage {
        case .values:
            if case .null = storedValues[i] { return true }
            return false
        case .defaults:
            return entity.defaultValues[i].isNull
        case .snapshot, .slots:
            loadSlots()
            if case .value(.null) = storedSlots[i] { return true }
            return false
        }
    }

    /// The current value of attribute `i`, wherever it lives (no queue check, no faulting).
    @inline(__always)
    func currentAttributeValue(at i: Int) -> StoreValue {
        switch valueStorage {
        case .values:
            return storedValues[i]
        case .defaults:
            return entity.defaultValues[i]
        case .snapshot:
            if entity.slotKinds[i] == .attribute, let row = storedSnapshot {
                return row.value(at: i)  // as `decode(_:)` would
            }
        case .slots:
            break
        }
        loadSlots()
        guard case let .value(v) = storedSlots[i] else { return .null }
        return v
    }

    /// Turns a store row into slots (relationships stay unresolved until read).
    func decode(_ row: StoreRow) -> ContiguousArray<Slot> {
        let kinds = entity.slotKinds
        var result = ContiguousArray<Slot>()
        result.reserveCapacity(kinds.count)
        for (i, kind) in kinds.enumerated() {
            let v = row.value(at: i)
            switch kind {
            case .attribute:
                result.append(.value(v))
            case .transientAttribute:
                result.append(entity.defaultSlots[i])
            case .toMany:
                if case let .references(ids) = v { result.append(.unresolvedToMany(ids)) } else { result.append(.toMany([])) }
            case .toOne:
                if case let .reference(id) = v { result.append(.unresolvedToOne(id)) } else { result.append(.toOne(nil)) }
            }
        }
        return result
    }

    /// Turns the object back into a fault, dropping its values (and the references they hold).
    func turnIntoFault(keepingSnapshot: Bool) {
        willTurnIntoFault()
        slots = []
        if !keepingSnapshot { snapshot = nil }
        flags.insert(.fault)
        didTurnIntoFault()
    }

    /// Removes the object from its context for good.
    func invalidate() {
        slots = []
        snapshot = nil
        flags = [.invalidated]
        managedObjectContext = nil
    }

    /// The value of property `i` in stored form, with relationships as row IDs; temporary
    /// objects map through `rowFor` (nil → the relationship is written as empty).
    /// The rows of `set`'s objects, in ascending order.
    ///
    /// The targets of one relationship are nearly always rows of one entity (rows of
    /// several, when the destination has sub-entities, are sorted as pairs), so their keys
    /// are sorted as plain integers: sorting the row IDs themselves, compared as
    /// pairs, was a fifth of saving a shelf of 50,000 books that gained one.
    static func sortedRows(of set: Set<NSManagedObject>, rowFor: (NSManagedObject) -> StoreRowID?) -> [StoreRowID] {
        var keys: [Int64] = []
        keys.reserveCapacity(set.count)
        var entity: Int32?
        for o in set {
            guard let row = rowFor(o) else { continue }
            if entity == nil { entity = row.entity }
            guard row.entity == entity else { return set.compactMap(rowFor).sorted() }
            keys.append(row.primaryKey)
        }
        guard let entity else { return [] }
        keys.sort()
        return keys.map { StoreRowID(entity: entity, primaryKey: $0) }
    }

    func encodedValue(at i: Int, rowFor: (NSManagedObject) -> StoreRowID?) -> StoreValue {
        if valueStorage != .slots && entity.slotKinds[i] == .attribute { return currentAttributeValue(at: i) }
        loadSlots()
        switch storedSlots[i] {
        case let .value(v): return v
        case let .toOne(o): return o.flatMap(rowFor).map(StoreValue.reference) ?? .null
        case let .toMany(set):
            if entity.properties[i].isOrderedToMany {
                return .references(orderedToMany(at: i).compactMap(rowFor))
            }
            if let rows = patchedToManyRows(at: i, count: set.count, rowFor: rowFor) {
                assert(
                    rows == Self.sortedRows(of: set, rowFor: rowFor),
                    "PersistenceKit internal error: the tracked to-many edits of \(objectID).\(entity.properties[i].name) "
                        + "do not give its targets")
                return .references(rows)
            }
            return .references(Self.sortedRows(of: set, rowFor: rowFor))
        case let .unresolvedToOne(r): return r.map(StoreValue.reference) ?? .null
        case let .unresolvedToMany(rs): return .references(rs)
        }
    }
}
