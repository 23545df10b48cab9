import Foundation

/// The lock that makes one store object the only writer of a store file: the file lock on
/// `-lock` against other processes, and a table of lock paths against other store objects
/// of this process.
///
/// Why both: the file lock is a POSIX record lock (see `PosixFile.tryLock()`), which a
/// forked child does not inherit but which also does not exclude within one process, and
/// which the process loses when it closes *any* descriptor of the file. So within the
/// process, the path is the lock: a store object claims it before it opens `-lock`, and
/// gives it back only after its descriptor is closed. An open of the same path meanwhile
/// waits — it can only be a store being torn down (a live open store is shared through
/// `FileStore.open`'s table, not opened twice), and its close is short.
///
/// (Found in review: a store freed on one thread while another thread opened the same path
/// let the new store read the file while the old one still wrote its close record, then
/// lost its lock when the old one closed its descriptor.)
///
/// Invariants: a path is claimed by at most one ``StoreLock`` at a time; the descriptor of
/// a claimed path is closed before the claim ends.
final class StoreLock: Sendable {
    /// The path of the `-lock` file.
    let path: String
    /// The open, locked `-lock` file.
    let file: any StoreFile
    private let released = ClosedFlag()

    /// Wraps `file`, already locked, under the claim on `path` that ``claim(_:)`` took.
    init(path: String, file: any StoreFile) {
        self.path = path
        self.file = file
    }

    /// Closes the lock file, then gives the claim back. Idempotent.
    func release() {
        guard released.set() else { return }
        file.close()
        Self.claims.unclaim(path)
    }

    deinit {
        // A store always releases its lock; this keeps a path from staying claimed forever
        // if one is ever dropped on an error path.
        release()
    }

    // MARK: - The process's claims

    private static let claims = Claims()

    /// Claims `path` for this process's next store object, waiting while another store
    /// object of this process still holds it. Give it back with ``unclaim(_:)`` (before a
    /// ``StoreLock`` exists) or ``release()``.
    static func claim(_ path: String) { claims.claim(path) }

    /// Gives back a claim taken with ``claim(_:)`` that no ``StoreLock`` took over. The
    /// caller has closed every descriptor it opened on `path`.
    static func unclaim(_ path: String) { claims.unclaim(path) }

    /// The claimed paths, with a condition to wait on.
    private final class Claims: @unchecked Sendable {
        // @unchecked Sendable: `paths` is read and written only between `condition.lock()`
        // and `condition.unlock()`. NSCondition is a pthread mutex and condition variable,
        // which Thread Sanitizer models.
        private let condition = NSCondition()
        private var paths: Set<String> = []

        func claim(_ path: String) {
            condition.lock()
            defer { condition.unlock() }
            while paths.contains(path) { condition.wait() }
            paths.insert(path)
        }

        func unclaim(_ path: String) {
            condition.lock()
            defer { condition.unlock() }
            let removed = paths.remove(path)
            precondition(removed != nil, "StoreLock: \(path) was given back without being claimed")
            condition.broadcast()
        }
    }
}
