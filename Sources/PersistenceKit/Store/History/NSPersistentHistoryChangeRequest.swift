import Foundation

/// What a history request returns, with Core Data's raw values.
public enum NSPersistentHistoryResultType: Int, Sendable, Hashable {
    /// `true` once the request ran.
    case statusOnly = 0
    /// The changed objects' IDs (`[NSManagedObjectID]`), each once, in commit order.
    case objectIDs = 1
    /// A fetch: the number of transactions (`Int`); a delete: the number of transactions
    /// deleted.
    case count = 2
    /// The transactions (`[NSPersistentHistoryTransaction]`), without their changes.
    case transactionsOnly = 3
    /// The changes (`[NSPersistentHistoryChange]`), in commit order.
    case changesOnly = 4
    /// The transactions with their changes (the default).
    case transactionsAndChanges = 5
}

/// A request to fetch or delete persistent history, executed with
/// `NSManagedObjectContext.execute(_:)` (Core Data's class of this name). The stores must be
/// loaded with ``NSPersistentHistoryTrackingKey`` set to true.
///
/// ```swift
/// let request = NSPersistentHistoryChangeRequest.fetchHistory(after: lastToken)
/// let result = try context.execute(request) as? NSPersistentHistoryResult
/// for transaction in result?.result as? [NSPersistentHistoryTransaction] ?? [] {
///     viewContext.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
///     lastToken = transaction.token
/// }
/// ```
///
/// A token, or a transaction, marks the point right after its transaction: a fetch after it
/// returns the later transactions; a delete before it removes that transaction and every
/// earlier one. A date: a fetch returns transactions committed after it, a delete removes
/// those committed before it.
///
/// Not `Sendable`: build and execute a request on one thread.
public final class NSPersistentHistoryChangeRequest: NSPersistentStoreRequest {
    private enum Operation {
        case fetch(after: Bound)
        case delete(before: Bound)
    }

    private enum Bound {
        case start
        case token(NSPersistentHistoryToken)
        case date(Date)
    }

    private let operation: Operation

    /// What executing the request returns. Default `.transactionsAndChanges`.
    public var resultType: NSPersistentHistoryResultType = .transactionsAndChanges

    private init(_ operation: Operation) {
        self.operation = operation
    }

    /// See ``NSPersistentStoreRequest/requestType``.
    public override var requestType: NSPersistentStoreRequestType { .persistentHistoryChangeRequestType }

    /// The token the request fetches after or deletes before, if it was made with one.
    public var token: NSPersistentHistoryToken? {
        switch operation {
        case let .fetch(.token(t)), let .delete(.token(t)): t
        default: nil
        }
    }

    /// Fetches the transactions after `token`; every kept transaction when `token` is nil.
    public static func fetchHistory(after token: NSPersistentHistoryToken?) -> NSPersistentHistoryChangeRequest {
        NSPersistentHistoryChangeRequest(.fetch(after: token.map(Bound.token) ?? .start))
    }

    /// Fetches the transactions committed after `date`.
    public static func fetchHistory(after date: Date) -> NSPersistentHistoryChangeRequest {
        NSPersistentHistoryChangeRequest(.fetch(after: .date(date)))
    }

    /// Fetches the transactions after `transaction`; every kept transaction when it is nil.
    public static func fetchHistory(after transaction: NSPersistentHistoryTransaction?) -> NSPersistentHistoryChangeRequest {
        fetchHistory(after: transaction?.token)
    }

    /// Deletes `token`'s transaction and every earlier one; all history when `token` is nil.
    public static func deleteHistory(before token: NSPersistentHistoryToken?) -> NSPersistentHistoryChangeRequest {
        NSPersistentHistoryChangeRequest(.delete(before: token.map(Bound.token) ?? .start))
    }

    /// Deletes the transactions committed before `date`.
    public static func deleteHistory(before date: Date) -> NSPersistentHistoryChangeRequest {
        NSPersistentHistoryChangeRequest(.delete(before: .date(date)))
    }

    /// Deletes `transaction` and every earlier one; all history when it is nil.
    public static func deleteHistory(before transaction: NSPersistentHistoryTransaction?) -> NSPersistentHistoryChangeRequest {
        deleteHistory(before: transaction?.token)
    }

    /// The bound as `store` counts: a token names each store's own transaction number (a
    /// store the token does not name is read from its start).
    private func storeBound(_ bound: Bound, for store: any PersistentStore) -> StoreHistoryBound {
        switch bound {
        case .start: return .all
        case let .token(t): return t.storeTokens[store.identifier].map(StoreHistoryBound.token) ?? .all
        case let .date(d): return .date(d)
        }
    }

    override func run(in context: NSManagedObjectContext) throws -> NSPersistentStoreResult {
        guard let coordinator = context.persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "a history request needs a context with a coordinator.")
        }
        let stores = coordinator.persistentStores
        if stores.isEmpty {
            throw CoreDataError(.coreData, "a history request failed: the coordinator has no persistent stores. Load a store first.")
        }
        switch operation {
        case let .delete(bound):
            var removed = 0
            for store in stores {
                if case let .token(t) = bound, t.storeTokens[store.identifier] == nil { continue }
                try coordinator.refuseWrites(to: store, "deleting persistent history")
                removed += try store.deleteHistory(before: storeBound(bound, for: store))
            }
            return NSPersistentHistoryResult(resultType, resultType == .count ? removed : true)
        case let .fetch(bound):
            var transactions: [NSPersistentHistoryTransaction] = []
            let withChanges = resultType != .transactionsOnly
            for store in stores {
                for record in try store.fetchHistory(after: storeBound(bound, for: store)) {
                    transactions.append(
                        NSPersistentHistoryTransaction(
                            record: record, storeID: store.identifier, model: coordinator.managedObjectModel, includesChanges: withChanges))
                }
            }
            if stores.count > 1 { transactions.sort { $0.timestamp < $1.timestamp } }
            switch resultType {
            case .statusOnly: return NSPersistentHistoryResult(resultType, true)
            case .count: return NSPersistentHistoryResult(resultType, transactions.count)
            case .transactionsOnly, .transactionsAndChanges: return NSPersistentHistoryResult(resultType, transactions)
            case .changesOnly: return NSPersistentHistoryResult(resultType, transactions.flatMap { $0.changes ?? [] })
            case .objectIDs:
                var seen = Set<NSManagedObjectID>()
                var ids: [NSManagedObjectID] = []
                for t in transactions {
                    for change in t.record.changes {
                        if let id = t.objectID(of: change.row), seen.insert(id).inserted { ids.append(id) }
                    }
                }
                return NSPersistentHistoryResult(resultType, ids)
            }
        }
    }

    /// A readable summary for logs and messages.
    public override var description: String {
        switch operation {
        case let .fetch(bound): "NSPersistentHistoryChangeRequest(fetch after \(bound), \(resultType))"
        case let .delete(bound): "NSPersistentHistoryChangeRequest(delete before \(bound), \(resultType))"
        }
    }
}

/// The result of an ``NSPersistentHistoryChangeRequest`` (Core Data's class of this name).
public final class NSPersistentHistoryResult: NSPersistentStoreResult {
    /// The result type the request asked for.
    public let resultType: NSPersistentHistoryResultType
    /// What the result type says (see ``NSPersistentHistoryResultType``).
    public let result: Any?

    init(_ resultType: NSPersistentHistoryResultType, _ result: Any?) {
        self.resultType = resultType
        self.result = result
    }
}
