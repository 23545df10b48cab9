import Foundation

/// What a fetched results controller does with its context's notifications.
protocol FetchedResultsChangeHandling: AnyObject {
    /// Handles an `NSManagedObjectContextObjectsDidChange` of the controller's context.
    func contextObjectsDidChange(_ note: Notification)
    /// Handles an `NSManagedObjectContextDidSave` of the controller's context.
    func contextDidSave()
}

/// A weak reference to a controller, for the notification observers' closures, which must
/// be `Sendable`: the controller must not be kept alive by its own observers, and is not
/// `Sendable`.
final class FetchedResultsObserverTarget: @unchecked Sendable {
    // @unchecked Sendable: `handler` is set once, in `init`, and only read after that, by
    // the observers of the controller's context's objects-did-change and did-save
    // notifications. The context posts both only on its own queue, and NotificationCenter
    // runs an observer with no queue on the posting thread, so the controller is only
    // reached on its context's queue — the queue it is used on. Loading a weak reference
    // is itself safe from any thread.
    private(set) weak var handler: (any FetchedResultsChangeHandling)?

    init(_ handler: any FetchedResultsChangeHandling) {
        self.handler = handler
    }
}
