import Foundation

/// What `NSManagedObjectContext.execute(_:)` returns: the base class of the batch
/// requests' results. Cast it to the result class of the request executed
/// (`as? NSBatchDeleteResult`).
///
/// Not `Sendable` (its ``result`` is untyped): read it on the thread that executed the request.
public class NSPersistentStoreResult {
    init() {}
}

/// The result of an ``NSBatchInsertRequest``.
public final class NSBatchInsertResult: NSPersistentStoreResult {
    /// The result type the request asked for.
    public let resultType: NSBatchInsertRequestResultType
    /// `true` (a `Bool`) for `.statusOnly`; the number of rows inserted (an `Int`) for
    /// `.count`; their `[NSManagedObjectID]`, in the order the request gave the objects, for
    /// `.objectIDs`.
    public let result: Any?

    /// `ids` is read only for the result type that lists them.
    init(_ resultType: NSBatchInsertRequestResultType, count: Int, ids: [NSManagedObjectID]) {
        self.resultType = resultType
        switch resultType {
        case .statusOnly: result = true
        case .count: result = count
        case .objectIDs: result = ids
        }
    }
}

/// The result of an ``NSBatchUpdateRequest``.
public final class NSBatchUpdateResult: NSPersistentStoreResult {
    /// The result type the request asked for.
    public let resultType: NSBatchUpdateRequestResultType
    /// `true` (a `Bool`) for `.statusOnlyResultType`; the number of rows updated (an `Int`)
    /// for `.updatedObjectsCountResultType`; their `[NSManagedObjectID]`, in primary-key
    /// order, for `.updatedObjectIDsResultType`.
    public let result: Any?

    /// `ids` is read only for the result type that lists them.
    init(_ resultType: NSBatchUpdateRequestResultType, count: Int, ids: [NSManagedObjectID]) {
        self.resultType = resultType
        switch resultType {
        case .statusOnlyResultType: result = true
        case .updatedObjectsCountResultType: result = count
        case .updatedObjectIDsResultType: result = ids
        }
    }
}

/// The result of an ``NSBatchDeleteRequest``.
public final class NSBatchDeleteResult: NSPersistentStoreResult {
    /// The result type the request asked for.
    public let resultType: NSBatchDeleteRequestResultType
    /// `true` (a `Bool`) for `.resultTypeStatusOnly`; the number of rows deleted (an `Int`)
    /// for `.resultTypeCount`; their `[NSManagedObjectID]` for `.resultTypeObjectIDs`: the
    /// rows the request named, in primary-key order, then the rows its cascade delete rules
    /// reached. Both count the cascaded rows.
    public let result: Any?

    /// `ids` is read only for the result type that lists them.
    init(_ resultType: NSBatchDeleteRequestResultType, count: Int, ids: [NSManagedObjectID]) {
        self.resultType = resultType
        switch resultType {
        case .resultTypeStatusOnly: result = true
        case .resultTypeCount: result = count
        case .resultTypeObjectIDs: result = ids
        }
    }
}
