import Foundation
import Synchronization

/// A fetch that runs later on its context's queue and hands its results to a completion
/// block. Run it with `NSManagedObjectContext.execute(_:)`, which returns at once with an
/// ``NSAsynchronousFetchResult`` whose progress can cancel it.
///
/// ```swift
/// let request = NSAsynchronousFetchRequest(fetchRequest: Book.fetchRequest()) { result in
///     // On the context's queue.
///     let books = result.finalResult ?? []
/// }
/// try context.execute(request)
/// ```
///
/// Not `Sendable` (it holds a fetch request): make it and execute it on the context's queue.
public final class NSAsynchronousFetchRequest<ResultType: NSFetchRequestResult> {
    /// The fetch to run.
    public let fetchRequest: NSFetchRequest<ResultType>
    /// Called on the context's queue once the fetch finished, failed or was cancelled,
    /// with the result that `execute(_:)` returned.
    public let completionBlock: (@Sendable (NSAsynchronousFetchResult<ResultType>) -> Void)?
    /// How many results the fetch is expected to return, for the progress's unit count;
    /// `0` (the default) for one unit for the whole fetch.
    public var estimatedResultCount: Int = 0

    /// Creates an asynchronous request for `fetchRequest`, with a completion block to call
    /// on the context's queue when it ends.
    public init(
        fetchRequest request: NSFetchRequest<ResultType>,
        completionBlock blk: (@Sendable (NSAsynchronousFetchResult<ResultType>) -> Void)?
    ) {
        self.fetchRequest = request
        self.completionBlock = blk
    }
}

/// The result of an ``NSAsynchronousFetchRequest``: returned by `execute(_:)` before the
/// fetch runs, filled in on the context's queue when it ends, and passed to the request's
/// completion block.
///
/// Read ``finalResult`` and ``operationError`` on the context's queue (in the completion
/// block, or in a block `perform` runs after it). ``cancel()`` and ``progress`` may be used
/// from any thread. Not `Sendable`: it holds the context's objects.
public final class NSAsynchronousFetchResult<ResultType: NSFetchRequestResult> {
    /// The request that produced this result.
    public let fetchRequest: NSAsynchronousFetchRequest<ResultType>
    /// The context the fetch runs in.
    public let managedObjectContext: NSManagedObjectContext?
    /// The fetched objects; `nil` until the fetch succeeded, and for a failed or cancelled
    /// fetch.
    public private(set) var finalResult: [ResultType]?
    /// Why the fetch produced no results: its error, or a ``CoreDataError`` with code
    /// ``CoreDataError/Code/userCancelled`` when it was cancelled; `nil` otherwise.
    public private(set) var operationError: (any Error)?
    /// The fetch's progress: complete when the fetch finished; cancelling it cancels the
    /// fetch. Made a child of the progress current when `execute(_:)` was called, if any.
    public let progress: Progress?

    /// Set once the fetch is cancelled, from whichever thread cancels it.
    private let cancellation: AsynchronousFetchCancellation

    init(_ request: NSAsynchronousFetchRequest<ResultType>, context: NSManagedObjectContext) {
        fetchRequest = request
        managedObjectContext = context
        let cancellation = AsynchronousFetchCancellation()
        self.cancellation = cancellation
        let progress = Progress(totalUnitCount: Int64(max(1, request.estimatedResultCount)))
        progress.cancellationHandler = { cancellation.cancel() }
        self.progress = progress
    }

    /// Cancels the fetch if it has not run yet: it then ends without results, with
    /// ``operationError`` set to a ``CoreDataError`` `.userCancelled`, and the completion
    /// block is still called. A fetch that is running when cancelled finishes, and its
    /// results are dropped the same way. No effect once the fetch ended. Any thread.
    public func cancel() {
        cancellation.cancel()
        progress?.cancel()
    }

    /// Runs the fetch, on the context's queue, and calls the completion block.
    func run(in context: NSManagedObjectContext) {
        if !cancellation.isCancelled {
            do {
                let objects = try context.fetch(fetchRequest.fetchRequest)
                if !cancellation.isCancelled {
                    finalResult = objects
                    if let progress { progress.completedUnitCount = progress.totalUnitCount }
                }
            } catch {
                operationError = error
            }
        }
        if cancellation.isCancelled && operationError == nil {
            finalResult = nil
            operationError = CoreDataError(.userCancelled, "the asynchronous fetch was cancelled before it ended.")
        }
        fetchRequest.completionBlock?(self)
    }
}

/// Whether an asynchronous fetch was cancelled.
final class AsynchronousFetchCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    var isCancelled: Bool { flag.load(ordering: .acquiring) }

    func cancel() { flag.store(true, ordering: .releasing) }
}
