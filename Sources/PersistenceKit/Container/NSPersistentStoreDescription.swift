import Foundation
import Synchronization

/// Describes a store to load: its type, location and options.
///
/// # Thread safety
/// All properties are behind a lock, so a description may be shared between threads (the
/// container hands it to completion handlers that may run on a background queue).
public final class NSPersistentStoreDescription: Sendable, CustomStringConvertible {
    private struct State {
        var type: String
        var url: URL?
        var shouldAddStoreAsynchronously = false
        var options: [String: String] = [:]
        var configuration: String?
        var shouldMigrateStoreAutomatically = true
        var shouldInferMappingModelAutomatically = true
        var stagedMigrationManager: NSStagedMigrationManager?
        var isReadOnly = false
        var timeout: TimeInterval = 0
    }

    private let state: Lock<State>

    /// Creates a description of a store at `url`. The type defaults to the file store
    /// (``NSFileStoreType``); use ``NSInMemoryStoreType`` for a store that lives in memory.
    public init(url: URL? = nil, type: String = NSFileStoreType) {
        state = Lock(State(type: type, url: url))
    }

    /// The store type (for example ``NSInMemoryStoreType``).
    public var type: String {
        get { state.withLock { $0.type } }
        set { state.withLock { $0.type = newValue } }
    }

    /// The store's location.
    public var url: URL? {
        get { state.withLock { $0.url } }
        set { state.withLock { $0.url = newValue } }
    }

    /// When `true`, ``NSPersistentContainer/loadPersistentStores(completionHandler:)``
    /// loads this store on a background queue and calls the handler there.
    public var shouldAddStoreAsynchronously: Bool {
        get { state.withLock { $0.shouldAddStoreAsynchronously } }
        set { state.withLock { $0.shouldAddStoreAsynchronously = newValue } }
    }

    /// The configuration name: `nil` (the default) or `"Default"`, the only configuration
    /// there is (it holds every entity). Loading a description naming another fails with
    /// ``CoreDataError`` `.persistentStoreIncompatibleSchema` (134020).
    public var configuration: String? {
        get { state.withLock { $0.configuration } }
        set { state.withLock { $0.configuration = newValue } }
    }

    /// Whether loading migrates a store written with another version of the model, as
    /// Core Data's (`true` by default): the container passes it to the coordinator as
    /// ``NSMigratePersistentStoresAutomaticallyOption``. See Docs/Migration.md.
    public var shouldMigrateStoreAutomatically: Bool {
        get { state.withLock { $0.shouldMigrateStoreAutomatically } }
        set { state.withLock { $0.shouldMigrateStoreAutomatically = newValue } }
    }

    /// Whether such a migration may infer its mapping (a lightweight migration), as Core
    /// Data's (`true` by default); passed as ``NSInferMappingModelAutomaticallyOption``.
    public var shouldInferMappingModelAutomatically: Bool {
        get { state.withLock { $0.shouldInferMappingModelAutomatically } }
        set { state.withLock { $0.shouldInferMappingModelAutomatically = newValue } }
    }

    /// Whether the store is opened read-only, as Core Data's (`false` by default): passed
    /// as ``NSReadOnlyPersistentStoreOption``. Fetches work; a save, batch request or other
    /// write to it fails with ``CoreDataError`` `.persistentStoreSave` before anything is
    /// written, and it is never migrated. A file store opened so is only read (see
    /// ``FileStore/Options/readOnly``).
    public var isReadOnly: Bool {
        get { state.withLock { $0.isReadOnly } }
        set { state.withLock { $0.isReadOnly = newValue } }
    }

    /// How long loading waits for another process to close a file store it has open, in
    /// seconds (Core Data's; passed as ``NSPersistentStoreTimeoutOption``). Default 0 (not
    /// Core Data's 240): a store in use elsewhere fails at once with
    /// `FileStoreError.Kind.lockedByAnotherProcess`.
    public var timeout: TimeInterval {
        get { state.withLock { $0.timeout } }
        set { state.withLock { $0.timeout = newValue } }
    }

    /// The staged migration to run when the store was written with an older model version
    /// (Core Data passes it as the `NSPersistentStoreStagedMigrationManagerOptionKey`
    /// option; options here are strings, so it has a property of its own). `nil` by default.
    public var stagedMigrationManager: NSStagedMigrationManager? {
        get { state.withLock { $0.stagedMigrationManager } }
        set { state.withLock { $0.stagedMigrationManager = newValue } }
    }

    /// The options the container passes to the coordinator: ``options`` with the migration
    /// and read-only flags and the timeout filled in from their properties (an option set
    /// explicitly wins).
    var effectiveOptions: [String: String] {
        state.withLock { s in
            var options = s.options
            if options[NSMigratePersistentStoresAutomaticallyOption] == nil {
                options[NSMigratePersistentStoresAutomaticallyOption] = s.shouldMigrateStoreAutomatically ? "true" : "false"
            }
            if options[NSInferMappingModelAutomaticallyOption] == nil {
                options[NSInferMappingModelAutomaticallyOption] = s.shouldInferMappingModelAutomatically ? "true" : "false"
            }
            if options[NSReadOnlyPersistentStoreOption] == nil && s.isReadOnly {
                options[NSReadOnlyPersistentStoreOption] = "true"
            }
            if options[NSPersistentStoreTimeoutOption] == nil && s.timeout > 0 {
                options[NSPersistentStoreTimeoutOption] = String(s.timeout)
            }
            return options
        }
    }

    /// Store options, passed to the store when it is created.
    public var options: [String: String] {
        state.withLock { $0.options }
    }

    /// Sets one store option (`nil` removes it).
    public func setOption(_ value: String?, forKey key: String) {
        state.withLock { $0.options[key] = value }
    }

    /// Sets a yes-or-no store option, such as ``NSPersistentHistoryTrackingKey`` (stored as
    /// `"1"` or `"0"`).
    public func setOption(_ value: Bool, forKey key: String) {
        setOption(value ? "1" : "0", forKey: key)
    }

    /// Sets a store option from a number, as Core Data code writes
    /// `setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey)` (stored as its
    /// `stringValue`: `"1"` for true).
    public func setOption(_ value: NSNumber, forKey key: String) {
        setOption(value.stringValue, forKey: key)
    }

    /// A readable summary for logs and messages.
    public var description: String {
        "NSPersistentStoreDescription(type: \(type), url: \(url?.path ?? "nil"))"
    }
}
