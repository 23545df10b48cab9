import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// An entity with one binary attribute.
final class FSBlob: NSManagedObject {
    @Attribute var blob: Data = Data()
}

/// Values the format cannot hold — a record payload over 2 GiB, a row with more than 65,535
/// values, a sequence number past the largest — are refused with a typed error before
/// anything is written, never written and refused at the next open, and never a trap.
@Suite("Limits of the store format") struct FormatLimitTests {
    /// A save whose record would pass the format's 2 GiB payload limit is refused before
    /// anything is written (it used to be acknowledged, then unreadable). The value's bytes
    /// are never touched (`Data(count:)` is zeroed memory the system hands out lazily), and
    /// the store goes on.
    @Test(.enabled(if: ProcessInfo.processInfo.physicalMemory >= 4 << 30, "needs address space for a 2 GiB value"))
    func aSaveOverTheTwoGiBPayloadLimitIsRefused() throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [FSBlob.self])
        let store = try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(durability: .normal))
        let entity = model.entities[0].index  // assigned when the model is sealed (at open)
        let keys = try store.allocatePrimaryKeys(entity: entity, count: 2)
        func insert(_ pk: Int64, _ data: Data) throws {
            var transaction = StoreTransaction()
            transaction.inserts = [StoreRow(id: StoreRowID(entity: entity, primaryKey: pk), version: 0, values: [.data(data)])]
            _ = try store.commit(transaction)
        }
        let error = #expect(throws: FileStoreError.self) { try insert(keys.lowerBound, Data(count: (1 << 31) + 64)) }
        #expect(error?.kind == .limitExceeded)
        try insert(keys.upperBound, Data([1, 2, 3]))
        try store.close()
        let again = try FileStore.open(at: folder.storeURL, model: model)
        defer { try? again.close() }
        #expect(try again.fetchRows(entity: entity, filter: nil).map(\.id.primaryKey) == [keys.upperBound])
    }

    /// A row with more than 65,535 values (the format's u16 count) is refused with a typed
    /// error. (It used to trap.) Runs in a child process, so a trap fails only this test.
    @Test func aRowWithMoreValuesThanTheFormatHoldsIsRefusedNotATrap() async throws {
        await #expect(processExitsWith: .success) {
            let folder = try TemporaryFolder()
            let model = try Fixtures.model()
            let store = try FileStore.open(at: folder.storeURL, model: model)
            let shelves = model.entitiesByName["Shelf"]!.index
            var transaction = StoreTransaction()
            transaction.inserts = [
                StoreRow(id: StoreRowID(entity: shelves, primaryKey: 1), version: 0, values: Array(repeating: .null, count: 70_000))
            ]
            do {
                _ = try store.commit(transaction)
                exit(3)  // written: its value count wrapped
            } catch let e as FileStoreError where e.kind == .limitExceeded {
                exit(0)
            } catch {
                exit(4)
            }
        }
    }

    /// A checksum-valid record with the largest sequence number (crafted): the next save gets
    /// a typed error, or is accepted, but never traps. (The next save used to crash.)
    @Test func aFileWhoseLastSequenceIsTheLargestGivesATypedErrorNotATrap() async throws {
        let folder = try TemporaryFolder()
        var bytes = try CorruptionTests.makeCleanStore(folder.storeURL)
        // The last transaction (the record before the close record) gets sequence UInt64.max,
        // with its checksum fixed: a checksum-valid record with impossible contents.
        let offsets = FSSupport.recordOffsets(bytes)
        let last = offsets[offsets.count - 2]
        for i in 0..<8 { bytes[last + 12 + i] = 0xFF }
        FSSupport.fixRecordCRC(&bytes, recordAt: last)
        try FSSupport.write(bytes, to: folder.storeURL)
        let path = folder.storeURL.path
        await #expect(processExitsWith: .success) { [path = path as String] in
            let model = try Fixtures.model()
            do {
                let store = try FileStore.open(at: URL(fileURLWithPath: path), model: model)
                let shelves = model.entitiesByName["Shelf"]!.index
                let key = try store.allocatePrimaryKeys(entity: shelves, count: 1).lowerBound
                var transaction = StoreTransaction()
                transaction.inserts = [StoreRow(id: StoreRowID(entity: shelves, primaryKey: key), version: 0, values: [.string("s"), .references([])])]
                _ = try store.commit(transaction)
                exit(0)  // accepted (wrapping the sequence) is no crash either
            } catch is FileStoreError {
                exit(0)
            }
        }
    }
}
