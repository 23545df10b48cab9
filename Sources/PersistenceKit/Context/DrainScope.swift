#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What one thread that drains context queues knows about its own run: whether it is inside
/// an actor job right now, and which idle queues an ending job handed to it.
///
/// # Why
/// When an actor on one context queue awaits an actor on another, the Swift runtime suspends
/// the caller's task and enqueues it on the callee's executor as the caller's job ends. The
/// runtime's own actors take over the thread there ("switching"); a custom executor cannot,
/// so each such hop used to cost a round trip through Dispatch's global queue and a thread
/// wake-up (measured: two model actors ping-ponging took ~6x a plain actor's hop). Instead,
/// the enqueue notes the callee's queue here, and once the caller's job has returned, the
/// same thread drains the callee: no Dispatch round trip, and the caller's queue is released
/// first, so the two queues are still never owned at once by one thread.
///
/// # Thread safety
/// One scope per draining thread, reached through a thread-specific pointer; it lives on the
/// stack of `ContextQueue.runDrains` and is never touched by another thread.
struct DrainScope {
    /// True while the thread runs an actor job inside a drain.
    var runningExecutorJob = false
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

    /// Whether an enqueue from this thread may leave `queue`'s drain to this thread instead
    /// of Dispatch: only while an actor job runs here and its task is no longer current —
    /// the runtime clears the current task right before it enqueues a task that is
    /// suspending (a hop) or resumes the waiters of a task that has finished, so the job is
    /// about to return to the drain loop. A job's own code (creating a `Task`, resuming a
    /// continuation) runs with its task current and keeps the Dispatch path, so it may block
    /// on what it started without deadlocking.
    static func deferIfEnding(_ queue: ContextQueue) -> Bool {
        guard let scope = current, scope.pointee.runningExecutorJob else { return false }
        guard withUnsafeCurrentTask(body: { $0 == nil }) else { return false }
        scope.pointee.deferred.append(queue)
        return true
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
