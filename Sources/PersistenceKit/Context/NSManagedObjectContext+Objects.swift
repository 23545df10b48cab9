import Foundation

extension NSManagedObjectContext {
    /// The entity that the context's model maps `type` to, or a trap naming the class.
    func entityDescription(for type: NSManagedObject.Type) -> NSEntityDescription {
        assertOnQueue("\(type).init(context:)")
        // Objects are usually created many of one class in a row: remember the last answer
        // (for this coordinator generation) instead of hashing the class each time.
        // The model is read only on a miss: reading it takes the coordinator's lock and
        // retains the model, which cost as much as the rest of `init(context:)`'s lookup.
        let generation = currentCoordinatorGeneration
        if entityCache.type == ObjectIdentifier(type), entityCache.generation == generation,
            let e = entityCache.entity
        {
            return e
        }
        guard let entity = coordinator.managedObjectModel.entity(for: type) else {
            programmerError(
                "PersistenceKit: \(type).init(context:) — the model of context '\(debugName)' has no entity for class "
                    + "\(type). Rule: build the model from this class (NSManagedObjectModel(managedObjectClasses:)) or "
                    + "set an entity's managedObjectClass to it.")
        }
        entityCache = (generation, ObjectIdentifier(type), entity)
        return entity
    }

    /// The object for `objectID`: the registered one, or a new fault that loads its values on
    /// first access. Never fetches; a fault for a row that does not exist traps when read
    /// (use ``existingObject(with:)`` to check).
    ///
    /// Traps when the ID belongs to another coordinator, or is a temporary ID of an object
    /// that is not registered here.
    public func object(with objectID: NSManagedObjectID) -> NSManagedObject {
        assertOnQueue("object(with:)")
        if let o = registeredObject(objectID) { return o }
        guard coordinator.owns(objectID) else {
            programmerError(
                "PersistenceKit: object(with: \(objectID)) — the ID belongs to another coordinator or store than "
                    + "context '\(debugName)' uses. Rule: object IDs only work with the coordinator that made them; "
                    + "use managedObjectID(forURIRepresentation:) on this coordinator.")
        }
        guard objectID.rowID != nil else {
            programmerError(
                "PersistenceKit: object(with: \(objectID)) — a temporary ID only names an object in the context that "
                    + "inserted it. Rule: save or obtainPermanentIDs(for:) before passing IDs between contexts.")
        }
        return fault(for: objectID)
    }

    /// The object for `objectID`, loaded from the store if it is not registered or is a fault.
    ///
    /// - Throws: ``CoreDataError`` `.managedObjectReferentialIntegrity` when no such object
    ///   exists (never saved, or deleted), `.managedObjectExternalRelationship` when the ID
    ///   belongs to another coordinator.
    public func existingObject(with objectID: NSManagedObjectID) throws -> NSManagedObject {
        assertOnQueue("existingObject(with:)")
        if let o = registeredObject(objectID), !o.flags.contains(.fault) { return o }
        guard coordinator.owns(objectID) else {
            throw CoreDataError(
                .managedObjectExternalRelationship, objectID: objectID,
                "the object ID belongs to another coordinator or store than context '\(debugName)' uses; "
                    + "resolve its URI with this coordinator's managedObjectID(forURIRepresentation:).")
        }
        guard let rowID = objectID.rowID else {
            throw CoreDataError(
                .managedObjectReferentialIntegrity, objectID: objectID,
                "no object with this temporary ID is in context '\(debugName)'; temporary IDs are local to the "
                    + "inserting context until it saves.")
        }
        let store = try readStore(for: "existingObject(with:)")
        guard let row = try store.fetchRow(rowID) else {
            throw CoreDataError(
                .managedObjectReferentialIntegrity, objectID: objectID,
                "the object does not exist in the store (it was deleted or never saved).")
        }
        if let o = registeredByID[objectID] {
            o.holdRow(row)  // a fault: registered objects that are not were returned above
            o.fireFault()
            return o
        }
        let o = fault(for: objectID)
        // A fetch's stand-in adopted here may have been read already: fill it only if it is
        // still a fault.
        if o.flags.contains(.fault) {
            o.holdRow(row)
            o.fireFault()
        }
        return o
    }

    /// The object registered for `objectID` in this context, or `nil`. Never creates or loads.
    public func registeredObject(for objectID: NSManagedObjectID) -> NSManagedObject? {
        assertOnQueue("registeredObject(for:)")
        return registeredObject(objectID)
    }

    /// The object with `objectID` in this context: registered, or inserted with that
    /// temporary ID.
    @inline(__always)
    func registeredObject(_ objectID: NSManagedObjectID) -> NSManagedObject? {
        objectID.objectKey.isTemporary ? temporaries[objectID] : registeredByID[objectID]
    }

    /// Removes `object` from the table that holds it by ID (the registry, or `temporaries`
    /// for an inserted object whose temporary ID was made). Makes no key.
    func unregister(_ object: NSManagedObject) {
        if object.hasPermanentKey {
            registeredByID.remove(object)
        } else if object.hasTemporaryKey {
            temporaries.remove(object)
        }
    }

    /// Gives the objects that still have temporary IDs their permanent IDs now (saving does
    /// it too). The objects stay inserted. The store records the keys it handed out before
    /// this returns, so no later object gets one of these IDs, even if these objects are
    /// never saved.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` when no store is loaded, or the store's error
    ///   (the objects then keep their temporary IDs).
    public func obtainPermanentIDs(for objects: [NSManagedObject]) throws {
        assertOnQueue("obtainPermanentIDs(for:)")
        let temporary = objects.filter { !$0.hasPermanentKey }
        if temporary.isEmpty { return }
        for o in temporary where o.managedObjectContext !== self {
            programmerError("PersistenceKit: obtainPermanentIDs(for:) — \(o.objectID) is not in context '\(debugName)'.")
        }
        var store = try coordinator.primaryStore(for: "obtainPermanentIDs(for:)")
        var owner = coordinator
        if let chained = store as? ParentContextStore {  // a child's come from the root
            store = try chained.rootStore
            owner = chained.rootCoordinator
        }
        try owner.refuseWrites(to: store, "obtainPermanentIDs(for:)")
        try allocateRows(for: temporary, in: store)
        do {
            try store.recordAllocatedKeys(entities: Array(Set(temporary.map(\.entity.index))))
        } catch {
            for o in temporary { o.pendingRow = nil }  // they keep their temporary IDs
            throw error
        }
        let number = storeNumber(for: store.identifier)
        var keyed: [NSManagedObject] = []
        for o in temporary {
            if let row = o.pendingRow {
                givePermanentKey(row, storeNumber: number, to: o)
                keyed.append(o)
            }
            o.pendingRow = nil
        }
        registerPermanentKeys(of: keyed)
    }

    /// Gives objects with temporary IDs new row IDs in `pendingRow`, allocated per entity in
    /// insertion order. The caller clears `pendingRow` when done with it.
    ///
    /// Counts and cursors live in arrays indexed by entity: no hashing per object (measured:
    /// a dictionary of objects to rows was a tenth of saving 100,000 inserts, counting its
    /// lookups during the save).
    func allocateRows(for objects: [NSManagedObject], in store: any PersistentStore, ordered: Bool = false) throws {
        let list = ordered ? objects : objects.sorted(by: { $0.insertionIndex < $1.insertionIndex })
        let entityCount = coordinator.managedObjectModel.entities.count
        var counts = [Int](repeating: 0, count: entityCount)
        for o in list { counts[Int(o.entity.index)] += 1 }
        var next = [Int64](repeating: 0, count: entityCount)
        for e in counts.indices where counts[e] > 0 {
            next[e] = try store.allocatePrimaryKeys(entity: Int32(e), count: counts[e]).lowerBound
        }
        for o in list {
            let e = Int(o.entity.index)
            o.pendingRow = StoreRowID(entity: Int32(e), primaryKey: next[e])
            next[e] += 1
        }
    }

    /// The number of the store with `identifier`, for making object keys.
    @inline(__always)
    func storeNumber(for identifier: String) -> UInt32 {
        if let cache = storeNumberCache, cache.identifier == identifier { return cache.number }
        let number = StoreNumbers.number(for: identifier)
        storeNumberCache = (identifier, number)
        return number
    }

    /// Takes an object out of the table that holds it by its temporary key and gives it its
    /// permanent key; `registerPermanentKeys(of:)` then registers it. `storeNumber` is
    /// `storeNumber(for: store.identifier)`, asked once by the caller: asked per object, the
    /// store's identifier (a protocol call and a string) was 1% of saving 100,000 inserts.
    @inline(__always)
    func givePermanentKey(_ row: StoreRowID, storeNumber: UInt32, to object: NSManagedObject) {
        unregister(object)
        object.setObjectKey(ObjectKey(row: row, storeNumber: storeNumber))
    }

    /// Registers `objects`, just given permanent keys, under them (together: see
    /// `ObjectRegistry.insert(contentsOf:)`). A fault registered for one of their rows (from
    /// an ID of a row that was never saved) names nothing that exists: the new object takes
    /// the row, and the fault is invalidated so that it does not keep this context.
    func registerPermanentKeys(of objects: [NSManagedObject]) {
        for stale in registeredByID.insert(contentsOf: objects) { invalidateStale(stale) }
    }

    @inline(never)
    private func invalidateStale(_ object: NSManagedObject) {
        object.invalidate()
        noteDeparture()
    }

    /// The registered object for a store row, or a new fault for it.
    /// `object(forRow:entity:)` for each of `rows`, in order, asking for the store once: per
    /// row, the coordinator's lock and the store's identifier were a third of turning a
    /// shelf's 50,000 stored books into objects.
    ///
    /// `entity` is the relationship's destination; a row of one of its sub-entities becomes
    /// an object of that sub-entity (the row ID names it).
    func objects(forRows rows: [StoreRowID], entity: NSEntityDescription) -> [NSManagedObject] {
        guard let store = try? coordinator.primaryStore(for: "resolving a relationship") else {
            programmerError("PersistenceKit: context '\(debugName)' lost its store while resolving \(rows.count) rows.")
        }
        let number = storeNumber(for: store.identifier)
        guard rows.count >= ObjectRegistry.bulkThreshold, rows.isSortedUnique else {
            registeredByID.reserveCapacity(registeredByID.count + rows.count)
            return rows.map { row in
                let key = ObjectKey(row: row, storeNumber: number)
                let entity = entity.forRow(row)
                return registeredByID[key, entity] ?? fault(for: key, entity: entity)  // which adopts a stand-in
            }
        }
        // Many: the new faults are registered together (see `ObjectRegistry.insert(contentsOf:)`);
        // no two rows are alike, so none displaces another.
        var new: [NSManagedObject] = []
        let objects = rows.map { row in
            let key = ObjectKey(row: row, storeNumber: number)
            let entity = entity.forRow(row)
            if let o = registeredByID[key, entity] { return o }
            if !standIns.isEmpty, let s = adoptStandIn(key) { return s }
            let o = makeFault(entity)
            o.setObjectKey(key)
            new.append(o)
            return o
        }
        let replaced = registeredByID.insert(contentsOf: new)
        assert(replaced.isEmpty, "PersistenceKit internal error: a fault replaced a registered object")
        return objects
    }

    func object(forRow row: StoreRowID, entity: NSEntityDescription) -> NSManagedObject {
        guard let store = try? coordinator.primaryStore(for: "resolving a relationship") else {
            programmerError("PersistenceKit: context '\(debugName)' lost its store while resolving \(row).")
        }
        let key = ObjectKey(row: row, storeNumber: storeNumber(for: store.identifier))
        let entity = entity.forRow(row)
        if let o = registeredByID[key, entity] { return o }
        return fault(for: key, entity: entity)
    }

    /// Registers a new fault for a permanent ID.
    func fault(for id: NSManagedObjectID) -> NSManagedObject {
        if !standIns.isEmpty, let s = adoptStandIn(id.objectKey) { return s }
        let o = makeFault(id.entity)
        o.objectID = id
        let replaced = registeredByID.insert(o)
        assert(replaced == nil, "PersistenceKit internal error: a fault replaced a registered object")
        return o
    }

    /// Registers a new fault for a permanent key of `entity` (its ID is made when asked for).
    func fault(for key: ObjectKey, entity: NSEntityDescription) -> NSManagedObject {
        if !standIns.isEmpty, let s = adoptStandIn(key) { return s }
        return registerFault(makeFault(entity), key: key)
    }

    /// Registers a new fault for a permanent key of `entity` holding `row`, which moves into
    /// it (see `NSManagedObject.install(taking:)`); a stand-in judged for the key becomes the
    /// object instead, and takes the row if it is a fault.
    func fault(for key: ObjectKey, entity: NSEntityDescription, takingRow row: inout StoreRow) -> NSManagedObject {
        if !standIns.isEmpty, let s = adoptStandIn(key) {
            if s.flags.contains(.fault) { s.holdRow(taking: &row) }
            return s
        }
        return registerFault(makeFault(entity, takingRow: &row), key: key)
    }

    @inline(__always)
    private func registerFault(_ o: NSManagedObject, key: ObjectKey) -> NSManagedObject {
        o.setObjectKey(key)
        let replaced = registeredByID.insert(o)
        assert(replaced == nil, "PersistenceKit internal error: a fault replaced a registered object")
        return o
    }

    /// Registers the stand-in a fetch is judging for `key`, if there is one, as the row's
    /// object: reached through a relationship while the fetch judges, the row must be the
    /// very object the predicate holds, or `manager?.favorite === self` compares a stand-in
    /// with a second object made for its row, and fails.
    func adoptStandIn(_ key: ObjectKey) -> NSManagedObject? {
        guard let s = standIns.removeValue(forKey: key) else { return nil }
        adopt(s)
        return s
    }

    /// Makes a fetch's row stand-in a registered object of this context. One the predicate
    /// or sort already read gets the `awakeFromFetch()` it was spared, and what a getter the
    /// predicate ran wrote to it becomes an ordinary unsaved change (not left in memory
    /// unrecorded, to be saved unannounced).
    func adopt(_ standIn: NSManagedObject) {
        if !standIns.isEmpty { standIns.removeValue(forKey: standIn.objectKey) }
        standIn.moreFlags.remove(.rowStandIn)
        standIn.managedObjectContext = self
        let replaced = registeredByID.insert(standIn)
        assert(replaced == nil, "PersistenceKit internal error: an adopted stand-in replaced a registered object")
        if !standIn.flags.contains(.fault) {
            standIn.awakeFromFetch()
            if standIn.wasWrittenSinceFetched { objectDidChange(standIn) }
        }
    }

    /// A new fault of `entity` in this context, holding no row (not registered).
    @inline(__always)
    func makeFault(_ entity: NSEntityDescription) -> NSManagedObject {
        let o = entity.managedObjectClass.init(entity: entity, insertInto: nil)
        o.storedSlots = []
        o.storedValues = []
        o.valueStorage = .slots
        o.flags = [.fault]
        o.managedObjectContext = self
        return o
    }

    /// A new fault of `entity` in this context holding `row`, which moves into it (see
    /// `NSManagedObject.install(taking:)`; not registered).
    @inline(__always)
    func makeFault(_ entity: NSEntityDescription, takingRow row: inout StoreRow) -> NSManagedObject {
        let o = entity.managedObjectClass.init(entity: entity, insertInto: nil)
        o.install(taking: &row)
        o.flags = [.fault]
        o.managedObjectContext = self
        return o
    }

    /// Registers (or updates) the object for a fetched row, leaving it a fault that holds
    /// the row. A registered object with unsaved changes keeps its changes. A fault takes
    /// the row (`row` is left without values); otherwise `row` is untouched.
    @inline(__always)
    func register(taking row: inout StoreRow, entity: NSEntityDescription, storeNumber: UInt32) -> NSManagedObject {
        let key = ObjectKey(row: row.id, storeNumber: storeNumber)
        let entity = entity.forRow(row.id)
        let (registered, slot) = registeredByID.lookup(key, entity)
        if let o = registered {
            if o.flags.contains(.fault) { o.holdRow(taking: &row) }
            return o
        }
        // No stand-in to adopt (adopting one registers it, which moves the slot): the new
        // fault goes into the slot the lookup found, without probing the table again.
        if standIns.isEmpty {
            let o = makeFault(entity, takingRow: &row)
            o.setObjectKey(key)
            registeredByID.insert(o, into: slot)
            return o
        }
        return fault(for: key, entity: entity, takingRow: &row)
    }

    /// Notes that a fault now holds a row that was current when ``CommitClock`` read `clock`
    /// (read before the row was: see `heldRowIsCurrent(_:)`).
    @inline(__always)
    func noteHeldRow(readAt clock: UInt64) {
        if clock < heldRowsSince { heldRowsSince = clock }
    }

    /// Whether `row`, which a fault here holds, is still the store's version of it, asked of
    /// the store: for faults fired after some commit (with none since the rows were read,
    /// `NSManagedObject.noCommitSinceRowsWereFetched` answers without asking). A row that
    /// cannot be checked (the store fails to answer) is used as it is.
    ///
    /// A fault filled with an older row showed values another context had already saved
    /// over, and its next save then conflicted; Core Data fills faults from the
    /// coordinator's row cache, which every save updates.
    func heldRowIsCurrent(_ row: StoreRow) -> Bool {
        guard let store = try? readStore(for: "firing a fault") else { return true }
        do { return try store.rowVersion(row.id) == row.version } catch { return true }
    }

    /// The row to fill a fault with, straight from the store (nil when it is gone, or the
    /// store cannot be read).
    func rowForFault(_ object: NSManagedObject) -> StoreRow? {
        (try? loadRowForFault(object)) ?? nil
    }

    /// The row to fill a fault with: nil when the store has no such row (or the object none);
    /// throws when there is no store or it fails to read the row — which is not a missing row.
    func loadRowForFault(_ object: NSManagedObject) throws -> StoreRow? {
        guard let row = object.rowID else { return nil }
        return try readStore(for: "firing a fault").fetchRow(row)
    }
}
