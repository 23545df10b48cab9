import Foundation

/// The lock that makes one store object the only writer of a store file: the file lock on
/// `-lock` against other processes, and a table of claimed store keys against other store
/// objects of this process.
///
/// Why both: the file lock is a POSIX record lock (see `PosixFile.tryLock()`), which a
/// forked child does not inherit but which also does not exclude within one process, and
/// which the process loses when it closes *any* descriptor of the file. So within the
/// process, a claim on the store's key is the lock: a store object claims it before it
/// opens `-lock`, and gives it back only after its descriptor is closed. An open of the
/// same store meanwhile waits — it can only be a store being torn down (a live open store
/// is shared through `FileStore.open`'s table, under the same key), and its close is short.
///
/// Without the claim, a store freed on one thread while another thread opens the same path
/// lets the new store read the file while the old one still writes its close record; the
/// new store then loses its lock when the old one closes its descriptor.
///
/// Invariants: a key is claimed by at most one store object at a time; its `-lock`
/// descriptor is closed before the claim ends.
final class StoreLock: Sendable {
    /// The claim this lock holds: the store's ``key(forStoreAt:)``.
    let claim: String
    /// The open, locked `-lock` file.
    let file: any StoreFile
    private let released = ClosedFlag()

    /// Wraps `file`, already locked, under the claim ``claim(_:)`` took.
    init(claim: String, file: any StoreFile) {
        self.claim = claim
        self.file = file
    }

    /// Closes the lock file, then gives the claim back. Idempotent.
    func release() {
        guard released.set() else { return }
        file.close()
        Self.claims.unclaim(claim)
    }

    /// The name of the store at `path` (symbolic links already resolved) in this process's
    /// tables: its folder's device and inode and its file name, so that two paths to one
    /// folder (a bind mount, or the folder spelled differently on a case-insensitive file
    /// system) give one key. Record locks would let two store objects of this process lock the same `-lock`
    /// through two such paths (`flock` refused the second); one key makes the second path
    /// find the first store instead. The path itself when the folder does not exist yet.
    static func key(forStoreAt path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        guard let id = PosixFileSystem().identity(ofPath: folder) else { return path }
        return "\(id.device):\(id.inode)/\(name)"
    }

    deinit {
        // A store always releases its lock; this keeps a key from staying claimed forever
        // if one is ever dropped on an error path.
        release()
    }

    // MARK: - The process's claims

    private static let claims = Claims()

    /// Claims `key` for this process's next store object, waiting while another store
    /// object of this process still holds it. Give it back with ``unclaim(_:)`` (before a
    /// ``StoreLock`` exists) or ``release()``.
    static func claim(_ key: String) { claims.claim(key) }

    /// Gives back a claim taken with ``claim(_:)`` that no ``StoreLock`` took over. The
    /// caller has closed every descriptor it opened on the store's `-lock`.
    static func unclaim(_ key: String) { claims.unclaim(key) }

    /// The claimed keys, with a condition to wait on.
    private final class Claims: @unchecked Sendable {
        // @unchecked Sendable: `keys` is read and written only between `condition.lock()`
        // and `condition.unlock()`. NSCondition is a pthread mutex and condition variable,
        // which Thread Sanitizer models.
        private let condition = NSCondition()
        private var keys: Set<String> = []

        func claim(_ key: String) {
            condition.lock()
            defer { condition.unlock() }
            while keys.contains(key) { condition.wait() }
            keys.insert(key)
        }

        func unclaim(_ key: String) {
            condition.lock()
            defer { condition.unlock() }
            let removed = keys.remove(key)
            precondition(removed != nil, "StoreLock: \(key) was given back without being claimed")
            condition.broadcast()
        }
    }
}
