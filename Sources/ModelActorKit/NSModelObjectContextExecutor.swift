import PersistenceKit

/// The serial executor of a context's queue: an actor that uses it runs its jobs on the
/// context's queue, in one FIFO with the context's `perform` blocks, one at a time.
///
/// # Guarantees
/// - Jobs of a private-queue context run on Dispatch's global pool (or on a thread that a
///   blocked `performAndWait` caller started for a drain Dispatch was slow to start), never
///   on the main thread — wherever the actor was created.
/// - Actor jobs, `perform` blocks and `performAndWait` blocks of the context exclude each
///   other; jobs and `perform` blocks run in enqueue order.
/// - `enqueue` never blocks, so actors calling each other cannot deadlock through it.
/// - ``checkIsolated()`` succeeds inside the context's `perform` blocks, so
///   `assumeIsolated` works there.
public final class NSModelObjectContextExecutor: SerialExecutor {
    /// The context whose queue runs the jobs.
    public let context: NSManagedObjectContext

    /// Creates the executor of `context`'s queue.
    public init(context: NSManagedObjectContext) {
        self.context = context
    }

    /// Schedules `job` on the context's queue. Returns at once.
    public func enqueue(_ job: consuming ExecutorJob) {
        context.enqueueExecutorJob(UnownedJob(job), executor: asUnownedSerialExecutor())
    }

    /// This executor, with complex equality: two executors of one context are the same
    /// execution context.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(complexEquality: self)
    }

    /// Two executors are the same execution context when they run the same context's queue.
    public func isSameExclusiveExecutionContext(other: NSModelObjectContextExecutor) -> Bool {
        other.context === context
    }

    /// Traps unless the caller runs on the context's queue (inside an actor job or a
    /// `perform`/`performAndWait` block of the context).
    public func checkIsolated() {
        programmerCheck(
            context.isExecutingOnQueueOnSecondLook,
            "PersistenceKit: isolation check failed — the caller is not running on the queue of context "
                + "'\(context.debugName)'. Rule: an NSModelActor's state may only be touched from its own "
                + "methods or from a perform/performAndWait block of its context.")
    }

    /// Whether the caller runs on the context's queue: `true` or `false`, or, for a main-queue
    /// context seen from off the main queue, `nil` (unknown), so that a trapping isolation
    /// check asks ``checkIsolated()``, which looks again (main-actor code inside another
    /// queue's `sync` holds the main queue where the quick check cannot see it). A definite
    /// `false` would make the runtime trap without asking.
    public func isIsolatingCurrentContext() -> Bool? {
        if context.isExecutingOnQueue { return true }
        return context.concurrencyType == .mainQueueConcurrencyType ? nil : false
    }
}
