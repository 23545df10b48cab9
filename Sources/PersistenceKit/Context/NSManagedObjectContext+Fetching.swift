import Foundation

extension NSManagedObjectContext {
    /// Runs a fetch request and returns its results.
    ///
    /// Objects come back registered in this context (one object per ID), as faults unless
    /// the predicate or sort had to read them. With `includesPendingChanges` (the default)
    /// unsaved inserts that match are included, deleted objects are left out, and predicates
    /// see in-memory values.
    ///
    /// - Complexity: O(n log n) in the entity's rows: the predicate runs on each object.
    /// - Throws: ``CoreDataError`` `.coreData` for an unknown entity, an unsupported result
    ///   type or no loaded store; the predicate's own errors.
    public func fetch<T: NSFetchRequestResult>(_ request: NSFetchRequest<T>) throws -> [T] {
        assertOnQueue("fetch(_:)")
        switch request.resultType {
        case .countResultType:
            guard let result = [NSNumber(value: try count(for: request))] as? [T] else {
                throw CoreDataError(.coreData, "countResultType needs NSFetchRequest<NSNumber>; got NSFetchRequest<\(T.self)>.")
            }
            return result
        case .managedObjectIDResultType:
            let ids = try fetchObjects(request).map(\.objectID)
            guard let result = ids as? [T] else {
                throw CoreDataError(
                    .coreData, "managedObjectIDResultType needs NSFetchRequest<NSManagedObjectID>; got NSFetchRequest<\(T.self)>.")
            }
            return result
        case .dictionaryResultType:
            throw CoreDataError(.coreData, "dictionaryResultType is not supported; fetch objects or object IDs instead.")
        case .managedObjectResultType:
            let objects = try fetchObjects(request)
            if let typed = objects as? [T] { return typed }
            throw CoreDataError(
                .coreData,
                "fetch request result type \(T.self) does not match the objects of entity "
                    + "'\(objects.first?.entity.name ?? request.entityName ?? "?")'; use NSFetchRequest<NSManagedObject> or the entity's class.")
        }
    }

    /// The number of objects a fetch request would return (honouring predicate, offset,
    /// limit and pending changes).
    ///
    /// - Throws: as ``fetch(_:)``.
    public func count<T: NSFetchRequestResult>(for request: NSFetchRequest<T>) throws -> Int {
        assertOnQueue("count(for:)")
        let entity = try request.resolveEntity(in: coordinator.managedObjectModel)
        let store = try coordinator.primaryStore(for: "count(for:)")
        // Fast path: no predicate, and no pending changes of this entity to account for.
        if request.filter == nil && !(request.includesPendingChanges && hasPendingChanges(of: entity)) {
            let n = try store.countRows(entity: entity.index, filter: nil)
            return window(n, offset: request.fetchOffset, limit: request.fetchLimit)
        }
        return try fetchObjects(request).count
    }

    private func window(_ n: Int, offset: Int, limit: Int) -> Int {
        let afterOffset = max(0, n - max(0, offset))
        return limit > 0 ? min(limit, afterOffset) : afterOffset
    }

    private func hasPendingChanges(of entity: NSEntityDescription) -> Bool {
        insertedSet.contains { $0.entity === entity } || deletedSet.contains { $0.entity === entity }
            || !pendingDeletes.isEmpty
    }

    /// The objects matching a request, sorted, offset and limited.
    private func fetchObjects<T>(_ request: NSFetchRequest<T>) throws -> [NSManagedObject] {
        let entity = try request.resolveEntity(in: coordinator.managedObjectModel)
        let store = try coordinator.primaryStore(for: "fetch(_:)")
        if request.includesPendingChanges { processPendingChanges() }
        let rows = try store.fetchRows(entity: entity.index, filter: nil)
        var candidates: [NSManagedObject] = []
        candidates.reserveCapacity(rows.count)
        for row in rows {
            let o = register(row, entity: entity, store: store)
            if request.includesPendingChanges && o.flags.contains(.deleted) { continue }
            candidates.append(o)
        }
        if request.includesPendingChanges {
            candidates += objectsInSaveOrder(insertedSet.filter { $0.entity === entity && $0.objectID.isTemporaryID })
        }
        var matches: [NSManagedObject]
        if let filter = request.filter {
            matches = []
            for o in candidates {
                let subject = request.includesPendingChanges || !o.hasChangesUnchecked ? o : committedCopy(of: o)
                if try filter.evaluate(subject) { matches.append(o) }
            }
        } else {
            matches = candidates
        }
        if !request.sortRules.isEmpty {
            let rules = request.sortRules
            matches.sort { a, b in
                for rule in rules {
                    switch rule.compare(a, b) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return false
            }
        }
        if request.fetchOffset > 0 { matches = Array(matches.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 && matches.count > request.fetchLimit { matches = Array(matches.prefix(request.fetchLimit)) }
        if !request.returnsObjectsAsFaults {
            for o in matches where o.flags.contains(.fault) { o.fireFault() }
        }
        return matches
    }

    /// A detached copy of an object holding its last saved values, so a predicate can be
    /// evaluated against the store's state (`includesPendingChanges == false`).
    private func committedCopy(of o: NSManagedObject) -> NSManagedObject {
        let copy = o.entity.managedObjectClass.init(entity: o.entity, insertInto: nil)
        copy.objectID = o.objectID
        if let snapshot = o.snapshot {
            copy.slots = o.decode(snapshot)
            // Relationships stay row IDs; resolving them would need a context.
            for i in copy.slots.indices {
                switch copy.slots[i] {
                case .unresolvedToOne: copy.slots[i] = .toOne(nil)
                case .unresolvedToMany: copy.slots[i] = .toMany([])
                default: break
                }
            }
        }
        return copy
    }
}

extension NSManagedObject {
    /// `hasChanges` without the queue check (callers are on the queue already).
    var hasChangesUnchecked: Bool { !flags.isDisjoint(with: [.inserted, .deleted, .updated]) }
}
