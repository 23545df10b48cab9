import Foundation
import PersistenceKit

/// A test store that wraps an ``InMemoryStore``: every requirement it does not implement
/// itself goes to `base`, so a test store states only what it changes (counting reads,
/// holding a commit).
protocol ForwardingStore: PersistentStore {
    var base: InMemoryStore { get }
}

extension ForwardingStore {
    var identifier: String { base.identifier }
    var type: String { base.type }
    var url: URL? { base.url }
    var metadata: [String: String] { base.metadata }
    func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        try base.allocatePrimaryKeys(entity: entity, count: count)
    }
    func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult { try base.commit(transaction) }
    func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow] { try base.fetchRows(entity: entity, filter: filter) }
    func countRows(entity: Int32, filter: StoreFilter?) throws -> Int { try base.countRows(entity: entity, filter: filter) }
    func fetchRow(_ id: StoreRowID) throws -> StoreRow? { try base.fetchRow(id) }
}

/// Merges every save of `source` into `target` on `target`'s queue, synchronously from the
/// did-save observer (Core Data's pattern); remove the returned token when done.
func mergeSaves(of source: NSManagedObjectContext, into target: NSManagedObjectContext) -> any NSObjectProtocol {
    NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: source, queue: nil) { note in
        target.performAndWait { target.mergeChanges(fromContextDidSave: note) }
    }
}
