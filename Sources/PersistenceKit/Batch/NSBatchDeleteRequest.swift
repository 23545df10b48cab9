import Foundation

/// What an ``NSBatchDeleteRequest`` returns in its ``NSBatchDeleteResult``.
public enum NSBatchDeleteRequestResultType: UInt, Sendable, Hashable {
    /// `true` once the rows are deleted.
    case resultTypeStatusOnly = 0
    /// The IDs of the rows deleted.
    case resultTypeObjectIDs = 1
    /// The number of rows deleted.
    case resultTypeCount = 2
}

/// Deletes the rows a fetch request matches, or rows named by ID, straight in the store, in
/// one commit, without making managed objects: Core Data's batch delete.
///
/// ```swift
/// let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Book")
/// fetch.predicate = NSPredicate(format: "pages < %d", 10)
/// let request = NSBatchDeleteRequest(fetchRequest: fetch)
/// request.resultType = .resultTypeObjectIDs
/// ```
///
/// Relationships stay consistent in the store, as in Core Data's SQL store: the rows
/// linking to a deleted row no longer list it (nullify), and a cascade rule deletes the
/// rows it reaches, recursively (they are counted and listed in the result too). A deny
/// rule whose relationship still has rows that are not deleted too makes the request throw
/// and delete nothing. A "no action" rule leaves the other ends alone, as it does in a save.
/// Validation does not run, as in Core Data.
///
/// Contexts are not told: merge the IDs (``NSBatchDeleteRequestResultType/resultTypeObjectIDs``)
/// under `NSDeletedObjectIDsKey`; the objects a context holds for them then become
/// inaccessible.
///
/// When another writer changes a row between the request's read and its commit, the
/// request reads the rows again (up to 16 times).
public final class NSBatchDeleteRequest: NSPersistentStoreRequest {
    /// How the rows to delete are chosen.
    private enum Selection {
        /// A fetch request's entity and predicate, offset and limit (read when executed).
        case fetch(resolve: (NSManagedObjectModel) throws -> NSEntityDescription, filter: () -> FetchFilter?, window: () -> (Int, Int))
        case ids([NSManagedObjectID])
    }

    private let selection: Selection
    /// What the result holds. Defaults to ``NSBatchDeleteRequestResultType/resultTypeStatusOnly``.
    public var resultType: NSBatchDeleteRequestResultType = .resultTypeStatusOnly

    /// A request deleting the rows `fetchRequest` matches, read in the store: its entity,
    /// predicate (which must run in the store, as for ``NSBatchUpdateRequest/predicate``),
    /// `fetchOffset` and `fetchLimit` (in primary-key order) count; sort order, result type
    /// and pending changes do not. The request is read when this one is executed.
    public init<ResultType>(fetchRequest: NSFetchRequest<ResultType>) {
        selection = .fetch(
            resolve: { model in try fetchRequest.resolveEntity(in: model) }, filter: { fetchRequest.filter },
            window: { (fetchRequest.fetchOffset, fetchRequest.fetchLimit) })
    }

    /// A request deleting the rows of `objectIDs`, all of one entity and saved in the
    /// context's store (IDs of rows already gone are skipped).
    public init(objectIDs: [NSManagedObjectID]) {
        selection = .ids(objectIDs)
    }

    /// ``NSPersistentStoreRequestType/batchDeleteRequestType``.
    public override var requestType: NSPersistentStoreRequestType { .batchDeleteRequestType }

    /// A readable summary for logs and messages.
    public override var description: String { "NSBatchDeleteRequest(resultType: \(resultType))" }

    override func run(in context: NSManagedObjectContext) throws -> NSPersistentStoreResult {
        let pass = try BatchStorePass(context: context, request: "batch delete")
        let read: () throws -> [StoreRow]
        switch selection {
        case let .fetch(resolve, filter, window):
            let entity = try resolve(pass.model)
            let storeFilter = try pass.storeFilter(filter(), on: entity)
            let (offset, limit) = window()
            read = {
                offset > 0 || limit > 0
                    ? try pass.store.fetchRows(entity: entity.index, filter: storeFilter, order: [], offset: offset, limit: limit)
                    : try pass.store.fetchRows(entity: entity.index, filter: storeFilter)
            }
        case let .ids(ids):
            let rows = try Self.rows(of: ids, pass)
            read = { try pass.store.fetchRows(rows) }
        }
        var deleted: [StoreRowID] = []
        _ = try pass.commit {
            let rows = try read()
            let all = try BatchDeleteClosure(rows, pass)
            deleted = all.order
            var t = StoreTransaction()
            t.deletes = all.rows.map { ($0.id, $0.version) }
            return t
        }
        let ids = resultType == .resultTypeObjectIDs ? pass.objectIDs(deleted) : []
        return NSBatchDeleteResult(resultType, count: deleted.count, ids: ids)
    }

    /// The rows of `ids`, in primary-key order, without repeats.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` when an ID is temporary, of another store or
    ///   coordinator, or of another entity than the first.
    private static func rows(of ids: [NSManagedObjectID], _ pass: BatchStorePass) throws -> [StoreRowID] {
        guard let first = ids.first else { return [] }
        var rows = Set<StoreRowID>()
        for id in ids {
            guard let row = id.rowID, id.persistentStoreIdentifier == pass.store.identifier, pass.coordinator.owns(id) else {
                throw CoreDataError(
                    .coreData, objectID: id,
                    "batch delete: \(id) is not a saved object of this context's store; save it first, or leave it out.")
            }
            guard id.entity === first.entity else {
                throw CoreDataError(
                    .coreData, objectID: id,
                    "batch delete: \(id) is a '\(id.entity.name)', but the first ID is a '\(first.entity.name)'; a batch delete "
                        + "by IDs takes objects of one entity.")
            }
            rows.insert(row)
        }
        return rows.sorted()
    }
}
