#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`.
///
/// Why not `Synchronization.Mutex`: on Linux it is built on futexes, which Thread Sanitizer
/// does not model, so TSan reported races on state that the mutex correctly protected
/// (seen in ContextQueue's job buffer). A pthread mutex is intercepted by TSan, keeps CI's
/// sanitizer run meaningful, and costs about the same uncontended.
///
/// Give it a value with storage: a zero-sized `Value` (`Void`) has no address of its own, and
/// Thread Sanitizer then sees `withLock`'s access to it as an access to the lock object's
/// header, which other threads read without the mutex (a false report, seen in CI).
final class Lock<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read or written inside `withLock`, while
    // `mutex` is held, so accesses from different threads never overlap.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Unchecked: the mutex already makes every access exclusive (a nested `withLock` on the
    // same lock deadlocks before any overlap), and the run-time check it replaced was a call
    // into the runtime and a thread-local lookup on every `withLock` (measured: ~5% of a hop
    // between two model actors, which takes three locks).
    @exclusivity(unchecked) private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        #if os(Linux)
        // Adaptive: spin briefly before sleeping. The context queue's lock is taken by the
        // enqueuing and the draining thread within the same microsecond; a plain mutex sent
        // one of them into the kernel each time (measured: actor hops took ~2x longer).
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #else
        pthread_mutex_init(mutex, nil)
        #endif
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
