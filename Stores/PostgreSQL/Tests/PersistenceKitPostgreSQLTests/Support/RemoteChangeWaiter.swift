import Foundation
import PersistenceKit
import Synchronization

/// A count shared with notification observers.
final class SharedCount: Sendable {
    let value = Mutex(0)
}

/// Counts the remote-change notifications a coordinator posts, and lets a test wait until a
/// number of them arrived (or a deadline passed).
final class RemoteChangeWaiter: @unchecked Sendable {
    // @unchecked Sendable: `token` is set once in init and read once in deinit.
    private let count = SharedCount()
    private var token: (any NSObjectProtocol)?

    init(_ coordinator: NSPersistentStoreCoordinator) {
        let count = self.count
        token = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: coordinator, queue: nil) { _ in
            count.value.withLock { $0 += 1 }
        }
    }

    deinit {
        if let token { NotificationCenter.default.removeObserver(token) }
    }

    /// The notifications received so far.
    var received: Int { count.value.withLock { $0 } }

    /// Waits until at least `n` notifications arrived; false when `seconds` passed first.
    func wait(for n: Int, seconds: Double = 10) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while received < n {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}

extension NSManagedObjectContext {
    /// The object `uri` names in this context's coordinator (another coordinator's ID).
    func object<T: NSManagedObject>(at uri: URL, as type: T.Type) throws -> T? {
        guard let id = persistentStoreCoordinator?.managedObjectID(forURIRepresentation: uri) else { return nil }
        return try existingObject(with: id) as? T
    }

    /// The object `uri` names, if registered here.
    func registered(at uri: URL) -> NSManagedObject? {
        guard let id = persistentStoreCoordinator?.managedObjectID(forURIRepresentation: uri) else { return nil }
        return registeredObject(for: id)
    }
}
