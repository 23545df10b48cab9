import Foundation

extension NSManagedObjectContext {
    /// Starts an asynchronous fetch: the request's fetch runs later on this context's queue
    /// (as a block `perform` enqueues), and its completion block is called there with the
    /// returned result filled in. Returns at once.
    ///
    /// Core Data spells this `execute(_: NSPersistentStoreRequest) -> NSPersistentStoreResult`;
    /// there is no store-request hierarchy here, so this overload takes the asynchronous
    /// request and returns its typed result. Call it on this context's queue.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` when the request's entity is not in the
    ///   context's model. Errors of the fetch itself go to the result's `operationError`.
    @discardableResult
    public func execute<ResultType>(
        _ request: NSAsynchronousFetchRequest<ResultType>
    ) throws -> NSAsynchronousFetchResult<ResultType> {
        assertOnQueue("execute(_:)")
        _ = try request.fetchRequest.resolveEntity(in: coordinator.managedObjectModel)
        let result = NSAsynchronousFetchResult(request, context: self)
        let pending = QueueBoundFetch { context in result.run(in: context) }
        perform { [self] in pending.run(self) }
        return result
    }
}

/// Carries an asynchronous fetch, type-erased, to the block that runs it.
private struct QueueBoundFetch: @unchecked Sendable {
    // @unchecked Sendable: `run` holds the result that `execute(_:)` made on the context's
    // queue, and is called only by the block `execute` enqueues on that same serial queue,
    // which runs after `execute` returned. The result's mutable state (`finalResult`,
    // `operationError`) is written only by that call and documented to be read on that
    // queue; the parts callers may use from any thread are thread-safe themselves (the
    // atomic cancellation flag, and `Progress`).
    let run: (NSManagedObjectContext) -> Void
}
