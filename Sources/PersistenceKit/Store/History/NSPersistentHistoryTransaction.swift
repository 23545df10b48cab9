import Foundation

/// One committed save or batch request, as persistent history recorded it (Core Data's
/// class of this name). Fetched with ``NSPersistentHistoryChangeRequest``.
///
/// Not `Sendable` (its changes' tombstones hold untyped values): use it on the thread that
/// fetched it, and carry ``token`` or ``objectIDNotification()``'s IDs elsewhere.
public final class NSPersistentHistoryTransaction: CustomStringConvertible {
    /// The transaction as the store keeps it.
    let record: StoreHistoryTransaction
    /// The model its changes' objects and properties belong to.
    let model: NSManagedObjectModel
    /// Whether ``changes`` is given (not for `.transactionsOnly` results).
    let includesChanges: Bool

    /// The identifier of the store that committed it.
    public let storeID: String

    init(record: StoreHistoryTransaction, storeID: String, model: NSManagedObjectModel, includesChanges: Bool) {
        self.record = record
        self.storeID = storeID
        self.model = model
        self.includesChanges = includesChanges
    }

    /// When the store committed it.
    public var timestamp: Date { record.timestamp }
    /// The saving context's `transactionAuthor`, if it had one.
    public var author: String? { record.author }
    /// The saving context's `name`, if it had one.
    public var contextName: String? { record.contextName }
    /// Its number in its store: increases with every transaction, never reused.
    public var transactionNumber: Int64 { Int64(record.token) }
    /// The point in history right after this transaction: fetch after it for what came later.
    public var token: NSPersistentHistoryToken { NSPersistentHistoryToken(storeTokens: [storeID: record.token]) }

    /// The rows it changed, in the order the store applied them; `nil` when the request's
    /// result type was `.transactionsOnly`. Each read makes new change objects.
    public var changes: [NSPersistentHistoryChange]? {
        guard includesChanges else { return nil }
        return record.changes.indices.map { NSPersistentHistoryChange(transaction: self, index: $0) }
    }

    /// A did-save notification naming this transaction's objects by ID
    /// (``NSInsertedObjectIDsKey``, ``NSUpdatedObjectIDsKey``, ``NSDeletedObjectIDsKey``, each a
    /// `Set<NSManagedObjectID>`), which `mergeChanges(fromContextDidSave:)` merges into a
    /// context of any coordinator on the same store.
    public func objectIDNotification() -> Notification {
        var inserted = Set<NSManagedObjectID>()
        var updated = Set<NSManagedObjectID>()
        var deleted = Set<NSManagedObjectID>()
        for change in record.changes {
            guard let id = objectID(of: change.row) else { continue }
            switch change.kind {
            case .insert: inserted.insert(id)
            case .update: updated.insert(id)
            case .delete: deleted.insert(id)
            }
        }
        return Notification(
            name: .NSManagedObjectContextDidSave, object: nil,
            userInfo: [NSInsertedObjectIDsKey: inserted, NSUpdatedObjectIDsKey: updated, NSDeletedObjectIDsKey: deleted])
    }

    /// The object ID of `row` in this transaction's store.
    func objectID(of row: StoreRowID) -> NSManagedObjectID? {
        guard let entity = model.entity(at: row.entity) else { return nil }
        return NSManagedObjectID(entity: entity, row: row, store: storeID)
    }

    /// A readable summary for logs and messages.
    public var description: String {
        "NSPersistentHistoryTransaction(\(record.token), author: \(author ?? "nil"), context: \(contextName ?? "nil"), "
            + "\(record.changes.count) changes)"
    }
}
