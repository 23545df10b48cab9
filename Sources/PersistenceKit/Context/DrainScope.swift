#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What one thread that drains context queues knows about its own run: which actor job it is
/// running right now, and which idle queues that job handed to it as it ended.
///
/// # Why
/// When an actor on one context queue awaits an actor on another, the Swift runtime suspends
/// the caller's task and enqueues it on the callee's executor as the caller's job ends. The
/// runtime's own actors take over the thread there ("switching"); a custom executor cannot,
/// so each such hop would cost a round trip through Dispatch's global queue and a thread
/// wake-up (measured: two model actors ping-ponging took ~6x a plain actor's hop). Instead,
/// the enqueue notes the callee's queue here, and once the caller's job has returned, the
/// same thread drains the callee: no Dispatch round trip, and the caller's queue is released
/// first, so the two queues are still never owned at once by one thread.
///
/// # Thread safety
/// One scope per draining thread, reached through a thread-specific pointer; it lives on the
/// stack of `ContextQueue.runDrains` and is never touched by another thread.
struct DrainScope {
    /// The actor job this thread is running inside a drain, nil between jobs.
    var runningJob: UnsafeRawPointer?
    /// Queues made active by an enqueue during the current job, waiting for this thread.
    var deferred: [ContextQueue] = []

    /// The scope of the calling thread, or nil outside a drain.
    static var current: UnsafeMutablePointer<DrainScope>? {
        pthread_getspecific(key)?.assumingMemoryBound(to: DrainScope.self)
    }

    /// Makes `scope` the calling thread's scope (nil to leave the drain).
    static func install(_ scope: UnsafeMutablePointer<DrainScope>?) {
        pthread_setspecific(key, scope.map { UnsafeRawPointer($0) })
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // No destructor: the pointer targets a stack frame that clears it before returning.
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether an enqueue of `job` from this thread may leave `queue`'s drain to this thread
    /// instead of Dispatch: only when `job` is a task and is the very job this thread is
    /// running. A task enqueues itself on another executor only as it suspends (a hop) — it
    /// cannot run in two places — so its job is about to return to the drain loop.
    ///
    /// Two simpler rules fail, each covered by a test (`ActorHandoffTests`):
    /// - Deferring every enqueue made while no task is current, taking that for "the job is
    ///   ending". It is not: a `Task.immediate` started inside the job, an isolated deinit (a
    ///   job without a task) and the deinits run as a finished task is released all enqueue
    ///   other jobs with no task current and then keep running — and a job that then waits
    ///   for the work it has started waits for itself (deadlock).
    /// - Comparing addresses alone is not enough: the runtime frees an isolated-deinit job
    ///   before running its body, so a deinit job that the body enqueues can get the same
    ///   address. Hence the check that `job` is a task.
    ///
    /// What remains: after a task finishes and is freed inside its last job, a deinit that
    /// starts a task which lands at the same address, hops to an idle model actor and is then
    /// waited for synchronously would still wait for itself — a deinit blocking on async
    /// work, which deadlocks on a busy pool anyway.
    static func deferIfEnding(_ job: UnownedJob, on queue: ContextQueue) -> Bool {
        guard let scope = current, let running = scope.pointee.runningJob, running == identity(of: job),
            taskID(of: job) != 0
        else { return false }
        scope.pointee.deferred.append(queue)
        return true
    }

    /// The address of the job `job` refers to.
    static func identity(of job: UnownedJob) -> UnsafeRawPointer {
        // Safe: `UnownedJob` is a single pointer to the runtime's job (the task itself for
        // task jobs); only the address is compared, never dereferenced.
        unsafeBitCast(job, to: UnsafeRawPointer.self)
    }

    /// Hands the calling thread's deferred drains to Dispatch; for a thread about to block.
    static func flushCurrent() {
        guard let scope = current, !scope.pointee.deferred.isEmpty else { return }
        scope.pointee.flushDeferred()
    }

    /// Hands every deferred queue's drain to Dispatch.
    mutating func flushDeferred() {
        for queue in deferred { queue.scheduleDrain() }
        deferred.removeAll(keepingCapacity: true)
    }
}

/// The ID of the task that `job` is, or 0 when the job is not a task (an isolated deinit).
///
/// The Swift runtime's own accessor, the one `UnownedJob.description` prints from; the
/// standard library offers no cheaper public way to tell a task from other jobs, and building
/// the description cost as much as the hop it was meant to speed up. Exported by the runtime
/// since Swift 5.9; a runtime without it fails to link rather than misbehave.
@_silgen_name("swift_task_getJobTaskId")
private func taskID(of job: UnownedJob) -> UInt64
