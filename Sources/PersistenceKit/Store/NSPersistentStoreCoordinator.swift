import Foundation
import Synchronization

/// Connects contexts to stores: owns the model, the loaded stores, and the commit lock that
/// serializes saves from all of its contexts.
///
/// All entities live in the first store added; further stores are kept but not routed to
/// (configurations are not supported).
///
/// # Thread safety
/// Every method may be called from any thread. Commits are serialized by one lock, so two
/// contexts never write at the same time ("serialized writes"); reads go to the store, which
/// never exposes part of a commit.
public final class NSPersistentStoreCoordinator: Sendable {
    /// Creates a store of a registered type.
    public typealias StoreFactory =
        @Sendable (_ url: URL?, _ options: [String: String], _ model: NSManagedObjectModel) throws -> any PersistentStore

    /// The model of every store and context of this coordinator (sealed by the coordinator).
    public let managedObjectModel: NSManagedObjectModel
    /// The result of validating the model, reported when a store is added.
    private let modelError: ModelError?
    private let stores = Lock<[any PersistentStore]>([])
    /// The identifiers of the stores added with ``NSReadOnlyPersistentStoreOption``.
    private let readOnlyStores = Lock<Set<String>>([])
    /// Whether ``readOnlyStores`` ever held one: until then the check each save makes (three
    /// times) is one atomic load, not a lock and a hash of the store's identifier.
    private let everAddedReadOnly = Atomic<Bool>(false)
    /// Serializes commits: one writer at a time across all contexts of this coordinator. It
    /// guards the number of commits attempted (kept for nothing else): a lock around a
    /// zero-sized value gave that value the object's own address, and Thread Sanitizer
    /// reported each commit's access to it as racing with other threads reading the lock
    /// object's header (an intermittent failure of the sanitizer run, never a real race).
    private let commitLock = Lock<UInt64>(0)
    /// Contexts that merge this coordinator's saves automatically.
    private let mergeObservers = Lock<[WeakContext]>([])
    /// The coordinators of this process that loaded a store with
    /// ``NSPersistentStoreRemoteChangeNotificationPostOptionKey``, by store identifier: each
    /// commit to the store, through any coordinator, posts
    /// ``Foundation/Notification/Name/NSPersistentStoreRemoteChange`` from each of them (a
    /// file store is shared by every coordinator of the process that opens it).
    private static let remoteChangeObservers = Lock<[String: [WeakCoordinator]]>([:])

    private static let factories = Lock<[String: StoreFactory]>([
        NSInMemoryStoreType: { url, options, model in
            InMemoryStore(model: model, url: url, tracksHistory: storeOptionIsOn(options[NSPersistentHistoryTrackingKey]))
        },
        NSFileStoreType: { url, options, model in
            guard let url else {
                throw CoreDataError(.persistentStoreOpen, "a file store needs a URL; set the description's url.")
            }
            // Only a file URL names a file: taking the path of any URL, https://host/a.store
            // would write /a.store.
            guard url.isFileURL else {
                throw CoreDataError(
                    .persistentStoreOpen,
                    "a file store needs a file URL, not \(url.absoluteString); use URL(fileURLWithPath:).")
            }
            let durability: FileStore.Durability
            if let text = options[FileStore.durabilityOptionKey] {
                guard let d = FileStore.Durability(rawValue: text) else {
                    throw CoreDataError(
                        .persistentStoreOpen,
                        "unknown value '\(text)' for option \(FileStore.durabilityOptionKey); use \"full\" or \"normal\".")
                }
                durability = d
            } else {
                durability = .full
            }
            // `/dev/null` is Core Data's idiom for a throwaway store (Xcode's template uses it
            // for previews and tests): an empty store whose saves go nowhere. An in-memory
            // store is exactly that. Opened as a file, the empty "file" is reported as a
            // truncated header.
            let tracksHistory = storeOptionIsOn(options[NSPersistentHistoryTrackingKey])
            if url.standardizedFileURL.path == "/dev/null" { return InMemoryStore(model: model, url: url, tracksHistory: tracksHistory) }
            // Its FileStoreError, naming the file, offset and cause, becomes the `underlying`
            // of the CoreDataError `openStore` throws.
            var fileOptions = FileStore.Options(durability: durability, tracksHistory: tracksHistory)
            fileOptions.readOnly = opensReadOnly(options)
            if let text = options[NSPersistentStoreTimeoutOption] {
                guard let seconds = TimeInterval(text), seconds >= 0 else {
                    throw CoreDataError(
                        .persistentStoreOpen,
                        "option \(NSPersistentStoreTimeoutOption) is '\(text)'; give a number of seconds, such as \"5\".")
                }
                fileOptions.lockTimeout = seconds
            }
            return try FileStore.open(at: url, model: model, options: fileOptions)
        },
    ])

    /// Creates a coordinator for `model`, which becomes immutable. An invalid model is
    /// reported when a store is added.
    public init(managedObjectModel model: NSManagedObjectModel) {
        model.seal()
        self.managedObjectModel = model
        self.modelError = model.sealError
    }

    /// Registers a store type so that descriptions and ``addPersistentStore(type:at:options:)``
    /// can name it.
    public static func registerStoreType(_ type: String, factory: @escaping StoreFactory) {
        factories.withLock { $0[type] = factory }
    }

    /// Registers a store type whose stores migrate in place: as ``registerStoreType(_:factory:)``,
    /// and when `factory` throws ``CoreDataError/storeModelMismatch(store:storeHash:modelHash:underlying:)``
    /// and the options allow a migration, the coordinator calls `migrator` (see
    /// ``StoreMigrator``) and then `factory` again.
    public static func registerStoreType(_ type: String, factory: @escaping StoreFactory, migrator: @escaping StoreMigrator) {
        factories.withLock { $0[type] = factory }
        migrators.withLock { $0[type] = migrator }
    }

    /// The migrators of store types registered with one, by type.
    private static let migrators = Lock<[String: StoreMigrator]>([:])

    /// The stores added so far.
    public var persistentStores: [any PersistentStore] { stores.withLock { $0 } }

    /// Creates and adds a store of a registered type.
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreInvalidType` for an unknown type,
    ///   `.persistentStoreAlreadyAdded` when a store with this URL is already added,
    ///   `.coreData` with the ``ModelError`` when the model is invalid,
    ///   `.persistentStoreIncompatibleVersionHash` (134100, with the ``FileStoreError`` as
    ///   `underlying`) when a file store was created with another model, and
    ///   `.persistentStoreOpen` (134080) when it cannot be opened (locked by another process,
    ///   damaged, unreadable), with the file store's ``FileStoreError`` as `underlying`.
    @discardableResult
    public func addPersistentStore(type: String, at url: URL?, options: [String: String]? = nil) throws -> any PersistentStore {
        try addPersistentStore(type: type, at: url, options: options, stagedMigrationManager: nil)
    }

    /// Creates and adds a store of a registered type, migrating a file store written with an
    /// older model version through `stagedMigrationManager`'s stages (see
    /// ``addPersistentStore(type:at:options:)`` for the rest). With
    /// ``NSMigratePersistentStoresAutomaticallyOption`` and ``NSInferMappingModelAutomaticallyOption``
    /// on, a file store written with another version is migrated by an inferred (lightweight)
    /// migration when its model is found (see Docs/Migration.md).
    ///
    /// - Throws: as ``addPersistentStore(type:at:options:)``, and ``CoreDataError``
    ///   `.migration` / `.migrationMissingSourceModel` (with the ``MigrationError`` as
    ///   `underlying`) when a migration fails; the store is then unchanged.
    @discardableResult
    public func addPersistentStore(
        type: String, at url: URL?, options: [String: String]?, stagedMigrationManager: NSStagedMigrationManager?
    ) throws -> any PersistentStore {
        if let modelError {
            throw CoreDataError(.coreData, "the model is invalid: \(modelError)", underlying: modelError)
        }
        guard let factory = Self.factories.withLock({ $0[type] }) else {
            throw CoreDataError(
                .persistentStoreInvalidType,
                "unknown store type '\(type)'; use \(NSInMemoryStoreType) or register the type with "
                    + "NSPersistentStoreCoordinator.registerStoreType(_:factory:).")
        }
        if let url, persistentStores.contains(where: { $0.url == url }) {
            throw CoreDataError(
                .persistentStoreAlreadyAdded,
                "a store at \(url.path) is already added to this coordinator; a store can be loaded only once.")
        }
        // A file store that another coordinator's `remove` closes between the open and the
        // add is opened again (see `FileStore.attach()`); twice is always enough in practice.
        var attempt = 1
        while true {
            let store = try openStore(with: factory, type: type, at: url, options: options, staged: stagedMigrationManager)
            do {
                // Marked before it is added, so that no save through this coordinator reaches it
                // unrefused; the mark goes again if adding fails.
                let readOnly = Self.opensReadOnly(options)
                if readOnly {
                    readOnlyStores.withLock { _ = $0.insert(store.identifier) }
                    everAddedReadOnly.store(true, ordering: .releasing)
                }
                do {
                    try addPersistentStore(store)
                } catch {
                    if readOnly { readOnlyStores.withLock { _ = $0.remove(store.identifier) } }
                    throw error
                }
                if storeOptionIsOn(options?[NSPersistentStoreRemoteChangeNotificationPostOptionKey]) {
                    let live = Self.remoteChangeObservers.withLock { table in
                        let live = table[store.identifier, default: []].compactMap(\.coordinator)
                        table[store.identifier] = (live + [self]).map(WeakCoordinator.init)
                        return live
                    }
                    withExtendedLifetime(live) {}  // released after the lock (a deinit may need it)
                }
                return store
            } catch let error as CoreDataError where error.code == .persistentStoreOpen && store is FileStore && attempt < 8 {
                attempt += 1
            }
        }
    }

    private func openStore(
        with factory: StoreFactory, type: String, at url: URL?, options: [String: String]?, staged: NSStagedMigrationManager?
    ) throws -> any PersistentStore {
        let store: any PersistentStore
        do {
            store = try factory(url, options ?? [:], managedObjectModel)
        } catch let error as CoreDataError where error.code == .persistentStoreIncompatibleVersionHash && type != NSFileStoreType {
            guard let migrator = Self.migrators.withLock({ $0[type] }),
                try migrateInPlace(with: migrator, type: type, at: url, options: options ?? [:], staged: staged)
            else { throw error }
            // Opened once more, without migrating again: a store still at another model (a
            // third version written meanwhile) is reported, not migrated in a loop.
            return try factory(url, options ?? [:], managedObjectModel)
        } catch let error as FileStoreError {
            if case .modelMismatch = error.kind, type == NSFileStoreType, let url,
                try migrateFileStore(
                    at: url, options: options, staged: staged,
                    durability: FileStore.Durability(rawValue: options?[FileStore.durabilityOptionKey] ?? "") ?? .full)
            {
                return try openStore(with: factory, type: type, at: url, options: options, staged: nil)
            }
            // Every load error is a `CoreDataError`, the store's own error its `underlying`, as
            // Core Data wraps a store's error in an NSError with NSUnderlyingErrorKey: code that
            // catches `CoreDataError` around `loadPersistentStores` sees locked, damaged and
            // unreadable stores too, not only a model mismatch.
            guard case let .modelMismatch(storeHash, modelHash) = error.kind else {
                throw CoreDataError(
                    .persistentStoreOpen, "the store at \(error.path) could not be opened: \(error.message)", underlying: error)
            }
            // Core Data code recognises this case by its code (134100) to rebuild the store.
            throw CoreDataError(
                .persistentStoreIncompatibleVersionHash,
                "the store at \(error.path) was created with model \(storeHash), not this coordinator's model "
                    + "\(modelHash), and automatic migration is off: turn it on (shouldMigrateStoreAutomatically and "
                    + "shouldInferMappingModelAutomatically, or a stagedMigrationManager), open it with its own model, or "
                    + "destroy it (destroyPersistentStore(at:ofType:)) and load it again.",
                underlying: error)
        }
        return store
    }

    /// Deletes the store of type `storeType` at `url`, as Core Data's method of this name:
    /// for a file store, the file and its sidecars (``FileStore/destroy(at:)``); nothing for
    /// an in-memory store or the URL `/dev/null`. Nothing to delete is not an error.
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreInvalidType` for another type; for a file
    ///   store, ``FileStoreError`` `.inUse` when it is open in this process (remove it from
    ///   its coordinators first), `.lockedByAnotherProcess`, or `.io`.
    public func destroyPersistentStore(at url: URL, ofType storeType: String, options: [String: String]? = nil) throws {
        switch storeType {
        case NSInMemoryStoreType: return
        case NSFileStoreType:
            if url.isFileURL, url.standardizedFileURL.path == "/dev/null" { return }
            try FileStore.destroy(at: url)
        default:
            throw CoreDataError(
                .persistentStoreInvalidType,
                "cannot destroy a store of type '\(storeType)'; this coordinator destroys \(NSFileStoreType) and "
                    + "\(NSInMemoryStoreType) stores.")
        }
    }

    /// Adds a store built elsewhere (for example a custom ``PersistentStore``).
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreAlreadyAdded` when this store (or its
    ///   URL) is already added, `.coreData` when the model is invalid.
    public func addPersistentStore(_ store: any PersistentStore) throws {
        if let modelError {
            throw CoreDataError(.coreData, "the model is invalid: \(modelError)", underlying: modelError)
        }
        try stores.withLock { list throws(CoreDataError) in
            if list.contains(where: { $0 === store || $0.identifier == store.identifier || (store.url != nil && $0.url == store.url) }) {
                throw CoreDataError(
                    .persistentStoreAlreadyAdded,
                    "store \(store.identifier) (\(store.url?.path ?? "no URL")) is already added to this coordinator.")
            }
            // A file store counts its coordinators; one closed meanwhile is not added.
            if let file = store as? FileStore, !file.attach() {
                throw CoreDataError(
                    .persistentStoreOpen,
                    "the file store \(file.path) was closed (its last coordinator removed it); open it again.")
            }
            list.append(store)
        }
        LoadedStores.note(store)
        observeRemoteChanges(of: store)
    }

    /// Removes a store. Objects from it become unreachable. A file store that no other
    /// coordinator uses any more is closed, as Core Data closes a removed store's file: its
    /// close record is written and its lock released, so the next open is a clean one.
    /// (Otherwise a file store closes when the last reference to it goes, which a store held
    /// by a global never does: remove it before a program exits.)
    ///
    /// - Throws: ``FileStoreError`` when closing the file fails; the store is removed, and
    ///   its next open recovers as after a crash, losing nothing saved.
    public func remove(_ store: any PersistentStore) throws {
        let removed = stores.withLock { list -> Bool in
            let before = list.count
            list.removeAll { $0 === store }
            return list.count < before
        }
        if removed {
            if everAddedReadOnly.load(ordering: .acquiring) { readOnlyStores.withLock { _ = $0.remove(store.identifier) } }
            let live = Self.remoteChangeObservers.withLock { table -> [NSPersistentStoreCoordinator] in
                let live = table[store.identifier]?.compactMap(\.coordinator) ?? []
                let kept = live.filter { $0 !== self }
                table[store.identifier] = kept.isEmpty ? nil : kept.map(WeakCoordinator.init)
                return live
            }
            withExtendedLifetime(live) {}
        }
        guard removed, let file = store as? FileStore else { return }
        if file.detach() { try file.close() }
    }

    /// The store with the given identifier, if added.
    public func persistentStore(withIdentifier identifier: String) -> (any PersistentStore)? {
        persistentStores.first { $0.identifier == identifier }
    }

    /// The object ID named by a URI from `NSManagedObjectID.uriRepresentation()`, or `nil`
    /// when the URI is malformed or names a store or entity this coordinator does not have.
    /// Temporary IDs' URIs never resolve (as in Core Data).
    public func managedObjectID(forURIRepresentation url: URL) -> NSManagedObjectID? {
        guard url.scheme == "x-coredata", let host = url.host, !host.isEmpty else { return nil }
        let parts = url.path.split(separator: "/").map(String.init)
        guard parts.count == 2, parts[1].hasPrefix("p"), let pk = Int64(parts[1].dropFirst()),
            let store = persistentStore(withIdentifier: host),
            let entity = managedObjectModel.entitiesByName[parts[0].removingPercentEncoding ?? parts[0]]
        else { return nil }
        return NSManagedObjectID(entity: entity, row: StoreRowID(entity: entity.index, primaryKey: pk), store: store.identifier)
    }

    // MARK: Internal store access

    /// The store all entities live in.
    func primaryStore(for operation: String) throws -> any PersistentStore {
        guard let store = stores.withLock({ $0.first }) else {
            throw CoreDataError(
                .coreData,
                "\(operation) failed: this coordinator has no persistent stores. Load a store first "
                    + "(container.loadPersistentStores or coordinator.addPersistentStore).")
        }
        return store
    }

    /// Whether `store` was added with ``NSReadOnlyPersistentStoreOption``.
    func isAddedReadOnly(_ store: any PersistentStore) -> Bool {
        everAddedReadOnly.load(ordering: .acquiring) && readOnlyStores.withLock { $0.contains(store.identifier) }
    }

    /// Whether the ID belongs to this coordinator's model and one of its stores.
    func owns(_ id: NSManagedObjectID) -> Bool {
        guard id.entity.managedObjectModel === managedObjectModel else { return false }
        guard let store = id.persistentStoreIdentifier else { return true }
        return persistentStore(withIdentifier: store) != nil
    }

    /// Commits `transaction` to `store` under the coordinator's write lock; returns the
    /// result with the ``CommitClock`` reading as of which the committed rows are current.
    func commit(_ transaction: StoreTransaction, to store: any PersistentStore) throws -> (StoreCommitResult, clock: UInt64) {
        // Every commit path passes here: a read-only store is never written, whatever asked.
        try refuseWrites(to: store, "saving")
        let (result, clock, token) = try commitLock.withLock { attempts in
            attempts &+= 1
            let result: StoreCommitResult
            do {
                result = try store.commit(transaction)
            } catch {
                CommitClock.tick()  // a failed store may have changed rows; a tick only costs checks
                throw error
            }
            // Read under the commit lock, so that it is this commit's number unless another
            // coordinator on the same store committed in between (then a later one).
            let token = store.tracksHistory ? store.currentHistoryToken : nil
            return (result, CommitClock.tick(), token)  // after the rows changed
        }
        if case .committed = result, !transaction.isEmpty { postRemoteChange(of: store, token: token) }
        return (result, clock)
    }

    /// Posts ``Foundation/Notification/Name/NSPersistentStoreRemoteChange`` for a commit to
    /// `store` from every coordinator of the process that loaded it with the option that asks
    /// for it (this one included). Posted after the commit lock is released: an observer may
    /// fetch history or save at once.
    private func postRemoteChange(of store: any PersistentStore, token: UInt64?) {
        let targets = Self.remoteChangeObservers.withLock { $0[store.identifier]?.compactMap(\.coordinator) ?? [] }
        if targets.isEmpty { return }
        var info: [AnyHashable: Any] = [NSStoreUUIDKey: store.identifier]
        if let url = store.url { info[NSPersistentStoreURLKey] = url }
        if let token { info[NSPersistentHistoryTokenKey] = NSPersistentHistoryToken(storeTokens: [store.identifier: token]) }
        for coordinator in targets {
            NotificationCenter.default.post(name: .NSPersistentStoreRemoteChange, object: coordinator, userInfo: info)
        }
    }

    // MARK: Persistent history

    /// The point in persistent history after the last transaction of `stores` (every store
    /// when nil) that track history, as Core Data's method of this name; nil when none of them
    /// tracks history. Fetch history after it later to see what changed since.
    public func currentPersistentHistoryToken(fromStores stores: [any PersistentStore]? = nil) -> NSPersistentHistoryToken? {
        var tokens: [String: UInt64] = [:]
        for store in stores ?? persistentStores where store.tracksHistory {
            tokens[store.identifier] = store.currentHistoryToken
        }
        return tokens.isEmpty ? nil : NSPersistentHistoryToken(storeTokens: tokens)
    }

    // MARK: Automatic merging

    func addMergeObserver(_ context: NSManagedObjectContext) {
        let live = mergeObservers.withLock { list in
            let live = Self.prune(&list, removing: context)
            list.append(WeakContext(context: context))
            return live
        }
        withExtendedLifetime(live) {}  // released here, after the lock: see `prune`
    }

    func removeMergeObserver(_ context: NSManagedObjectContext) {
        let live = mergeObservers.withLock { list in Self.prune(&list, removing: context) }
        withExtendedLifetime(live) {}
    }

    /// Drops dead entries and `context` from `list`; returns the live contexts, strongly.
    ///
    /// Reading a weak reference retains the context. If the caller's retain is the last one
    /// (another thread let go meanwhile), releasing it inside the lock ran the context's
    /// deinit there, and the deinit's own `removeMergeObserver` took the same lock again:
    /// deadlock. The caller keeps the returned array until after the lock is released.
    private static func prune(_ list: inout [WeakContext], removing context: NSManagedObjectContext) -> [NSManagedObjectContext] {
        let live = list.compactMap(\.context)
        list = live.filter { $0 !== context }.map { WeakContext(context: $0) }
        return live
    }

    /// Hands a completed save to every other context that merges automatically; each merges
    /// on its own queue.
    func broadcast(_ changes: SavedChanges, from origin: NSManagedObjectContext?) {
        let targets = mergeObservers.withLock { list in list.compactMap(\.context) }
        for context in targets where context !== origin {
            context.perform { context.mergeSavedChanges(changes) }
        }
    }
}

/// A weak reference to a context, for observer lists.
struct WeakContext: Sendable {
    weak var context: NSManagedObjectContext?
}

/// A weak reference to a coordinator, for the remote change observers.
struct WeakCoordinator: Sendable {
    weak var coordinator: NSPersistentStoreCoordinator?
}
