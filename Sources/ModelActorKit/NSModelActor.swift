import PersistenceKit

/// An actor whose isolation is a context's queue: its methods run on that queue, so they
/// may use ``modelContext`` and its objects directly — SwiftData's `@ModelActor`, conformed
/// by hand.
///
/// ```swift
/// actor ItemStore: NSModelActor {
///     nonisolated let modelContainer: NSPersistentContainer
///     nonisolated let modelExecutor: NSModelObjectContextExecutor
///     init(container: NSPersistentContainer) {
///         modelContainer = container
///         modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
///     }
/// }
/// ```
///
/// # Guarantees
/// Methods never run on the main thread (when the executor's context is a private-queue
/// context); they exclude the context's `perform`/`performAndWait` blocks; calls between
/// model actors cannot deadlock.
public protocol NSModelActor: Actor {
    /// The container the actor works with.
    nonisolated var modelContainer: NSPersistentContainer { get }
    /// The executor of the actor's context; its context is ``modelContext``.
    nonisolated var modelExecutor: NSModelObjectContextExecutor { get }
}

extension NSModelActor {
    /// Runs the actor on its context's queue.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        modelExecutor.asUnownedSerialExecutor()
    }

    /// The context the actor's methods use.
    public var modelContext: NSManagedObjectContext {
        modelExecutor.context
    }

    /// The object with `id` as a `T`, loaded from the store if needed; `nil` when it does
    /// not exist or is not a `T`.
    public subscript<T: NSManagedObject>(id: NSManagedObjectID, as type: T.Type) -> T? {
        (try? modelContext.existingObject(with: id)) as? T
    }

    /// Runs `action` with the actor's context, synchronously, inside the actor's isolation;
    /// rethrows its error.
    public func withContext<T: Sendable>(_ action: (NSManagedObjectContext) throws -> T) rethrows -> T {
        try action(modelContext)
    }

    /// Runs `action` with the actor's context and container, synchronously, inside the
    /// actor's isolation; rethrows its error.
    public func withContext<T: Sendable>(
        _ action: (NSManagedObjectContext, NSPersistentContainer) throws -> T
    ) rethrows -> T {
        try action(modelContext, modelContainer)
    }

    /// Sends `action` into the actor's isolation and returns its result, which need not be
    /// `Sendable`: it is `sending`, so the caller owns it afterwards. The closure receives the
    /// actor itself as an `isolated` parameter, so it may call the actor's synchronous
    /// methods, and the actor's context.
    ///
    /// Its own name, not a `withContext` overload: as `withContext(isolated:)`, a trailing
    /// closure `{ context, container in … }` written for the two-argument `withContext`
    /// matched this form too, and where its body compiled for both the compiler chose this
    /// one — `container` was then the context, silently (found porting CoreDataEvolution's
    /// tests).
    public nonisolated func withIsolatedContext<T, E: Error>(
        _ action: @Sendable (isolated Self, NSManagedObjectContext) throws(E) -> sending T
    ) async throws(E) -> sending T {
        try await runIsolated(action)
    }

    /// The `async` form of `withIsolatedContext(_:)`:
    /// `action` may `await` while isolated to the actor. Other jobs of the actor (and
    /// `perform` blocks of its context) can run at each suspension, as in any actor method.
    public nonisolated func withIsolatedContext<T, E: Error>(
        _ action: @Sendable (isolated Self, NSManagedObjectContext) async throws(E) -> sending T
    ) async throws(E) -> sending T {
        try await runIsolated(action)
    }

    private func runIsolated<T, E: Error>(
        _ action: @Sendable (isolated Self, NSManagedObjectContext) async throws(E) -> sending T
    ) async throws(E) -> sending T {
        try await action(self, modelContext)
    }

    private func runIsolated<T, E: Error>(
        _ action: @Sendable (isolated Self, NSManagedObjectContext) throws(E) -> sending T
    ) throws(E) -> sending T {
        try action(self, modelContext)
    }
}
