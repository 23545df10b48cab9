import Foundation
import PersistenceKit
import Synchronization

/// A test store in front of another store (in-memory or file) that counts the reads of rows
/// by ID: single reads (`fetchRow`) and batch reads (`fetchRows(_:)`), each batch one pass.
/// Fetches by entity, counts and version checks pass through uncounted.
final class ReadCountingStore: PersistentStore {
    let base: any PersistentStore
    let rowReads = Atomic<Int>(0)
    let batchReads = Atomic<Int>(0)

    init(_ base: any PersistentStore) { self.base = base }

    /// Every read of rows by ID so far: single reads plus batch passes.
    var passes: Int { rowReads.load(ordering: .relaxed) + batchReads.load(ordering: .relaxed) }

    var identifier: String { base.identifier }
    var type: String { base.type }
    var url: URL? { base.url }
    var metadata: [String: String] { base.metadata }
    func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        try base.allocatePrimaryKeys(entity: entity, count: count)
    }
    func recordAllocatedKeys(entities: [Int32]) throws { try base.recordAllocatedKeys(entities: entities) }
    func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult { try base.commit(transaction) }
    func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow] { try base.fetchRows(entity: entity, filter: filter) }
    func fetchRows(entity: Int32, filter: StoreFilter?, order: [StoreSortKey], offset: Int, limit: Int) throws -> [StoreRow] {
        try base.fetchRows(entity: entity, filter: filter, order: order, offset: offset, limit: limit)
    }
    func countRows(entity: Int32, filter: StoreFilter?) throws -> Int { try base.countRows(entity: entity, filter: filter) }
    func containsRow(_ id: StoreRowID) throws -> Bool { try base.containsRow(id) }
    func rowVersion(_ id: StoreRowID) throws -> Int64? { try base.rowVersion(id) }

    func fetchRow(_ id: StoreRowID) throws -> StoreRow? {
        rowReads.add(1, ordering: .relaxed)
        return try base.fetchRow(id)
    }

    func fetchRows(_ ids: [StoreRowID]) throws -> [StoreRow] {
        batchReads.add(1, ordering: .relaxed)
        return try base.fetchRows(ids)
    }
}
