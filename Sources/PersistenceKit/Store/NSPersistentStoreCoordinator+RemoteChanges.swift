import Foundation

/// Rows that another process (or another store object on the same database) committed,
/// as a store that can learn of them reports them.
public struct StoreRemoteChanges: Sendable, Hashable {
    /// Rows inserted.
    public var inserted: [StoreRowID]
    /// Rows updated (including rows whose relationship ends changed).
    public var updated: [StoreRowID]
    /// Rows deleted.
    public var deleted: [StoreRowID]

    /// Creates a change report.
    public init(inserted: [StoreRowID] = [], updated: [StoreRowID] = [], deleted: [StoreRowID] = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// A store that learns of commits made elsewhere (another process writing the same
/// database) and reports them, so that contexts of every coordinator holding the store
/// merge them as they merge a save of their own coordinator.
///
/// A coordinator that adds such a store registers a handler with
/// ``addRemoteChangeHandler(_:)``. The store calls each handler with every remote commit,
/// from any thread, once the commit is visible to its reads, and drops a handler that
/// returns `false` (its coordinator is gone).
public protocol RemoteChangeReporting: PersistentStore {
    /// Registers `handler` for the commits the store learns of from now on.
    func addRemoteChangeHandler(_ handler: @escaping @Sendable (StoreRemoteChanges) -> Bool)
}

extension NSPersistentStoreCoordinator {
    /// Registers this coordinator (weakly) for the remote changes of `store`, when it
    /// reports them.
    func observeRemoteChanges(of store: any PersistentStore) {
        guard let reporting = store as? any RemoteChangeReporting else { return }
        let identifier = store.identifier
        reporting.addRemoteChangeHandler { [weak self] changes in
            guard let self else { return false }
            guard let store = self.persistentStore(withIdentifier: identifier) else { return true }
            self.mergeRemoteChanges(changes, from: store)
            return true
        }
    }

    /// Hands rows that another process committed to `store` to every context of this
    /// coordinator that merges automatically (``NSManagedObjectContext/automaticallyMergesChangesFromParent``),
    /// each on its own queue, through the same merge as a save of this coordinator; then
    /// posts ``Foundation/Notification/Name/NSPersistentStoreRemoteChange``.
    ///
    /// Stores that adopt ``RemoteChangeReporting`` have this called for them; call it
    /// yourself for a store that learns of changes another way. Row IDs of entities the
    /// model does not have are ignored.
    public func mergeRemoteChanges(_ changes: StoreRemoteChanges, from store: any PersistentStore) {
        guard !changes.isEmpty else { return }
        // Rows changed under this process: contexts must check the versions of rows they
        // hold before trusting them (see `CommitClock`).
        let clock = CommitClock.tick()
        let model = managedObjectModel
        func ids(_ rows: [StoreRowID]) -> [NSManagedObjectID] {
            rows.compactMap { row in
                model.entity(at: row.entity).map { NSManagedObjectID(entity: $0, row: row, store: store.identifier) }
            }
        }
        var saved = SavedChanges(inserted: ids(changes.inserted), updated: ids(changes.updated), deleted: ids(changes.deleted))
        saved.clock = clock
        broadcast(saved, from: nil)
        var info: [AnyHashable: Any] = [NSStoreUUIDKey: store.identifier]
        if let url = store.url { info[NSPersistentStoreURLKey] = url }
        NotificationCenter.default.post(name: .NSPersistentStoreRemoteChange, object: self, userInfo: info)
    }
}
