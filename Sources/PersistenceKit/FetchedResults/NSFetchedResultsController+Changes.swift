import Foundation

// Following the context: each objects-did-change notification becomes one report to the
// delegate (see `FetchedResultsDiff` for how changes are classified).
extension NSFetchedResultsController: FetchedResultsChangeHandling {
    func contextObjectsDidChange(_ note: Notification) {
        guard results != nil, let entity = fetchedEntity else { return }
        let info = note.userInfo ?? [:]
        if info[NSInvalidatedAllObjectsKey] != nil {
            // A reset: every object is gone; the results are fetched again.
            refetchAndReport(changed: [])
            return
        }
        func objects(_ key: String) -> [NSManagedObject] {
            // Objects of sub-entities count when the request includes them.
            let family = fetchRequest.includesSubentities
            return (info[key] as? Set<NSManagedObject> ?? []).filter { $0.entity === entity || (family && $0.entity.isKindOf(entity: entity)) }
        }
        let removed = Set((objects(NSDeletedObjectsKey) + objects(NSInvalidatedObjectsKey)).map(ObjectIdentifier.init))
        var candidates: [NSManagedObject] = []
        var candidateIDs = Set<ObjectIdentifier>()
        for o in objects(NSInsertedObjectsKey) + objects(NSUpdatedObjectsKey) + objects(NSRefreshedObjectsKey) {
            let id = ObjectIdentifier(o)
            if !removed.contains(id) && candidateIDs.insert(id).inserted { candidates.append(o) }
        }
        if removed.isEmpty && candidates.isEmpty { return }
        if fetchRequest.fetchLimit > 0 || fetchRequest.fetchOffset > 0 {
            refetchAndReport(changed: candidateIDs)
            return
        }
        report(makeSections(placed(candidates, removing: removed), recomputing: candidateIDs), changed: candidateIDs,
            reorderable: candidateIDs)
    }

    func contextDidSave() {
        // A save gives inserted objects permanent IDs without an objects-did-change.
        guard let results, streams.withLock({ !$0.isEmpty }), FetchedResultsSnapshot(of: results) != lastSnapshot else { return }
        publishSnapshot()
    }

    /// The results in order after `candidates` (inserted or changed objects of the entity)
    /// are tested against the predicate and placed by the sort rules, and `removed` objects
    /// taken out. The other objects keep their order.
    private func placed(_ candidates: [NSManagedObject], removing removed: Set<ObjectIdentifier>) -> [NSManagedObject] {
        let old = (results ?? []).flatMap(\.members)
        var oldIndex: [ObjectIdentifier: Int] = [:]
        for (i, o) in old.enumerated() { oldIndex[ObjectIdentifier(o)] = i }
        let moving = Set(candidates.map(ObjectIdentifier.init))
        // Each entry's rank breaks ties between equal sort values: objects already in the
        // results keep their order, new ones follow them.
        var entries: [(object: NSManagedObject, rank: Int)] = []
        for (i, o) in old.enumerated() where !removed.contains(ObjectIdentifier(o)) && !moving.contains(ObjectIdentifier(o)) {
            entries.append((o, i))
        }
        let matching = candidates.filter(matches)
        let newcomers = matching.filter { oldIndex[ObjectIdentifier($0)] == nil }.sorted {
            switch compare($0, $1) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: $0.objectID.uriRepresentation().absoluteString < $1.objectID.uriRepresentation().absoluteString
            }
        }
        var nextRank = old.count
        var ranked: [(object: NSManagedObject, rank: Int)] = matching.compactMap { o in
            oldIndex[ObjectIdentifier(o)].map { (o, $0) }
        }
        for o in newcomers {
            ranked.append((o, nextRank))
            nextRank += 1
        }
        for entry in ranked {
            var low = 0, high = entries.count
            while low < high {
                let mid = (low + high) / 2
                if precedes(entry, entries[mid]) { high = mid } else { low = mid + 1 }
            }
            entries.insert(entry, at: low)
        }
        return entries.map(\.object)
    }

    /// Whether `o` belongs in the results: still in this context, not deleted, and
    /// accepted by the request's predicate (a predicate that throws rejects it).
    private func matches(_ o: NSManagedObject) -> Bool {
        guard o.isOwned(by: managedObjectContext), !o.flags.contains(.deleted), !o.flags.contains(.invalidated) else {
            return false
        }
        guard let filter = fetchRequest.filter else { return true }
        return (try? filter.evaluate(o)) ?? false
    }

    /// The order of two objects by the request's sort rules.
    private func compare(_ a: NSManagedObject, _ b: NSManagedObject) -> ComparisonResult {
        for rule in fetchRequest.sortRules {
            let r = rule.compare(a, b)
            if r != .orderedSame { return r }
        }
        return .orderedSame
    }

    private func precedes(_ a: (object: NSManagedObject, rank: Int), _ b: (object: NSManagedObject, rank: Int)) -> Bool {
        switch compare(a.object, b.object) {
        case .orderedAscending: true
        case .orderedDescending: false
        case .orderedSame: a.rank < b.rank
        }
    }

    /// Fetches the results again and reports the difference; `changed` are the objects the
    /// notification listed as inserted or changed. A fetch error keeps the old results.
    private func refetchAndReport(changed: Set<ObjectIdentifier>) {
        guard let old = results, let objects = try? fetchManagedObjects() else { return }
        let sections = makeSections(objects, recomputing: changed)
        // Objects not listed as changed normally keep their order; when they do not (a sort
        // on values the notification did not list), any survivor may be reported moved.
        let newIDs = Set(objects.map(ObjectIdentifier.init))
        let oldIDs = Set(old.flatMap { $0.members.map(ObjectIdentifier.init) })
        let survivors = newIDs.intersection(oldIDs)
        let fixed = survivors.subtracting(changed)
        let oldFixed = old.flatMap(\.members).map(ObjectIdentifier.init).filter(fixed.contains)
        let newFixed = objects.map(ObjectIdentifier.init).filter(fixed.contains)
        let reorderable = oldFixed == newFixed ? changed.intersection(survivors) : survivors
        report(sections, changed: changed, reorderable: reorderable)
    }

    /// Installs `sections` as the results and reports the difference to the delegate and
    /// the snapshot streams.
    private func report(_ sections: [FetchedResultsSection], changed: Set<ObjectIdentifier>, reorderable: Set<ObjectIdentifier>) {
        let diff = FetchedResultsDiff(old: results ?? [], new: sections, changed: changed, reorderable: reorderable)
        guard !diff.isEmpty else {
            setResults(sections)
            return
        }
        let delegate = self.delegate
        delegate?.controllerWillChangeContent(self)
        setResults(sections)
        for change in diff.sectionChanges {
            delegate?.controller(self, didChange: change.section, atSectionIndex: change.index, for: change.type)
        }
        for change in diff.objectChanges {
            delegate?.controller(self, didChange: change.object, at: change.old, for: change.type, newIndexPath: change.new)
        }
        delegate?.controllerDidChangeContent(self)
        publishSnapshot()
    }
}
