import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// The primary keys a file store hands out: every one the format can hold and no more, never
/// the same one twice (permanent IDs obtained before a save stay taken across a reopen, as in
/// Core Data, which records the highest key in the store at once), and rows kept by key in
/// the row table whatever the spread of their keys.
@Suite("Primary keys") struct PrimaryKeyTests {
    /// The store hands out every key the format holds and no more, and refuses rows it could
    /// not read back — instead of writing them and refusing the file at the next open.
    @Test func aKeyTheStoreHandsOutIsOneItCanReadBack() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let store = try FileStore.open(at: folder.storeURL, model: model)
        let shelves = try #require(model.entitiesByName["Shelf"]).index  // assigned when the model is sealed (at open)
        func kind(_ body: () throws -> Void) -> FileStoreError.Kind? {
            do { try body() } catch let e as FileStoreError { return e.kind } catch { Issue.record("untyped: \(error)") }
            return nil
        }
        #expect(kind { _ = try store.allocatePrimaryKeys(entity: shelves, count: 1 << 62) } == .limitExceeded)
        let all = try store.allocatePrimaryKeys(entity: shelves, count: (1 << 62) - 1)
        #expect(all == 1...((1 << 62) - 1))
        #expect(kind { _ = try store.allocatePrimaryKeys(entity: shelves, count: 1) } == .limitExceeded)
        #expect(kind { _ = try store.allocatePrimaryKeys(entity: -1, count: 1) } == .limitExceeded)
        func insert(_ id: StoreRowID) throws {
            var transaction = StoreTransaction()
            transaction.inserts = [StoreRow(id: id, version: 0, values: [.string("s"), .references([])])]
            _ = try store.commit(transaction)
        }
        #expect(kind { try insert(StoreRowID(entity: shelves, primaryKey: 1 << 62)) } == .limitExceeded)
        #expect(kind { try insert(StoreRowID(entity: -1, primaryKey: 1)) } == .limitExceeded)
        #expect(kind { try insert(StoreRowID(entity: shelves, primaryKey: 0)) } == .limitExceeded)
        try insert(StoreRowID(entity: shelves, primaryKey: all.upperBound))
        try store.close()
        let again = try FileStore.open(at: folder.storeURL, model: model)
        defer { try? again.close() }
        #expect(try again.fetchRows(entity: shelves, filter: nil).map(\.id.primaryKey) == [all.upperBound])
    }

    /// The primary keys of three objects given permanent IDs and then thrown away. With
    /// `crashCopy`, the store file is copied there while still open, with a `-lock` beside
    /// it: the file as a crash would leave it (no close record).
    static func abandonedKeys(_ url: URL, crashCopy: URL?) throws -> [Int64] {
        let container = try FSSupport.container(at: url, model: try FSSupport.itemModel())
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        let keys: [Int64] = try context.performAndWait {
            let items = (0..<3).map { _ in FSItem(context: context) }
            try context.obtainPermanentIDs(for: items)
            #expect(items.allSatisfy { !$0.objectID.isTemporaryID })
            let keys = items.compactMap { $0.rowID?.primaryKey }
            context.rollback()
            return keys
        }
        if let crashCopy {
            try FileManager.default.copyItem(at: url, to: crashCopy)
            #expect(FileManager.default.createFile(atPath: crashCopy.path + "-lock", contents: nil))
        }
        return keys
    }

    /// Keys of objects given permanent IDs and then thrown away are not handed out again after
    /// a clean reopen, nor after a crash.
    @Test(arguments: [false, true])
    func keysHandedOutBeforeASaveAreNotHandedOutAgainAfterAReopen(crash: Bool) throws {
        let folder = try TemporaryFolder()
        let scratch = try TemporaryFolder()
        let abandoned =
            crash
            ? try Self.abandonedKeys(scratch.storeURL, crashCopy: folder.storeURL)
            : try Self.abandonedKeys(folder.storeURL, crashCopy: nil)
        #expect(abandoned.count == 3)
        let fresh = try FSSupport.withItemStore(folder.storeURL) { context in
            let item = FSItem(context: context)
            try context.save()
            return try #require(item.rowID?.primaryKey)
        }
        #expect(fresh > abandoned.max() ?? .max, "a new object got key \(fresh); \(abandoned) were handed out before")
    }

    /// `obtainPermanentIDs(for:)` writes the keys it hands out; when that write fails the
    /// objects keep their temporary IDs, and saving them later works.
    @Test func failingToRecordPermanentIDsKeepsTheTemporaryOnes() throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL)
        try rig.insert(["before"])
        rig.plan.arm(.write, on: folder.storeURL.lastPathComponent, .fail(ENOSPC))
        try rig.context.performAndWait {
            let book = Book(context: rig.context)
            book.title = "later"
            #expect(throws: FileStoreError.self) { try rig.context.obtainPermanentIDs(for: [book]) }
            #expect(book.objectID.isTemporaryID)
            try rig.context.save()
            #expect(!book.objectID.isTemporaryID)
        }
        #expect(rig.plan.fired == 1)
        #expect(try rig.storedTitles() == ["before", "later"])
        try rig.store.close()
    }

    /// A row whose key lies far above the others lives outside the row table's array; when
    /// the table later grows over that key, updating the row must stay an update.
    @Test func updatingAKeyTheTableGrewOverCountsItOnce() throws {
        let folder = try TemporaryFolder()
        let model = try FSSupport.itemModel()
        let container = try FSSupport.container(at: folder.storeURL, model: model)
        let store = try #require(FSSupport.fileStores(container).first)
        let entity = try #require(model.entitiesByName["FSItem"]).index
        let context = container.newBackgroundContext()
        // Stands in for a million rows inserted and deleted before this one.
        _ = try store.allocatePrimaryKeys(entity: entity, count: 1_048_599)
        let far = try context.performAndWait {
            let o = FSItem(context: context)
            o.key = 1
            o.iDouble = 1
            try context.save()
            return o.objectID
        }
        _ = try store.allocatePrimaryKeys(entity: entity, count: 4_000_000)
        try context.performAndWait {
            for i in 0..<40 {
                let o = FSItem(context: context)
                o.key = Int64(100 + i)
                o.iDouble = 100
            }
            try context.save()
            try #require(try context.existingObject(with: far) as? FSItem).iDouble = 2
            try context.save()
        }
        let (count, ranged) = try context.performAndWait {
            context.reset()
            return (try context.count(for: FSItem.fetchRequest()), try FSSupport.itemKeys(context, #Predicate { $0.iDouble >= 1 && $0.iDouble <= 2 }))
        }
        #expect(count == 41)
        #expect(ranged == [1])
        try FSSupport.close(container)
        let reopened = try FSSupport.container(at: folder.storeURL, model: model)
        defer { try? FSSupport.close(reopened) }
        let again = reopened.newBackgroundContext()
        #expect(try again.performAndWait { try again.count(for: FSItem.fetchRequest()) } == 41)
    }
}
