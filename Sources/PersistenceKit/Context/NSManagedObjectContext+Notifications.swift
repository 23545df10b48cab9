import Foundation

extension Notification.Name {
    /// Posted by a context when its objects changed (after `processPendingChanges()`), with
    /// the objects under ``NSInsertedObjectsKey``, ``NSUpdatedObjectsKey``,
    /// ``NSDeletedObjectsKey``, ``NSRefreshedObjectsKey``, ``NSInvalidatedObjectsKey`` or
    /// ``NSInvalidatedAllObjectsKey``. Posted on the context's queue; `object` is the context.
    public static let NSManagedObjectContextObjectsDidChange = Notification.Name("NSObjectsChangedInManagingContextNotification")
    /// Posted by a context at the start of a save, on its queue, with no user info.
    public static let NSManagedObjectContextWillSave = Notification.Name("NSManagingContextWillSaveChangesNotification")
    /// Posted by a context at the end of every save, on its queue, with the saved objects as
    /// sets of `NSManagedObject` under the inserted/updated/deleted keys (only the keys that
    /// have objects: none for a save that had nothing to write). Pass it to another
    /// context's `mergeChanges(fromContextDidSave:)`.
    public static let NSManagedObjectContextDidSave = Notification.Name("NSManagingContextDidSaveChangesNotification")
    /// Same as `NSManagedObjectContext.didSaveObjectIDsNotification`: posted after a save,
    /// with the saved objects' IDs.
    public static let NSManagedObjectContextDidSaveObjectIDs = NSManagedObjectContext.didSaveObjectIDsNotification
    /// Same as `NSManagedObjectContext.didMergeChangesObjectIDsNotification`: posted after a
    /// merge, with the merged objects' IDs.
    public static let NSManagedObjectContextDidMergeChangesObjectIDs =
        NSManagedObjectContext.didMergeChangesObjectIDsNotification
}

/// Key for inserted objects (a `Set<NSManagedObject>`) in context notifications.
public let NSInsertedObjectsKey = "inserted"
/// Key for updated objects in context notifications.
public let NSUpdatedObjectsKey = "updated"
/// Key for deleted objects in context notifications.
public let NSDeletedObjectsKey = "deleted"
/// Key for refreshed objects (refreshed, or updated by a merge) that have no unsaved changes
/// here, in objects-did-change; those that do are listed under ``NSUpdatedObjectsKey``.
public let NSRefreshedObjectsKey = "refreshed"
/// Key for objects removed from the context (for example inserts discarded by rollback).
public let NSInvalidatedObjectsKey = "invalidated"
/// Key present when a reset removed every object; its value is the array of their IDs.
public let NSInvalidatedAllObjectsKey = "invalidatedAll"
/// Key for inserted object IDs (a `Set<NSManagedObjectID>`) in object-ID notifications.
public let NSInsertedObjectIDsKey = "inserted_objectIDs"
/// Key for updated object IDs in object-ID notifications.
public let NSUpdatedObjectIDsKey = "updated_objectIDs"
/// Key for deleted object IDs in object-ID notifications.
public let NSDeletedObjectIDsKey = "deleted_objectIDs"
/// Key for refreshed object IDs in object-ID notifications.
public let NSRefreshedObjectIDsKey = "refreshed_objectIDs"
/// Key for invalidated object IDs in object-ID notifications.
public let NSInvalidatedObjectIDsKey = "invalidated_objectIDs"

extension NSManagedObjectContext {
    /// Same as `Notification.Name.NSManagedObjectContextObjectsDidChange`.
    public static let didChangeObjectsNotification = Notification.Name.NSManagedObjectContextObjectsDidChange
    /// Same as `Notification.Name.NSManagedObjectContextWillSave`.
    public static let willSaveObjectsNotification = Notification.Name.NSManagedObjectContextWillSave
    /// Same as `Notification.Name.NSManagedObjectContextDidSave`.
    public static let didSaveObjectsNotification = Notification.Name.NSManagedObjectContextDidSave
    /// Posted after a save with only object IDs (`Set<NSManagedObjectID>` under
    /// ``NSInsertedObjectIDsKey`` and friends), so it is safe to hand to any thread.
    public static let didSaveObjectIDsNotification = Notification.Name("NSManagedObjectContextDidSaveObjectIDsNotification")
    /// Posted by a context after it merged changes, with the merged object IDs.
    public static let didMergeChangesObjectIDsNotification = Notification.Name(
        "NSManagedObjectContextDidMergeChangesObjectIDsNotification")

    /// The user-info keys of context notifications, as Core Data's `NotificationKey`.
    public struct NotificationKey: RawRepresentable, Hashable, Sendable {
        /// The key string in the notification's user info.
        public let rawValue: String
        /// Creates a key from its string.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Inserted objects (`Set<NSManagedObject>`).
        public static let insertedObjects = NotificationKey(rawValue: NSInsertedObjectsKey)
        /// Updated objects.
        public static let updatedObjects = NotificationKey(rawValue: NSUpdatedObjectsKey)
        /// Deleted objects.
        public static let deletedObjects = NotificationKey(rawValue: NSDeletedObjectsKey)
        /// Refreshed objects (including updates merged from other contexts).
        public static let refreshedObjects = NotificationKey(rawValue: NSRefreshedObjectsKey)
        /// Objects removed from the context.
        public static let invalidatedObjects = NotificationKey(rawValue: NSInvalidatedObjectsKey)
        /// Present when a reset removed every object.
        public static let invalidatedAllObjects = NotificationKey(rawValue: NSInvalidatedAllObjectsKey)
        /// Inserted object IDs (`Set<NSManagedObjectID>`).
        public static let insertedObjectIDs = NotificationKey(rawValue: NSInsertedObjectIDsKey)
        /// Updated object IDs.
        public static let updatedObjectIDs = NotificationKey(rawValue: NSUpdatedObjectIDsKey)
        /// Deleted object IDs.
        public static let deletedObjectIDs = NotificationKey(rawValue: NSDeletedObjectIDsKey)
        /// Refreshed object IDs.
        public static let refreshedObjectIDs = NotificationKey(rawValue: NSRefreshedObjectIDsKey)
        /// Invalidated object IDs.
        public static let invalidatedObjectIDs = NotificationKey(rawValue: NSInvalidatedObjectIDsKey)
    }

    /// The object IDs one save inserted, updated and deleted.
    public struct ObjectIDChanges: Sendable, Hashable {
        /// IDs of inserted objects (permanent IDs).
        public var inserted: Set<NSManagedObjectID>
        /// IDs of updated objects.
        public var updated: Set<NSManagedObjectID>
        /// IDs of deleted objects.
        public var deleted: Set<NSManagedObjectID>
    }

    /// An asynchronous sequence of the object IDs of every save of this context that wrote
    /// something (a save with no changes posts its notifications but yields nothing here),
    /// from the moment of the call; it ends when the context is deallocated or the consumer
    /// stops.
    /// May be called from any thread.
    public func didSaveObjectIDs() -> AsyncStream<ObjectIDChanges> {
        let (stream, continuation) = AsyncStream<ObjectIDChanges>.makeStream(bufferingPolicy: .unbounded)
        let key = UUID()
        didSaveStreams.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            self?.didSaveStreams.withLock { _ = $0.removeValue(forKey: key) }
        }
        return stream
    }

    func publishDidSave(_ changes: ObjectIDChanges) {
        let continuations = didSaveStreams.withLock { Array($0.values) }
        for c in continuations { c.yield(changes) }
    }

    /// Posts a notification from this context (the caller is on the context's queue).
    func post(_ name: Notification.Name, userInfo: [AnyHashable: Any]?) {
        NotificationCenter.default.post(name: name, object: self, userInfo: userInfo)
    }

    /// Adds objects a refresh or merge reloaded to an objects-did-change `info`: under
    /// ``NSRefreshedObjectsKey`` those without unsaved changes, and under
    /// ``NSUpdatedObjectsKey`` (beside any updated objects already there) those still
    /// changed here, as Core Data's refreshed set holds only objects "not dirtied in the
    /// scope of this context": a changed object is never listed as refreshed.
    /// Returns the objects listed as refreshed.
    @discardableResult
    func addRefreshed(_ objects: Set<NSManagedObject>, to info: inout [AnyHashable: Any]) -> Set<NSManagedObject> {
        var refreshed = Set<NSManagedObject>()
        var updated = info[NSUpdatedObjectsKey] as? Set<NSManagedObject> ?? []
        for o in objects {
            if o.hasChangesUnchecked { updated.insert(o) } else { refreshed.insert(o) }
        }
        if !refreshed.isEmpty { info[NSRefreshedObjectsKey] = refreshed }
        if !updated.isEmpty { info[NSUpdatedObjectsKey] = updated }
        return refreshed
    }

    /// Posts an object-ID notification for a save or merge.
    func postObjectIDs(_ name: Notification.Name, _ changes: ObjectIDChanges, refreshed: Set<NSManagedObjectID> = []) {
        var info: [AnyHashable: Any] = [:]
        if !changes.inserted.isEmpty { info[NSInsertedObjectIDsKey] = changes.inserted }
        if !changes.updated.isEmpty { info[NSUpdatedObjectIDsKey] = changes.updated }
        if !changes.deleted.isEmpty { info[NSDeletedObjectIDsKey] = changes.deleted }
        if !refreshed.isEmpty { info[NSRefreshedObjectIDsKey] = refreshed }
        post(name, userInfo: info)
    }
}
