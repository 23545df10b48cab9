import Foundation

/// A value guarded by an `NSLock`, with `Synchronization.Mutex`'s shape.
///
/// Tests use this instead of `Mutex`: on Linux `Mutex` is built on futexes, which Thread
/// Sanitizer does not see, so CI's sanitizer run reported races on values the mutex did
/// guard. `NSLock` is a pthread mutex, which TSan intercepts.
public final class TestMutex<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value

    /// Creates a mutex holding `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
