import PersistenceKit

/// A main-actor type that works with its container's `viewContext` — the main-thread
/// counterpart of ``NSModelActor``.
///
/// ```swift
/// @MainActor
/// final class ItemViewModel: NSMainModelActor {
///     let modelContainer: NSPersistentContainer
///     init(modelContainer: NSPersistentContainer) { self.modelContainer = modelContainer }
/// }
/// ```
@MainActor
public protocol NSMainModelActor: AnyObject {
    /// The container whose view context the type uses.
    var modelContainer: NSPersistentContainer { get }
}

extension NSMainModelActor {
    /// The container's main-queue `viewContext`.
    public var modelContext: NSManagedObjectContext {
        modelContainer.viewContext
    }

    /// The object with `id` as a `T`, loaded from the store if needed; `nil` when it does
    /// not exist or is not a `T`.
    public subscript<T: NSManagedObject>(id: NSManagedObjectID, as type: T.Type) -> T? {
        (try? modelContext.existingObject(with: id)) as? T
    }

    /// Runs `action` with the view context, synchronously on the main actor; rethrows.
    public func withContext<T: Sendable>(_ action: (NSManagedObjectContext) throws -> T) rethrows -> T {
        try action(modelContext)
    }

    /// Runs `action` with the view context and container, synchronously on the main actor.
    public func withContext<T: Sendable>(
        _ action: (NSManagedObjectContext, NSPersistentContainer) throws -> T
    ) rethrows -> T {
        try action(modelContext, modelContainer)
    }

    /// Runs `action` with the view context on the main actor; `action` may `await`, staying
    /// on the main actor (other main-actor work can run at each suspension). Its result need
    /// not be `Sendable`.
    public func withIsolatedContext<T, E: Error>(
        _ action: @MainActor (NSManagedObjectContext) async throws(E) -> sending T
    ) async throws(E) -> sending T {
        try await action(modelContext)
    }
}
