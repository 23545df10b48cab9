import Foundation
import Synchronization

/// Bundles a model, a coordinator, the stores to load, and a main-queue view context.
///
/// ```swift
/// let model = try NSManagedObjectModel(managedObjectClasses: [Book.self, Shelf.self])
/// let container = NSPersistentContainer(name: "Library", managedObjectModel: model)
/// try await container.loadPersistentStores()
/// let context = container.viewContext   // use on the main actor
/// ```
///
/// # Thread safety
/// A container may be used from any thread: its stored state is immutable or behind a
/// lock. Its contexts follow their own queue rules.
open class NSPersistentContainer: @unchecked Sendable {
    // @unchecked Sendable: an open class cannot be checked, but every stored property is a
    // `let` of a Sendable type or lives in `state`, a Lock.

    private struct State {
        /// `nil` until read or set: the default description is made on first read.
        var descriptions: [NSPersistentStoreDescription]?
        var loaded: Set<ObjectIdentifier> = []
    }

    /// The container's name; the default store file is named after it.
    public let name: String
    /// The model of every store and context.
    public let managedObjectModel: NSManagedObjectModel
    /// The coordinator shared by the container's contexts.
    public let persistentStoreCoordinator: NSPersistentStoreCoordinator
    /// A main-queue context for the UI or main-actor code. Use it on the main actor only.
    public let viewContext: NSManagedObjectContext
    private let state: Lock<State>

    /// Creates a container with one default store description (see ``defaultDirectoryURL()``).
    public init(name: String, managedObjectModel model: NSManagedObjectModel) {
        self.name = name
        self.managedObjectModel = model
        self.persistentStoreCoordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        self.viewContext = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType, coordinator: persistentStoreCoordinator)
        self.viewContext.setFallbackName("viewContext")  // `name` stays nil, as in Core Data
        // The default description is made when first read, not here: finding the default
        // folder reads the environment and walks XDG paths, which was a fifth of reopening a
        // store whose description the caller replaces anyway (measured with callgrind).
        self.state = Lock(State(descriptions: nil))
    }

    /// The folder default stores go in: the user's application-support folder (on Linux,
    /// `$XDG_DATA_HOME` or `~/.local/share`).
    open class func defaultDirectoryURL() -> URL {
        FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSTemporaryDirectory())
    }

    /// The stores ``loadPersistentStores(completionHandler:)`` loads. Change before loading.
    public var persistentStoreDescriptions: [NSPersistentStoreDescription] {
        get {
            if let descriptions = state.withLock({ $0.descriptions }) { return descriptions }
            let url = type(of: self).defaultDirectoryURL().appendingPathComponent("\(name).store")
            let made = [NSPersistentStoreDescription(url: url)]
            return state.withLock { s in
                if let descriptions = s.descriptions { return descriptions }
                s.descriptions = made
                return made
            }
        }
        set { state.withLock { $0.descriptions = newValue } }
    }

    /// Loads every store description, calling `block` once per description with `nil` or
    /// the error. Descriptions with `shouldAddStoreAsynchronously` load on a background queue
    /// (the handler runs there); the others load before this returns.
    ///
    /// Loading a description that this container already loaded reports
    /// ``CoreDataError`` `.persistentStoreAlreadyAdded`.
    public func loadPersistentStores(
        completionHandler block: @escaping @Sendable (NSPersistentStoreDescription, (any Error)?) -> Void
    ) {
        for description in persistentStoreDescriptions {
            if description.shouldAddStoreAsynchronously {
                DispatchQueue.global().async { [self] in block(description, load(description)) }
            } else {
                block(description, load(description))
            }
        }
    }

    /// Loads every store description and returns when all are loaded.
    ///
    /// - Throws: the first load error (``CoreDataError``, or the store's own error).
    public func loadPersistentStores() async throws {
        for description in persistentStoreDescriptions {
            if let error = load(description) { throw error }
        }
    }

    private func load(_ description: NSPersistentStoreDescription) -> (any Error)? {
        let key = ObjectIdentifier(description)
        let first = state.withLock { $0.loaded.insert(key).inserted }
        guard first else {
            return CoreDataError(
                .persistentStoreAlreadyAdded,
                "the store \(description) was already loaded by container '\(name)'; load each store once.")
        }
        do {
            try NSPersistentStoreCoordinator.checkConfiguration(description.configuration)
            try persistentStoreCoordinator.addPersistentStore(
                type: description.type, at: description.url, options: description.effectiveOptions,
                stagedMigrationManager: description.stagedMigrationManager)
            return nil
        } catch {
            state.withLock { _ = $0.loaded.remove(key) }
            return error
        }
    }

    /// A new private-queue context on the container's coordinator.
    public func newBackgroundContext() -> NSManagedObjectContext {
        NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: persistentStoreCoordinator)
    }

    /// Runs `block` on a new private-queue context, asynchronously.
    public func performBackgroundTask(_ block: @escaping @Sendable (NSManagedObjectContext) -> Void) {
        let context = newBackgroundContext()
        context.perform { block(context) }
    }

    /// Runs `block` on a new private-queue context and returns its result.
    ///
    /// - Throws: what `block` throws.
    public func performBackgroundTask<T: Sendable, E: Error>(
        _ block: @escaping @Sendable (NSManagedObjectContext) throws(E) -> T
    ) async throws(E) -> T {
        let context = newBackgroundContext()
        return try await context.perform(schedule: .enqueued) { () throws(E) -> T in try block(context) }
    }
}
