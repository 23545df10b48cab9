import Foundation

/// The store option that turns on persistent history (as Core Data's key of this name):
/// set it to true in the store's description (`description.setOption(true, forKey:
/// NSPersistentHistoryTrackingKey)`) and the store records every save and batch request it
/// commits, in the same atomic step as the rows (see ``NSPersistentHistoryChangeRequest``).
public let NSPersistentHistoryTrackingKey = "NSPersistentHistoryTrackingKey"

/// The store option that makes the coordinator post ``Foundation/Notification/Name/NSPersistentStoreRemoteChange``
/// after every commit to the store (as Core Data's key of this name). Set it to true.
public let NSPersistentStoreRemoteChangeNotificationPostOptionKey = "NSPersistentStoreRemoteChangeNotificationOptionKey"

/// In a remote change notification's `userInfo`: the store's history token after the commit
/// (an ``NSPersistentHistoryToken``), when the store tracks history.
public let NSPersistentHistoryTokenKey = "historyToken"

/// In a remote change notification's `userInfo`: the store's URL, when it has one.
public let NSPersistentStoreURLKey = "storeURL"

extension Notification.Name {
    /// Posted by a coordinator after each commit (a save or a batch request, through it or
    /// through another coordinator of the process sharing the store) to a store it loaded
    /// with ``NSPersistentStoreRemoteChangeNotificationPostOptionKey`` set to true: `object`
    /// is the coordinator; `userInfo` holds ``NSStoreUUIDKey`` (the store's
    /// identifier), ``NSPersistentStoreURLKey`` (its URL, if any) and, when the store tracks
    /// history, ``NSPersistentHistoryTokenKey``. Posted on the committing thread, after the
    /// commit; fetch the history after your last token to see what changed. Also posted,
    /// whatever the option, when a store reports rows another process committed (see
    /// ``RemoteChangeReporting``), after the merging contexts were handed the change.
    public static let NSPersistentStoreRemoteChange = Notification.Name("NSPersistentStoreRemoteChangeNotification")
}

/// Whether a store option's value means "on": `"1"`, `"true"` or `"YES"` (any case), as
/// `NSPersistentStoreDescription.setOption(_:forKey:)` writes `true`.
func storeOptionIsOn(_ value: String?) -> Bool {
    guard let value else { return false }
    return ["1", "true", "yes"].contains(value.lowercased())
}
