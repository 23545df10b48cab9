import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The context whose `perform` or `performAndWait` block runs on this thread, which
/// `NSFetchRequest.execute()` fetches in (as Core Data's runs in "the current context").
///
/// A thread-specific slot holds the context unretained: it is set only while the block runs
/// and restored to what it held before (a block of one context may call `performAndWait` on
/// another), and `with(_:_:)` keeps the context alive for that time, so a read never sees
/// a context that is gone.
enum CurrentContext {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // Cannot fail short of the process running out of keys (PTHREAD_KEYS_MAX, 1024 on
        // Linux): there is no fallback for that, and a trap names it.
        precondition(pthread_key_create(&key, nil) == 0, "PersistenceKit: no thread-specific key left for the current context")
        return key
    }()

    /// The context whose block runs on this thread, if any.
    static var context: NSManagedObjectContext? {
        pthread_getspecific(key).map { Unmanaged<NSManagedObjectContext>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` with `context` as this thread's current context.
    @inline(__always)
    static func with<T, E: Error>(_ context: NSManagedObjectContext, _ body: () throws(E) -> T) throws(E) -> T {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(context).toOpaque())
        defer {
            pthread_setspecific(key, previous)
            withExtendedLifetime(context) {}
        }
        return try body()
    }
}
