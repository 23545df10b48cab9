import Foundation

extension NSManagedObjectContext {
    /// Runs a fetch request and returns its results.
    ///
    /// Objects come back registered in this context (one object per ID), as faults unless
    /// the predicate or sort had to read them. With `includesPendingChanges` (the default)
    /// unsaved inserts that match are included, deleted objects are left out, and predicates
    /// see in-memory values.
    ///
    /// - Complexity: a predicate the store can run is tested on the stored rows (an indexed
    ///   equality or range reads only the matching rows); others run on each object of the
    ///   entity. Sorting adds O(m log m) in the m results.
    /// - Throws: ``CoreDataError`` `.coreData` for an unknown entity, an unsupported result
    ///   type or no loaded store; the predicate's own errors.
    public func fetch<T>(_ request: NSFetchRequest<T>) throws -> [T] {
        assertOnQueue("fetch(_:)")
        switch request.resultType {
        case .countResultType:
            guard let result = [NSNumber(value: try count(for: request))] as? [T] else {
                throw CoreDataError(.coreData, "countResultType needs NSFetchRequest<NSNumber>; got NSFetchRequest<\(T.self)>.")
            }
            return result
        case .managedObjectIDResultType:
            let ids = try fetchObjectIDs(request)
            guard let result = ids as? [T] else {
                throw CoreDataError(
                    .coreData, "managedObjectIDResultType needs NSFetchRequest<NSManagedObjectID>; got NSFetchRequest<\(T.self)>.")
            }
            return result
        case .dictionaryResultType:
            return try fetchDictionaryResults(request)
        case .managedObjectResultType:
            let objects = try fetchObjects(request)
            if let typed = Self.typed(objects, as: T.self) { return typed }
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
    public func count<T>(for request: NSFetchRequest<T>) throws -> Int {
        assertOnQueue("count(for:)")
        let entity = try request.resolveEntity(in: coordinator.managedObjectModel)
        if request.includesSubentities && !entity.subentities.isEmpty {
            var n = 0
            for member in entity.selfAndDescendants { n += try count(for: request.part(for: member, limit: 0)) }
            return window(n, offset: request.fetchOffset, limit: request.fetchLimit)
        }
        let store = try readStore(for: "count(for:)")
        if request.includesPendingChanges { processPendingChanges() }
        // Fast path: the store can count alone when no pending change of this entity matters
        // and the predicate (if any) translates into store conditions.
        let storeFilter = self.storeFilter(for: request, entity: entity)
        if (request.filter == nil || storeFilter != nil) && !(request.includesPendingChanges && hasPendingChanges(of: entity)) {
            let n = try store.countRows(entity: entity.index, filter: storeFilter)
            return window(n, offset: request.fetchOffset, limit: request.fetchLimit)
        }
        return try fetchCandidates(request, tracksFaults: false, defersEveryRow: true).matches.count
    }

    /// `objects as? [T]`, without the run-time cast of each element when every object is an
    /// instance of one class that is a `T` (the usual case: all objects of an entity are made
    /// from its class). (The element-wise cast was 7% of a fetch of 100 small objects,
    /// measured with callgrind; mapping instead ran unspecialized, as `fetch` is generic.)
    static func typed<T>(_ objects: [NSManagedObject], as _: T.Type) -> [T]? {
        guard let first = objects.first else { return [] }
        let cls = type(of: first)
        // `T.self is NSManagedObject.Type` holds only for NSManagedObject and its subclasses.
        // Not `T.self is AnyObject.Type`: that also holds for a class-bound protocol type
        // such as `any NSFetchRequestResult`, whose elements are two words wide — the
        // reinterpreted array would read past its elements and corrupt memory.
        if T.self is NSManagedObject.Type, cls is T.Type, objects.allSatisfy({ type(of: $0) == cls }) {
            // Safe: T is NSManagedObject or a subclass of it, and every element is an
            // instance of `cls`, a subclass of T. An array of class references has one layout
            // whatever the class, and the standard library's own downcast of such an array
            // (after checking every element, as here) reuses the same buffer the same way.
            return unsafeBitCast(objects, to: [T].self)
        }
        return objects as? [T]
    }

    /// The filter the store can apply for `request`, or nil when the predicate must run on
    /// objects: when it does not translate, and when it reads other rows (through a
    /// relationship) while this context has unsaved changes the request counts — a renamed
    /// shelf changes which books `shelf.name == "x"` matches, though no book changed, and
    /// only the objects know it.
    func storeFilter<T>(for request: NSFetchRequest<T>, entity: NSEntityDescription) -> StoreFilter? {
        guard let filter = request.filter?.storeFilter(for: entity) else { return nil }
        if let predicate = filter.predicate, predicate.readsOtherRows, request.includesPendingChanges,
            !insertions.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty
        {
            return nil
        }
        return filter
    }

    private func window(_ n: Int, offset: Int, limit: Int) -> Int {
        let afterOffset = max(0, n - max(0, offset))
        return limit > 0 ? min(limit, afterOffset) : afterOffset
    }

    func hasPendingChanges(of entity: NSEntityDescription) -> Bool {
        insertions.contains { $0.entity === entity } || deletedSet.contains { $0.entity === entity }
            || updatedSet.contains { $0.entity === entity }
    }

    /// The objects matching a request, sorted, offset and limited, registered here.
    ///
    /// When the predicate translates into store conditions the store filters rows (using an
    /// index where it can) before objects are made; objects with unsaved changes are then
    /// judged by their in-memory values instead. Otherwise the predicate runs on each row.
    private func fetchObjects<T>(_ request: NSFetchRequest<T>) throws -> [NSManagedObject] {
        // The objects that were faults when the fetch met them, when some are to be
        // returned without values (`includesPropertyValues`, `fetchBatchSize`).
        let tracksFaults = !request.includesPropertyValues || request.fetchBatchSize > 0
        var (matches, entity, faultsAtStart, holdsStandIns) = try fetchCandidates(
            request, tracksFaults: tracksFaults, defersEveryRow: false)
        if holdsStandIns && matches.contains(where: \.isRowStandIn) {
            registeredByID.reserveCapacity(registeredByID.count + matches.count)
            for i in matches.indices where matches[i].isRowStandIn {
                let standIn = matches[i]
                // The stand-in's own entity: a fetch over sub-entities returns theirs.
                if let registered = registeredByID[standIn.objectKey, standIn.entity] {
                    // Registered meanwhile by a path that makes no stand-in its object.
                    if registered.flags.contains(.fault), let row = standIn.snapshot { registered.holdRow(row) }
                    if tracksFaults && registered.flags.contains(.fault) { faultsAtStart.insert(ObjectIdentifier(registered)) }
                    matches[i] = registered
                } else {
                    // Returned as a fault, as a row the store filtered and sorted would be:
                    // the predicate and sort read it without `awakeFromFetch()`, which runs
                    // when the object is first touched. (Not while judging: an accessor of
                    // the stand-in may be running then.)
                    if !standIn.flags.contains(.fault), !standIn.wasWrittenSinceFetched, let row = standIn.snapshot {
                        standIn.install(row)
                        standIn.flags.insert(.fault)
                    }
                    adopt(standIn)  // in `faultsAtStart` since it was made
                }
            }
        }
        if request.shouldRefreshRefetchedObjects {
            // Faults load current values anyway; inserted objects have no row to refresh from.
            for o in matches where o.flags.isDisjoint(with: [.fault, .inserted]) { refresh(o, mergeChanges: true) }
        }
        if !request.includesPropertyValues || request.fetchBatchSize > 0 {
            // Objects returned without values: faults again, holding no row, whether or not
            // the predicate or sort read them (it fires them, as no SQL does it here).
            let kept = request.includesPropertyValues ? request.fetchBatchSize : 0
            for o in matches.dropFirst(kept) where faultsAtStart.contains(ObjectIdentifier(o)) && !o.hasChangesUnchecked {
                if o.flags.contains(.fault) {
                    o.dropRow()
                } else {
                    // Fired by the predicate or sort (awakeFromFetch() ran): turned back with
                    // the fault hooks, so each awakeFromFetch() is paired with a
                    // didTurnIntoFault() as elsewhere; the flag alone makes the next touch run
                    // awakeFromFetch() a second time with none between.
                    o.turnIntoFault(keepingSnapshot: false)
                }
            }
            if !request.includesPropertyValues { return matches }
        }
        if !request.returnsObjectsAsFaults {
            for o in matches.prefix(request.fetchBatchSize > 0 ? request.fetchBatchSize : matches.count)
            where o.flags.contains(.fault) {
                o.fireFault()
            }
        }
        try prefetchRelationships(request.relationshipKeyPathsForPrefetching, of: matches, entity: entity)
        return matches
    }

    /// The IDs of the objects matching a request, sorted, offset and limited; rows not
    /// registered here stay unregistered.
    func fetchObjectIDs<T>(_ request: NSFetchRequest<T>) throws -> [NSManagedObjectID] {
        try fetchCandidates(request, tracksFaults: false, defersEveryRow: true).matches.map(\.objectID)
    }

    /// The objects matching a request, sorted, offset and limited, among them *row
    /// stand-ins* (``NSManagedObject/MoreFlags/rowStandIn``) for rows that no object here
    /// stands for, when only some rows are results — the predicate runs in memory, the
    /// request sorts or takes a window — or always with `defersEveryRow`. A stand-in is a
    /// detached fault holding its row, in no context: the predicate and sort read it, and
    /// it becomes a registered object only if it is among the results, as Core Data
    /// registers only what a fetch returns. Without stand-ins, a sort, a window or a
    /// predicate run in memory would register and load an object for every row of the
    /// entity, run `awakeFromFetch()` on rows that do not match, and the context would keep
    /// them all.
    func fetchCandidates<T>(_ request: NSFetchRequest<T>, tracksFaults: Bool, defersEveryRow: Bool) throws
        -> (matches: [NSManagedObject], entity: NSEntityDescription, faultsAtStart: Set<ObjectIdentifier>, holdsStandIns: Bool)
    {
        let entity = try request.resolveEntity(in: coordinator.managedObjectModel)
        if request.includesSubentities && !entity.subentities.isEmpty {
            return try fetchFamilyCandidates(request, entity: entity, tracksFaults: tracksFaults, defersEveryRow: defersEveryRow)
        }
        let store = try readStore(for: "fetch(_:)")
        let pending = request.includesPendingChanges
        if pending { processPendingChanges() }
        let requestFilter = request.filter  // read once: a copy of the predicate per row showed up in profiles
        let storeFilter = self.storeFilter(for: request, entity: entity)
        noteHeldRow(readAt: CommitClock.now)  // read before the rows: they are at least this new
        // The store sorts and cuts the window itself when it holds the whole answer: the
        // predicate (if any) is its filter, every sort key is an attribute, and no unsaved
        // change of the entity counts. Only the rows of the window then become objects.
        let storeOrder =
            (requestFilter == nil || storeFilter != nil)
            ? self.storeOrder(for: request, entity: entity).flatMap { pending && hasPendingChanges(of: entity) ? nil : $0 } : nil
        var rows =
            try storeOrder.map { order in
                try store.fetchRows(
                    entity: entity.index, filter: storeFilter, order: order, offset: request.fetchOffset, limit: request.fetchLimit)
            } ?? store.fetchRows(entity: entity.index, filter: storeFilter)
        let windowed = storeOrder != nil
        let number = storeNumber(for: store.identifier)
        let defersRows =
            defersEveryRow || (requestFilter != nil && storeFilter == nil)
            || (!windowed && (!request.sortRules.isEmpty || request.fetchLimit > 0 || request.fetchOffset > 0))
        var matches: [NSManagedObject] = []
        var unfiltered: [NSManagedObject] = []
        if !defersRows {
            registeredByID.reserveCapacity(registeredByID.count + rows.count)
            // Every row becomes one of these objects: room for all at once (grown by
            // doubling, the list was copied about log2(rows) times per fetch).
            if storeFilter != nil && requestFilter != nil {
                matches.reserveCapacity(rows.count)
            } else {
                unfiltered.reserveCapacity(rows.count)
            }
        }
        // Registered objects whose values are older than the row just read (another context
        // saved and this one has not merged): the predicate and the sort judge the row, as
        // the store's WHERE and ORDER BY do; otherwise the sort, and so a limit, would use
        // the older in-memory values while the predicate used the row.
        var newerRows: [ObjectIdentifier: StoreRow] = [:]
        let judgesByRows = requestFilter != nil || !request.sortRules.isEmpty
        var faultsAtStart: Set<ObjectIdentifier> = []
        // The stand-ins this fetch made, forgotten by the context when it is done: those not
        // adopted by then are adopted as results, or dropped.
        var madeStandIns: [ObjectKey] = []
        defer { for key in madeStandIns { standIns.removeValue(forKey: key) } }
        // Whether a stand-in (this fetch's, or an outer fetch's it shares) went into the
        // candidates, so the caller need not look for them in every fetch's results.
        var holdsStandIns = false
        // Rows move into the faults that hold them (`install(taking:)`): a row is read here
        // only while no object holds it.
        let storeMatched = storeFilter != nil && requestFilter != nil
        for index in rows.indices {
            let o: NSManagedObject
            if !defersRows {
                let registered = register(taking: &rows[index], entity: entity, storeNumber: number)
                // A fault (new, or registered and untouched) has no unsaved change and holds
                // the row: nothing below applies but the append. Taken here, the object's
                // reference moves into the list; on the general path below the compiler
                // retained it for the append and released its own: two atomic operations
                // per fetched row (measured: 4% of a filtered fetch of 25,000 rows).
                if registered.flags == [.fault] && !tracksFaults {
                    if storeMatched { matches.append(consume registered) } else { unfiltered.append(consume registered) }
                    continue
                }
                o = registered
            } else if let registered = registeredByID[ObjectKey(row: rows[index].id, storeNumber: number), entity] {
                if registered.flags.contains(.fault) { registered.holdRow(taking: &rows[index]) }
                o = registered
            } else {
                let key = ObjectKey(row: rows[index].id, storeNumber: number)
                // Not registered, so no unsaved change: the store's values are its values. A
                // fetch run while this one judges (from a computed property) shares its
                // stand-ins.
                let standIn: NSManagedObject
                if let outer = standIns[key] {
                    standIn = outer
                } else {
                    standIn = entity.managedObjectClass.init(entity: entity, insertInto: nil)
                    standIn.install(taking: &rows[index])
                    standIn.flags = [.fault]
                    standIn.setObjectKey(key)
                    standIn.moreFlags.insert(.rowStandIn)
                    standIns[key] = standIn
                    madeStandIns.append(key)
                }
                holdsStandIns = true
                if tracksFaults { faultsAtStart.insert(ObjectIdentifier(standIn)) }
                if storeFilter == nil || requestFilter == nil { unfiltered.append(standIn) } else { matches.append(standIn) }
                continue
            }
            if tracksFaults && o.flags.contains(.fault) { faultsAtStart.insert(ObjectIdentifier(o)) }
            if pending && o.flags.contains(.deleted) { continue }
            if judgesByRows, !o.flags.contains(.fault), !(pending && o.hasChangesUnchecked),
                let snapshot = o.snapshot, snapshot.version != rows[index].version
            {
                newerRows[ObjectIdentifier(o)] = rows[index]  // not a fault, so it took nothing from the row
            }
            if storeFilter == nil || requestFilter == nil {
                unfiltered.append(o)
            } else if !(pending && o.hasChangesUnchecked) {
                matches.append(o)  // the store matched its saved values, which are its values
            }
        }
        /// What the predicate and sort read for an object: a stand-in itself; an object
        /// registered here, or a detached copy of its saved values when those count.
        func subject(_ o: NSManagedObject) -> NSManagedObject {
            if let row = newerRows[ObjectIdentifier(o)] { return judgingCopy(of: o, values: row) }
            return pending || !o.hasChangesUnchecked ? o : judgingCopy(of: o, values: o.snapshot)
        }
        // The objects the predicate runs on in memory.
        var inMemory: [NSManagedObject] = []
        if requestFilter != nil {
            inMemory = unfiltered
            if storeFilter != nil && pending {
                // Changed objects: their saved values may no longer be their values. Only
                // those whose row still exists, as on the other paths, which start from the
                // store's rows: one deleted by another context and not merged yet must not
                // match a filtered fetch when it does not match an unfiltered one.
                inMemory = objectsInSaveOrder(
                    updatedSet.filter { o in
                        o.entity === entity && (o.rowID.map { (try? store.containsRow($0)) ?? true } ?? true)
                    })
            }
            if pending { inMemory += insertions.objects.filter { $0.entity === entity } }
        } else {
            matches = unfiltered
            // Every pending insert counts, including those given permanent IDs early
            // (obtainPermanentIDs): they are not in the store yet either.
            if pending { matches += insertions.objects.filter { $0.entity === entity } }
        }
        for case let .key(k) in request.sortRules {
            FetchSortRule.checkKey(k.key, of: entity)  // not only when two objects meet
        }
        // Objects are read — by the predicate in memory, by the sort — with this context as
        // the judging one. A fetch that reads none (the store filtered, nothing to sort)
        // does not set it: a task-local value pushed and popped per fetch was about 2% of 100
        // small indexed fetches, and its first use in a process 40 µs (measured).
        if !inMemory.isEmpty || (!request.sortRules.isEmpty && !windowed) {
            try Self.$judging.withValue(self) {
                if let filter = requestFilter {
                    for o in inMemory where try filter.evaluate(subject(o)) { matches.append(o) }
                }
                if !request.sortRules.isEmpty && !windowed {
                    let rules = request.sortRules
                    func ordered(_ a: NSManagedObject, _ b: NSManagedObject) -> Bool {
                        for rule in rules {
                            switch rule.compare(a, b) {
                            case .orderedAscending: return true
                            case .orderedDescending: return false
                            case .orderedSame: continue
                            }
                        }
                        return false
                    }
                    if newerRows.isEmpty && (pending || !matches.contains(where: \.hasChangesUnchecked)) {
                        matches.sort(by: ordered)
                    } else {
                        // Without pending changes the store's order counts, by saved values, as
                        // the predicate above judged them (not by unsaved values, or a limit
                        // would cut by them); objects older than their row sort by the row.
                        let keys = matches.map(subject)
                        let order = keys.indices.sorted { ordered(keys[$0], keys[$1]) }
                        matches = order.map { matches[$0] }
                    }
                }
            }
        }
        if !windowed {
            if request.fetchOffset > 0 { matches = Array(matches.dropFirst(request.fetchOffset)) }
            if request.fetchLimit > 0 && matches.count > request.fetchLimit { matches = Array(matches.prefix(request.fetchLimit)) }
        }
        return (matches, entity, faultsAtStart, holdsStandIns)
    }

    /// The request's sort order as store sort keys, when every rule sorts by an attribute of
    /// `entity` (a key path or a key naming one); nil otherwise, and when there is neither an
    /// order nor a window to apply.
    func storeOrder<T>(for request: NSFetchRequest<T>, entity: NSEntityDescription) -> [StoreSortKey]? {
        if request.sortRules.isEmpty && request.fetchLimit <= 0 && request.fetchOffset <= 0 { return nil }
        var keys: [StoreSortKey] = []
        for rule in request.sortRules {
            switch rule {
            case let .key(k):
                guard !k.key.contains("."), let i = entity.propertyIndex(named: k.key), entity.properties[i] is NSAttributeDescription
                else { return nil }
                keys.append(StoreSortKey(property: i, ascending: k.ascending, comparison: k.comparison))
            case let .descriptor(d):
                guard let i = entity.attributeIndex(forKeyPath: d.keyPath) else { return nil }
                keys.append(StoreSortKey(property: i, ascending: d.ascending))
            case .comparator:
                return nil
            }
        }
        return keys
    }

    /// The context whose fetch is judging rows on this thread: the one that stand-ins and
    /// judging copies resolve relationships to (see ``NSManagedObject/MoreFlags/rowStandIn``).
    @TaskLocal static var judging: NSManagedObjectContext?

    /// A detached copy of `o` holding `values` (a row, or nothing): what a predicate or sort
    /// reads to judge an object by its saved values. Its relationships resolve to this
    /// context's objects when read, while this context fetches.
    private func judgingCopy(of o: NSManagedObject, values row: StoreRow?) -> NSManagedObject {
        let copy = o.entity.managedObjectClass.init(entity: o.entity, insertInto: nil)
        copy.objectID = o.objectID
        copy.moreFlags.insert(.rowStandIn)
        if let row { copy.slots = copy.decode(row) }
        return copy
    }
}

extension NSManagedObject {
    /// `hasChanges` without the queue check (callers are on the queue already).
    var hasChangesUnchecked: Bool { !flags.isDisjoint(with: [.inserted, .deleted, .updated]) }
}
