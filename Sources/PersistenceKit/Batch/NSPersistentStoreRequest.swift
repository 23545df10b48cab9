import Foundation

/// The kinds of request a context executes against its store with
/// `NSManagedObjectContext.execute(_:)`, with Core Data's raw values.
public enum NSPersistentStoreRequestType: UInt, Sendable, Hashable {
    /// A fetch request (not executed through `execute(_:)` here: use `fetch(_:)`).
    case fetchRequestType = 1
    /// A save request (saves go through `save()` here).
    case saveRequestType = 2
    /// ``NSBatchInsertRequest``.
    case batchInsertRequestType = 5
    /// ``NSBatchUpdateRequest``.
    case batchUpdateRequestType = 6
    /// ``NSBatchDeleteRequest``.
    case batchDeleteRequestType = 7
    /// ``NSPersistentHistoryChangeRequest`` (Core Data gives it no case of its own; this one
    /// is PersistenceKit's).
    case persistentHistoryChangeRequestType = 8
}

/// A request a context hands to its store as a whole: the base class of the batch
/// requests (``NSBatchInsertRequest``, ``NSBatchUpdateRequest``, ``NSBatchDeleteRequest``).
///
/// Execute one with `NSManagedObjectContext.execute(_:)`, which returns an
/// ``NSPersistentStoreResult`` of the matching subclass. A batch request changes the store
/// in one commit, without making managed objects: no context learns of the change until it
/// merges the IDs the request reports
/// (`NSManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`).
///
/// Not `Sendable`: build and execute a request on one thread. Only the library's own
/// subclasses can be executed.
public class NSPersistentStoreRequest: CustomStringConvertible {
    /// What kind of request this is.
    public var requestType: NSPersistentStoreRequestType {
        programmerError("PersistenceKit: \(type(of: self)) is not a request the store can execute; use a batch request.")
    }

    init() {}

    /// Runs the request against the primary store of `context`'s coordinator, in one
    /// commit. Called on the context's queue by `execute(_:)`.
    func run(in context: NSManagedObjectContext) throws -> NSPersistentStoreResult {
        programmerError("PersistenceKit: \(type(of: self)) is not a request the store can execute; use a batch request.")
    }

    /// A readable summary for logs and messages.
    public var description: String { "\(type(of: self))" }
}
