import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// The store reads its file through a memory mapping (`StoreImage`) that grows with the
/// file: rows written past the first mapping read back, before and after a reopen.
@Suite("The mapped image of the store file") struct StoreImageTests {
    /// Five 20 MiB values (past the 64 MiB first mapping), each read back after its save and
    /// all after a reopen.
    @Test(arguments: [FileStore.Durability.full, .normal])
    func aStoreThatOutgrowsItsMappingReadsEveryRowBack(durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [FSBlob.self])
        let store = try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(durability: durability))
        let entity = model.entities[0].index
        let chunk = 20 << 20
        var expected: [Int64: UInt8] = [:]
        for i in 0..<5 {  // 100 MiB: past the 64 MiB first mapping
            let key = try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound
            var transaction = StoreTransaction()
            let fill = UInt8(i + 1)
            transaction.inserts = [StoreRow(id: StoreRowID(entity: entity, primaryKey: key), version: 0, values: [.data(Data(repeating: fill, count: chunk))])]
            _ = try store.commit(transaction)
            expected[key] = fill
            for row in try store.fetchRows(entity: entity, filter: nil) {
                guard case let .data(d) = row.values[0] else { Issue.record("not data"); return }
                #expect(d.count == chunk && d.first == expected[row.id.primaryKey] && d.last == expected[row.id.primaryKey])
            }
        }
        try store.close()
        let again = try FileStore.open(at: folder.storeURL, model: model)
        defer { try? again.close() }
        let rows = try again.fetchRows(entity: entity, filter: nil)
        #expect(rows.count == 5)
        for row in rows {
            guard case let .data(d) = row.values[0] else { Issue.record("not data"); return }
            #expect(d.count == chunk && d.first == expected[row.id.primaryKey] && d.last == expected[row.id.primaryKey])
        }
    }
}
