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
                preconditionFailure(
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
            preconditionFailure(
                "PersistenceKit: \(operation()) on \(objectID) — the object is no longer usable: its deletion was "
                    + "saved, or its context was reset, rolled back or deallocated. Rule: after a delete is saved or a context "
                    + "is reset, fetch the object again (existingObject(with:) throws if it is gone).")
        }
        if flags.contains(.fault) { fireFault() }
    }

    /// Loads the object's values: from the row captured when it was fetched, or else from the
    /// store. Traps when the row no longer exists (Core Data raises "could not fulfill a fault").
    func fireFault() {
        let row: StoreRow
        if let snapshot {
            row = snapshot
        } else {
            guard let context = managedObjectContext else {
                preconditionFailure(
                    "PersistenceKit: \(objectID) is a fault that is not in any context, so its values cannot be loaded.")
            }
            guard let loaded = context.rowForFault(self) else {
                preconditionFailure(
                    "PersistenceKit: could not fulfill the fault for \(objectID) in context '\(context.debugName)': "
                        + "the object was deleted from the store. Rule: use existingObject(with:) to check that an "
                        + "object exists before reading it through object(with:).")
            }
            row = loaded
        }
        install(row)
        flags.remove(.fault)
        awakeFromFetch()
    }

    /// Replaces the object's values and snapshot with a store row. The values stay in the
    /// snapshot until slots are needed (see ``slots``).
    func install(_ row: StoreRow) {
        storedSnapshot = row
        storedSlots = []
        flags.insert(.valuesInSnapshot)
    }

    /// Decodes the snapshot's values into slots (see ``slots``).
    @inline(never)
    func decodeSnapshotIntoSlots() {
        flags.remove(.valuesInSnapshot)
        guard let row = storedSnapshot else {
            preconditionFailure("PersistenceKit internal error: \(objectID) keeps its values in a snapshot it does not have.")
        }
        storedSlots = decode(row)
    }

    /// Turns a store row into slots (relationships stay unresolved until read).
    func decode(_ row: StoreRow) -> ContiguousArray<Slot> {
        let kinds = entity.slotKinds
        var result = ContiguousArray<Slot>()
        result.reserveCapacity(kinds.count)
        for (i, kind) in kinds.enumerated() {
            let v = i < row.values.count ? row.values[i] : .null
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
    func encodedValue(at i: Int, rowFor: (NSManagedObject) -> StoreRowID?) -> StoreValue {
        loadSlots()
        switch storedSlots[i] {
        case let .value(v): return v
        case let .toOne(o): return o.flatMap(rowFor).map(StoreValue.reference) ?? .null
        case let .toMany(set): return .references(set.compactMap(rowFor).sorted())
        case let .unresolvedToOne(r): return r.map(StoreValue.reference) ?? .null
        case let .unresolvedToMany(rs): return .references(rs)
        }
    }
}
