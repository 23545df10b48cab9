import Foundation

/// The store a child context reads and saves through: its parent context's current objects.
///
/// Reads show the parent's rows as its store holds them, overlaid with the parent's unsaved
/// inserts, updates and deletions; a commit applies the child's transaction to the parent's
/// objects, which then hold it as unsaved changes. Every call runs on the parent's queue
/// (`performAndWait`), so the parent is read and changed as by its own code.
///
/// # Rows of objects the parent has not saved
/// An object the root has not saved yet has a temporary ID in the parent. Here it is the
/// row of its entity whose primary key is the negated number of that temporary key: the
/// child needs a row, and the mapping needs no table to be the same for every child. Keys of
/// stores are positive, so such rows never name a stored row.
///
/// # Versions
/// A row's version here is the version the child read it at, for optimistic locking against
/// the parent. It starts as the parent's stored version and moves past every version served
/// before whenever the parent's values of the row differ from those last served (compared by
/// a hash of the values): a child's save conflicts exactly when the parent's values of a row
/// it changed or deleted are no longer those it read. Versions only grow, as a store's do.
final class ParentContextStore: PersistentStore {
    /// What the child read of the parent, kept per child. Only touched on the parent's queue,
    /// inside `state.withLock`.
    final class ReadState {
        /// The version and the hash of the values last served, by row.
        var served: [StoreRowID: (version: Int64, hash: Int)] = [:]
        /// The parent's objects served under a temporary number (see the type's notes), so
        /// that their rows stay readable after the parent gave them permanent IDs.
        var unsaved: [Int64: NSManagedObject] = [:]
    }

    /// The parent context (held strongly: a child keeps its parent, as in Core Data).
    let parent: NSManagedObjectContext
    /// The coordinator at the root of the chain.
    let rootCoordinator: NSPersistentStoreCoordinator
    /// The child context, for telling it apart from the parent's other children.
    let child = Lock(WeakContext(context: nil))
    private let state = Lock(ReadState())

    init(parent: NSManagedObjectContext, rootCoordinator: NSPersistentStoreCoordinator) {
        self.parent = parent
        self.rootCoordinator = rootCoordinator
    }

    /// The store at the root of the chain (the store object IDs name).
    var rootStore: any PersistentStore {
        get throws { try rootCoordinator.primaryStore(for: "using a child context") }
    }

    /// The root store's identifier, so that the child's object IDs are the parent's.
    var identifier: String { (try? rootStore.identifier) ?? "PersistenceKit.parentContext.unloaded" }
    /// `"ParentContext"`.
    var type: String { "ParentContext" }
    /// The root store's URL.
    var url: URL? { try? rootStore.url }
    /// The root store's metadata.
    var metadata: [String: String] { (try? rootStore.metadata) ?? [:] }

    // MARK: Keys

    /// Temporary numbers, as rows: the inserts of a child's save stay temporary in the parent.
    func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        let first = ObjectKey.reserveTemporaryNumbers(count)
        return -(first + Int64(count) - 1)...(-first)
    }

    // MARK: Reads

    func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow] {
        try onParent { view in
            let rows = try view.rows(of: entity)
            guard let filter else { return rows }
            let prepared = filter.predicate.map { PreparedStorePredicate($0, entity: entity, model: rootCoordinator.managedObjectModel) }
            return try rows.filter { try filter.matches($0) && (prepared?.evaluate($0, view) ?? true) }
        }
    }

    func countRows(entity: Int32, filter: StoreFilter?) throws -> Int {
        try fetchRows(entity: entity, filter: filter).count
    }

    func fetchRow(_ id: StoreRowID) throws -> StoreRow? {
        try onParent { try $0.row(id) }
    }

    func fetchRows(_ ids: [StoreRowID]) throws -> [StoreRow] {
        try onParent { view in try ids.compactMap { try view.row($0) } }
    }

    // MARK: Commit

    func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult {
        let origin = child.withLock { $0.context }
        let result: StoreCommitResult = try onParent { view in
            let conflicts = try view.conflicts(of: transaction)
            if !conflicts.isEmpty { return .conflicts(conflicts) }
            return .committed(try view.apply(transaction))
        }
        if case .committed = result {
            var changes = SavedChanges()
            let model = rootCoordinator.managedObjectModel
            let store = identifier
            func id(_ row: StoreRowID) -> NSManagedObjectID? {
                model.entity(at: row.entity).map { NSManagedObjectID(entity: $0, row: row, store: store) }
            }
            changes.inserted = transaction.inserts.compactMap { id($0.id) }
            changes.updated = transaction.updates.compactMap { id($0.id) }
            changes.deleted = transaction.deletes.compactMap { id($0.id) }
            parent.forwardToMergingChildren(changes, except: origin)
        }
        return result
    }

    /// Runs `body` on the parent's queue, with the parent's pending changes processed (its
    /// delete rules applied, as its own fetch would).
    private func onParent<T>(_ body: (ParentView) throws -> T) throws -> T {
        try parent.performAndWait {
            parent.processPendingChangesIfNeeded()
            return try state.withLock { s in try body(ParentView(store: self, state: s)) }
        }
    }
}

/// The parent's current objects as rows, for one call of a ``ParentContextStore`` (on the
/// parent's queue).
struct ParentView: StoreRowReader {
    let store: ParentContextStore
    let state: ParentContextStore.ReadState
    var parent: NSManagedObjectContext { store.parent }
    var model: NSManagedObjectModel { store.rootCoordinator.managedObjectModel }

    // MARK: Rows

    /// The row of a parent object: its permanent row, or its temporary number negated.
    func rowID(of o: NSManagedObject) -> StoreRowID {
        if let row = o.rowID { return row }
        let number = o.objectKey.number
        state.unsaved[number] = o
        return StoreRowID(entity: o.entity.index, primaryKey: -number)
    }

    /// The parent's current values of `o`, as a store row holds them.
    func values(of o: NSManagedObject) -> [StoreValue] {
        let kinds = o.entity.slotKinds
        return kinds.indices.map { i in kinds[i].isTransient ? .null : o.encodedValue(at: i, rowFor: { rowID(of: $0) }) }
    }

    /// The row `id` with `values`, at the version the type's notes describe.
    func served(_ id: StoreRowID, base: Int64, values: [StoreValue]) -> StoreRow {
        var hasher = Hasher()
        hasher.combine(values)
        let hash = hasher.finalize()
        let version: Int64
        if let last = state.served[id] {
            version = last.hash == hash ? last.version : max(last.version + 1, base)
        } else {
            version = max(base, 1)
        }
        state.served[id] = (version, hash)
        return StoreRow(id: id, version: version, values: values)
    }

    /// Whether the parent holds unsaved changes of `o` (inserted, updated or deleted).
    func isChanged(_ o: NSManagedObject) -> Bool {
        o.flags.contains(.inserted) || parent.updatedSet.contains(o) || parent.deletedSet.contains(o)
    }

    /// The parent's object for `id` when it is registered there, or one it has not saved.
    func registeredObject(_ id: StoreRowID) -> NSManagedObject? {
        if id.primaryKey < 0 {
            guard let o = state.unsaved[-id.primaryKey], o.isOwned(by: parent) else { return nil }
            return o
        }
        guard let entity = model.entity(at: id.entity) else { return nil }
        let key = ObjectKey(row: id, storeNumber: parent.storeNumber(for: store.identifier))
        return parent.registeredByID[key, entity]
    }

    /// The parent's object for `id`, made a fault when it is not registered there; nil for
    /// an unsaved row the parent no longer holds.
    func object(_ id: StoreRowID) -> NSManagedObject? {
        if let o = registeredObject(id) { return o }
        guard id.primaryKey > 0, let entity = model.entity(at: id.entity) else { return nil }
        return parent.object(forRow: id, entity: entity)
    }

    /// The parent's store (the root store, or the grandparent's view of it).
    func parentStore() throws -> any PersistentStore {
        try parent.coordinator.primaryStore(for: "reading a parent context")
    }

    /// The row `id` as the parent has it now, or nil when the parent has no such object (or
    /// has deleted it).
    func row(_ id: StoreRowID) throws -> StoreRow? {
        if let o = registeredObject(id) {
            if o.flags.contains(.deleted) || o.flags.contains(.invalidated) { return nil }
            if id.primaryKey < 0 || isChanged(o) {
                return served(id, base: o.snapshot?.version ?? 1, values: values(of: o))
            }
        }
        if id.primaryKey < 0 { return nil }
        guard let row = try parentStore().fetchRow(id) else { return nil }
        return served(id, base: row.version, values: row.values)
    }

    /// Every row of `entity` as the parent has it now, in primary-key order.
    func rows(of entity: Int32) throws -> [StoreRow] {
        var changed: [StoreRowID: NSManagedObject] = [:]
        var gone = Set<StoreRowID>()
        for o in parent.updatedSet where o.entity.index == entity { if let id = o.rowID { changed[id] = o } }
        for o in parent.deletedSet where o.entity.index == entity { if let id = o.rowID { gone.insert(id) } }
        var rows: [StoreRow] = []
        for o in parent.insertions.objects where o.entity.index == entity {
            let id = rowID(of: o)
            if gone.contains(id) { continue }
            rows.append(served(id, base: 1, values: values(of: o)))
            gone.insert(id)  // an insert with a permanent ID is not in the store yet; never twice
        }
        for row in try parentStore().fetchRows(entity: entity, filter: nil) where !gone.contains(row.id) {
            if let o = changed[row.id] {
                rows.append(served(row.id, base: o.snapshot?.version ?? row.version, values: values(of: o)))
            } else {
                rows.append(served(row.id, base: row.version, values: row.values))
            }
        }
        return rows.sorted { $0.id.primaryKey < $1.id.primaryKey }
    }

    // MARK: StoreRowReader (for predicates that follow relationships)

    func value(_ column: Int, of row: StoreRow, entity: Int32) throws -> StoreValue { row.value(at: column) }
    func targets(_ column: Int, of row: StoreRow, entity: Int32) throws -> [StoreRowID] {
        if case let .references(ids) = row.value(at: column) { return ids }
        return []
    }
}
