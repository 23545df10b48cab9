import Foundation

// `NSFetchRequest.relationshipKeyPathsForPrefetching`: after a fetch, the objects its key
// paths reach are loaded with one store read per relationship step, not one per object
// when each is first touched.
//
// The key paths are merged into a tree (`author` and `author.books` share their first
// step), and the tree is walked one step at a time: the targets of a step are the sources
// of the next. A step reads the store once, for the rows of the targets that hold none yet,
// and registers them as faults holding their rows; firing such a fault reads nothing more.
extension NSManagedObjectContext {
    /// Loads the targets of every key path of `keyPaths` from `objects`, which a fetch of
    /// `entity` returned: one store read per relationship step of the merged key paths (none
    /// for a step whose targets all hold their rows already). To-many relationships of
    /// `objects` that have values are resolved into objects. A fetched fault that holds no
    /// row (past `fetchBatchSize`) has no targets to load: its values are read when it is
    /// touched, as they would be without prefetching. `nil` or empty: nothing.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` naming the key path and the entity when a
    ///   component names no relationship (checked before anything is read); the store's
    ///   error when a read fails.
    func prefetchRelationships(_ keyPaths: [String]?, of objects: [NSManagedObject], entity: NSEntityDescription) throws {
        guard let keyPaths, !keyPaths.isEmpty else { return }
        let tree = try PrefetchStep.tree(keyPaths, from: entity)
        if objects.isEmpty { return }
        let store = try readStore(for: "prefetching relationships")
        let number = storeNumber(for: store.identifier)
        try prefetch(tree, from: objects, store: store, storeNumber: number)
    }

    private func prefetch(
        _ steps: [PrefetchStep], from sources: [NSManagedObject], store: any PersistentStore, storeNumber number: UInt32
    ) throws {
        if steps.isEmpty || sources.isEmpty { return }
        for step in steps {
            let targets = try loadTargets(of: step, from: sources, store: store, storeNumber: number)
            if step.relationship.isToMany {
                // Its targets are registered: resolving reads no store.
                for o in sources where o.holdsUnresolvedToMany(at: step.relationship.index) {
                    _ = o.resolvedToMany(at: step.relationship.index)
                }
            }
            try prefetch(step.next, from: targets, store: store, storeNumber: number)
        }
    }

    /// The objects `step`'s relationship reaches from `sources`, each once, every one of
    /// them holding its row (or having values) on return, except those whose row the store
    /// no longer has.
    private func loadTargets(
        of step: PrefetchStep, from sources: [NSManagedObject], store: any PersistentStore, storeNumber number: UInt32
    ) throws -> [NSManagedObject] {
        guard let destination = step.relationship.destinationEntity else { return [] }
        let i = step.relationship.index
        var targets: [NSManagedObject] = []
        var seen: Set<ObjectIdentifier> = []
        var missing: [StoreRowID] = []
        var missingSeen: Set<StoreRowID> = []
        func add(_ o: NSManagedObject) {
            guard seen.insert(ObjectIdentifier(o)).inserted else { return }
            targets.append(o)
            if o.isFaultWithoutRow, let row = o.rowID, missingSeen.insert(row).inserted { missing.append(row) }
        }
        for source in sources {
            switch source.prefetchTargets(at: i) {
            case let .rows(rows):
                for row in rows {
                    if let o = registeredByID[ObjectKey(row: row, storeNumber: number), destination] {
                        add(o)
                    } else if missingSeen.insert(row).inserted {
                        missing.append(row)
                    }
                }
            case let .objects(objects):
                for o in objects { add(o) }
            }
        }
        if missing.isEmpty { return targets }
        noteHeldRow(readAt: CommitClock.now)  // read before the rows: they are at least this new
        var rows = try store.fetchRows(missing.sorted())
        registeredByID.reserveCapacity(registeredByID.count + rows.count)
        for index in rows.indices {
            let o = register(taking: &rows[index], entity: destination, storeNumber: number)
            if seen.insert(ObjectIdentifier(o)).inserted { targets.append(o) }
        }
        return targets
    }
}

/// One relationship step of the merged prefetch key paths, and the steps that continue from
/// its targets.
struct PrefetchStep {
    let relationship: NSRelationshipDescription
    var next: [PrefetchStep] = []

    /// The steps of `keyPaths` from `entity`, merged so that a prefix shared by several key
    /// paths is one step.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` naming the key path and the entity whose
    ///   relationship a component does not name.
    static func tree(_ keyPaths: [String], from entity: NSEntityDescription) throws -> [PrefetchStep] {
        var roots: [PrefetchStep] = []
        for keyPath in keyPaths {
            try add(keyPath.split(separator: ".", omittingEmptySubsequences: false)[...], of: keyPath, from: entity, to: &roots)
        }
        return roots
    }

    private static func add(
        _ components: ArraySlice<Substring>, of keyPath: String, from entity: NSEntityDescription, to steps: inout [PrefetchStep]
    ) throws {
        guard let first = components.first else { return }
        let name = String(first)
        guard let i = entity.propertyIndex(named: name), let r = entity.properties[i] as? NSRelationshipDescription,
            let destination = r.destinationEntity
        else {
            let what = entity.propertyIndex(named: name) == nil ? "has no property" : "has an attribute, not a relationship,"
            let names = entity.properties.compactMap { ($0 as? NSRelationshipDescription)?.name }
            throw CoreDataError(
                .coreData, key: keyPath,
                "relationshipKeyPathsForPrefetching names '\(keyPath)', but entity '\(entity.name)' \(what) named "
                    + "'\(name)'; each component must name a relationship (those of '\(entity.name)': "
                    + "\(names.isEmpty ? "none" : names.joined(separator: ", "))).")
        }
        let position: Int
        if let existing = steps.firstIndex(where: { $0.relationship === r }) {
            position = existing
        } else {
            steps.append(PrefetchStep(relationship: r))
            position = steps.count - 1
        }
        try add(components.dropFirst(), of: keyPath, from: destination, to: &steps[position].next)
    }
}

/// Where the targets of one relationship of one object are: stored row IDs, or objects.
enum PrefetchTargets {
    case rows([StoreRowID])
    case objects([NSManagedObject])
}

extension NSManagedObject {
    /// Whether this object is a fault that holds no row, so that firing it reads the store.
    var isFaultWithoutRow: Bool {
        flags.contains(.fault) && !flags.contains(.invalidated) && (valueStorage != .snapshot || storedSnapshot == nil)
    }

    /// The targets of relationship slot `i`, read where the values live, without firing a
    /// fault or making objects of stored row IDs. None for a fault that holds no row.
    func prefetchTargets(at i: Int) -> PrefetchTargets {
        if flags.contains(.invalidated) { return .rows([]) }
        if valueStorage == .snapshot, let row = storedSnapshot {
            switch row.value(at: i) {
            case let .reference(id): return .rows([id])
            case let .references(ids): return .rows(ids)
            default: return .rows([])
            }
        }
        if flags.contains(.fault) { return .rows([]) }
        switch slots[i] {
        case let .unresolvedToOne(row): return .rows(row.map { [$0] } ?? [])
        case let .unresolvedToMany(rows): return .rows(rows)
        case let .toOne(o): return .objects(o.map { [$0] } ?? [])
        case let .toMany(set): return .objects(Array(set))
        case .value: return .rows([])
        }
    }

    /// Whether to-many slot `i` holds row IDs not yet made into objects, in an object that
    /// is not a fault (a fault's slots are made when it fires).
    func holdsUnresolvedToMany(at i: Int) -> Bool {
        guard flags.isDisjoint(with: [.fault, .invalidated]) else { return false }
        if valueStorage == .snapshot { return true }  // `decode(_:)` makes every to-many unresolved, or empty
        if case .unresolvedToMany = storedSlots[i] { return true }
        return false
    }
}
