import Foundation
import PersistenceKit

/// A kind of store the shared behaviour checks run against: it makes fresh, empty places to
/// keep a model's objects (a temporary file, a database schema, a store object in memory).
///
/// Conform a store's test support to it and run ``StoreBehaviour/Check`` against it (see
/// ``StoreBehaviour``). The checks never look at a store's internals: everything goes
/// through containers, contexts, fetch and batch requests.
public protocol StoreUnderTest: Sendable, CustomStringConvertible {
    /// A new, empty place for `model`'s objects that no other test uses. The check destroys it
    /// when it ends (``StoreLocation/destroy()``), passing or failing.
    func makeLocation(for model: NSManagedObjectModel) async throws -> any StoreLocation

    /// Whether the store takes part in `check`; true unless the store says otherwise. A store
    /// that leaves a check out says why in its conformance.
    func supports(_ check: StoreBehaviour.Check) -> Bool
}

extension StoreUnderTest {
    /// Every check.
    public func supports(_ check: StoreBehaviour.Check) -> Bool { true }

    /// The checks this store takes part in, for a test's `arguments:`.
    public var supportedChecks: [StoreBehaviour.Check] { StoreBehaviour.Check.allCases.filter(supports) }
}

/// One place where a store keeps a model's objects, opened by any number of coordinators at
/// once (each ``open(name:)`` is a coordinator of its own, as two processes would have).
public protocol StoreLocation: Sendable {
    /// A container whose coordinator has the store at this place loaded. Objects saved
    /// through any earlier container of this place, closed or open, are there.
    func open(name: String) async throws -> NSPersistentContainer

    /// A container whose coordinator has the store at this place loaded read-only
    /// (``NSPersistentStoreDescription/isReadOnly``), for the ``StoreBehaviour/Check/readOnly``
    /// check. (A default is provided: it throws, for stores that leave that check out.)
    func openReadOnly(name: String) async throws -> NSPersistentContainer

    /// Takes the store out of `container`'s coordinator and lets go of what it holds (file
    /// handles, connections), so that the next ``open(name:)`` reads the stored objects anew.
    func close(_ container: NSPersistentContainer) throws

    /// Deletes everything kept at this place. Called once, after every container is closed.
    func destroy() throws
}

/// Why a location cannot open its store read-only.
public struct ReadOnlyUnsupported: Error, CustomStringConvertible {
    /// The store's name.
    public let store: String
    /// A sentence saying why.
    public var description: String { "the \(store) is not opened read-only by its location; leave the readOnly check out" }
}

extension StoreLocation {
    /// Throws ``ReadOnlyUnsupported``.
    public func openReadOnly(name: String) async throws -> NSPersistentContainer {
        throw ReadOnlyUnsupported(store: String(describing: Self.self))
    }

    /// Removes every store from `container`'s coordinator.
    public func close(_ container: NSPersistentContainer) throws {
        let coordinator = container.persistentStoreCoordinator
        for store in coordinator.persistentStores { try coordinator.remove(store) }
    }
}

// MARK: The root package's stores

/// The file store, each location a store file in a temporary folder of its own.
public struct FileStoreUnderTest: StoreUnderTest {
    /// The file store.
    public init() {}

    /// "file store", as test output names it.
    public var description: String { "file store" }

    /// A store file in a new temporary folder; destroying the location deletes the folder.
    public func makeLocation(for model: NSManagedObjectModel) async throws -> any StoreLocation {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-behaviour-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return Location(folder: folder, model: model)
    }

    struct Location: StoreLocation {
        let folder: URL
        let model: NSManagedObjectModel
        var url: URL { folder.appendingPathComponent("store.pkstore") }

        func open(name: String) async throws -> NSPersistentContainer {
            try await open(name: name, readOnly: false)
        }

        func openReadOnly(name: String) async throws -> NSPersistentContainer {
            try await open(name: name, readOnly: true)
        }

        private func open(name: String, readOnly: Bool) async throws -> NSPersistentContainer {
            let container = NSPersistentContainer(name: name, managedObjectModel: model)
            let description = NSPersistentStoreDescription(url: url)
            description.isReadOnly = readOnly
            container.persistentStoreDescriptions = [description]
            try await container.loadPersistentStores()
            return container
        }

        func destroy() throws {
            try FileStore.destroy(at: url)
            try FileManager.default.removeItem(at: folder)
        }
    }
}

/// The in-memory store. Its objects live as long as its store object, so a location is one
/// `InMemoryStore` that every coordinator of the location adds: opening again gives a new
/// coordinator and contexts, which read the stored rows anew.
public struct InMemoryStoreUnderTest: StoreUnderTest {
    /// The in-memory store.
    public init() {}

    /// "in-memory store", as test output names it.
    public var description: String { "in-memory store" }

    /// Every check but ``StoreBehaviour/Check/readOnly``: a location's coordinators add its
    /// one store object directly, without store options.
    public func supports(_ check: StoreBehaviour.Check) -> Bool { check != .readOnly }

    /// A new `InMemoryStore` for `model`, which every container of the location adds.
    public func makeLocation(for model: NSManagedObjectModel) async throws -> any StoreLocation {
        Location(model: model, store: InMemoryStore(model: model))
    }

    struct Location: StoreLocation {
        let model: NSManagedObjectModel
        let store: InMemoryStore

        func open(name: String) async throws -> NSPersistentContainer {
            let container = NSPersistentContainer(name: name, managedObjectModel: model)
            container.persistentStoreDescriptions = []
            try container.persistentStoreCoordinator.addPersistentStore(store)
            return container
        }

        func destroy() throws {}
    }
}
