import Foundation
import PersistenceKit

/// A model built from `NSManagedObject` subclasses, a container loaded with it, and a view
/// context that merges the container's background saves: everything a program or a test
/// without a hand-built model needs, in one value (CoreDataEvolution's type of the same
/// name, without its macro-generated schema).
///
/// The model comes from `NSManagedObjectModel.makeRuntimeModel(_:)`, so stacks of the same
/// classes share one model instance.
///
/// # Thread safety
/// The stack's properties are immutable; use ``viewContext`` on the main actor and each
/// context from ``newBackgroundContext()`` through its `perform` methods.
public final class CDRuntimeModelStack: Sendable {
    /// The classes the model was built from.
    public let modelTypes: [NSManagedObject.Type]
    /// The model of ``modelTypes``.
    public let model: NSManagedObjectModel
    /// The loaded container.
    public let container: NSPersistentContainer

    /// The container's view context, which merges the saves of the container's other
    /// contexts when the stack was made with `automaticallyMergesChangesFromParent` (the
    /// default).
    @MainActor public var viewContext: NSManagedObjectContext { container.viewContext }

    /// A stack over a test store of its own (see `NSPersistentContainer.makeTest`): named
    /// after the test, in `<temporary directory>/<subDirectory>`, stale files removed.
    ///
    /// - Throws: ``ModelError`` for an invalid model, ``TestContainerError`` when the store
    ///   cannot be made or loaded.
    public init(
        modelTypes: [NSManagedObject.Type], testName: String = "", fileID: String = #fileID, function: String = #function,
        subDirectory: String = "PersistenceKitTestTemp", automaticallyMergesChangesFromParent: Bool = true
    ) throws {
        self.modelTypes = modelTypes
        model = try NSManagedObjectModel.makeRuntimeModel(modelTypes)
        container = try NSPersistentContainer.makeTest(
            model: model, testName: testName, fileID: fileID, function: function, subDirectory: subDirectory)
        Self.configure(container, merging: automaticallyMergesChangesFromParent)
    }

    /// ``init(modelTypes:testName:fileID:function:subDirectory:automaticallyMergesChangesFromParent:)``
    /// with the classes listed one by one.
    ///
    /// - Throws: as that initializer.
    public convenience init(
        modelTypes: NSManagedObject.Type..., testName: String = "", fileID: String = #fileID, function: String = #function,
        subDirectory: String = "PersistenceKitTestTemp", automaticallyMergesChangesFromParent: Bool = true
    ) throws {
        try self.init(
            modelTypes: modelTypes as [NSManagedObject.Type], testName: testName, fileID: fileID, function: function,
            subDirectory: subDirectory, automaticallyMergesChangesFromParent: automaticallyMergesChangesFromParent)
    }

    /// A stack for a program: a file store at `storeURL`, or an in-memory store when it is
    /// nil. The container is named `name`.
    ///
    /// - Throws: ``ModelError`` for an invalid model; the store's load error (a
    ///   `CoreDataError`).
    public init(
        modelTypes: [NSManagedObject.Type], name: String, storeURL: URL?, automaticallyMergesChangesFromParent: Bool = true
    ) async throws {
        self.modelTypes = modelTypes
        model = try NSManagedObjectModel.makeRuntimeModel(modelTypes)
        container = NSPersistentContainer(name: name, managedObjectModel: model)
        let description = storeURL.map { NSPersistentStoreDescription(url: $0) } ?? NSPersistentStoreDescription(url: URL(fileURLWithPath: "/dev/null"))
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        Self.configure(container, merging: automaticallyMergesChangesFromParent)
    }

    /// A new private-queue context on the container's coordinator.
    public func newBackgroundContext() -> NSManagedObjectContext { container.newBackgroundContext() }

    private static func configure(_ container: NSPersistentContainer, merging: Bool) {
        // Settable from any thread (the context keeps it behind a lock).
        if merging { container.viewContext.automaticallyMergesChangesFromParent = true }
    }
}
