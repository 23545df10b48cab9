import Foundation
import Synchronization
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

// From a review of the file store: each test failed before the fix it names.

final class ReviewBlob: NSManagedObject {
    @Attribute var blob: Data = Data()
}

/// Counts successful folder syncs.
final class SyncCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// A file that silently flips one bit of each record written to it (bit rot, or a write the
/// disk misdirected without reporting it): what compaction's read-back check is for.
final class RottingFile: StoreFile {
    let base: any StoreFile
    init(base: any StoreFile) { self.base = base }
    func size() throws -> Int { try base.size() }
    func read(at offset: Int, count: Int) throws -> [UInt8] { try base.read(at: offset, count: count) }
    func write(_ bytes: [UInt8], at offset: Int) throws {
        var b = bytes
        if offset >= 64, b.count > 40 { b[30] ^= 0x01 }
        try base.write(b, at: offset)
    }
    func sync() throws { try base.sync() }
    func truncate(to size: Int) throws { try base.truncate(to: size) }
    func tryLock() throws -> Bool { try base.tryLock() }
    func close() { base.close() }
}

/// ``FaultyFileSystem`` that also counts successful folder syncs and, with `rotCompaction`,
/// damages what compaction writes to `-compact`.
struct ReviewFileSystem: StoreFileSystem {
    let base: FaultyFileSystem
    let syncs: SyncCounter
    var rotCompaction = false

    func open(_ path: String, create: Bool) throws -> any StoreFile {
        let file = try base.open(path, create: create)
        return rotCompaction && path.hasSuffix("-compact") ? RottingFile(base: file) : file
    }
    func fileExists(_ path: String) -> Bool { base.fileExists(path) }
    func rename(_ from: String, to: String) throws { try base.rename(from, to: to) }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ directory: String) throws {
        try base.syncDirectory(directory)
        syncs.value.add(1, ordering: .relaxed)
    }
}

@Suite struct DurabilityReviewTests {
    // MARK: 1. An open that fails after creating the file leaves a store that never opens

    @Test(arguments: ["syncDirectory", "open"])
    func anOpenThatFailsAfterCreatingTheFileLeavesTheStoreOpenable(failing step: String) throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let plan = FaultPlan()
        if step == "syncDirectory" {
            plan.arm(.syncDirectory, on: "", .fail(EIO))  // the folder sync after the rename of -new
        } else {
            plan.arm(.open, on: "store.pkstore", .fail(EMFILE))  // opening the file just created
        }
        let options = FileStore.Options(fileSystem: FaultyFileSystem(plan: plan))
        let first = #expect(throws: FileStoreError.self) { try FileStore.open(at: folder.storeURL, model: model, options: options) }
        #expect(first?.kind == .io)
        #expect(plan.fired == 1)

        // The fault is gone. The failed open wrote no save, so the store must open and work.
        do {
            let store = try FileStore.open(at: folder.storeURL, model: model)
            let context = try FSSupport.context(for: store, model: model)
            try FSSupport.insertBooks(context, ["first"])
            try store.close()
        } catch {
            Issue.record("after an open failed with an I/O error, the store can never be opened again: \(error)")
        }
    }

    // MARK: 2. Saves acknowledged after compaction's folder sync failed

    @Test func savesAfterAFailedFolderSyncInCompactionAreAcknowledgedWithoutSyncingTheRename() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let plan = FaultPlan()
        let syncs = SyncCounter()
        let fs = ReviewFileSystem(base: FaultyFileSystem(plan: plan), syncs: syncs)
        let store = try FileStore.open(
            at: folder.storeURL, model: model, options: FileStore.Options(durability: .full, fileSystem: fs, compactionThreshold: 1 << 40))
        let context = try FSSupport.context(for: store, model: model)
        try FSSupport.insertBooks(context, ["a", "b", "c"])
        try FSSupport.insertBooks(context, ["d"])

        plan.arm(.syncDirectory, on: "", .fail(EIO))
        #expect(throws: FileStoreError.self) { try store.compact() }  // renamed, folder not synced
        plan.disarm()
        #expect(store.compactionCount == 1, "the store carries on with the renamed file")

        let before = syncs.value.load(ordering: .relaxed)
        try FSSupport.insertBooks(context, ["acknowledged"])  // returns: promised to be on disk
        #expect(
            syncs.value.load(ordering: .relaxed) > before,
            "a full-durability save returned while the rename that makes its file the store was never synced: a power cut can bring back the old file without it")
        try store.close()
    }

    // MARK: 3. Compaction ignores the cut its read-back check returns

    @Test func compactionWhoseNewFileFailsItsChecksumDropsEveryRowSilently() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let fs = ReviewFileSystem(base: FaultyFileSystem(plan: FaultPlan()), syncs: SyncCounter(), rotCompaction: true)
        let store = try FileStore.open(
            at: folder.storeURL, model: model, options: FileStore.Options(durability: .normal, fileSystem: fs, compactionThreshold: 1 << 40))
        let books = try #require(model.entitiesByName["Book"]).index
        let context = try FSSupport.context(for: store, model: model)
        let titles = ["a", "b", "c", "d", "e"]
        try FSSupport.insertBooks(context, titles)

        do {
            try store.compact()
            // Compaction said it succeeded: the store must still hold every row.
            #expect(try store.fetchRows(entity: books, filter: nil).count == titles.count, "compaction returned, and the store is empty")
            let keys = try store.allocatePrimaryKeys(entity: books, count: 1)
            #expect(keys.lowerBound > Int64(titles.count), "primary keys of live rows are handed out again: \(keys)")
        } catch let error as FileStoreError {
            // Also acceptable: the damage is reported (the store object stops).
            #expect(error.kind == .corrupt || error.kind == .io)
        }
        try? store.close()
    }

    // MARK: 4. A save larger than the format's payload limit is acknowledged, then unreadable

    /// Refused before anything is written (the value's bytes are never touched: `Data(count:)`
    /// is zeroed memory the system hands out lazily), and the store goes on.
    @Test(.enabled(if: ProcessInfo.processInfo.physicalMemory >= 4 << 30, "needs address space for a 2 GiB value"))
    func aSaveOverTheTwoGiBPayloadLimitIsRefused() throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [ReviewBlob.self])
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

    // MARK: 5. The file stays far larger than twice its live data

    @Test func afterASaveThatDeletesMostRowsTheFileStaysFarOverTwiceItsLiveData() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var all: [Book] = []
            for i in 0..<300 {
                let b = Book(context: context)
                b.title = "book \(i) " + String(repeating: "x", count: 500)
                all.append(b)
            }
            try context.save()
            for b in all.dropFirst() { context.delete(b) }
            try context.save()
        }
        try FSSupport.close(container)

        // Reopen, read, close: the store is used, but not written to.
        let reopened = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(reopened).count == 1)
        let store = try #require(FSSupport.fileStores(reopened).first)
        let size = store.fileSize
        let live = store.liveDataSize
        try FSSupport.close(reopened)
        #expect(size <= max(64 << 10, 2 * (live + 64 + 24 + 64)), "the file holds \(size) bytes for \(live) bytes of live rows")
    }

    // MARK: 6. A damaged version field is reported as a newer format, not as damage

    @Test func aBitFlipInTheHeaderVersionIsDamageNotANewerFormat() throws {
        let folder = try TemporaryFolder()
        var bytes = try CorruptionTests.makeCleanStore(folder.storeURL)
        bytes[8] ^= 0x01  // 2 → 3; the header checksum no longer matches
        try FSSupport.write(bytes, to: folder.storeURL)
        let error = try CorruptionTests.openError(folder.storeURL)
        #expect(error?.kind == .corrupt, "a header whose checksum fails is reported as \(String(describing: error?.kind))")
    }

    // MARK: 8. Keys the store hands out but cannot read back

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

    // MARK: 9. A save that threw comes back after a crash

    @Test func aSaveWhoseFsyncFailedIsNotResurrectedByRecovery() throws {
        let folder = try TemporaryFolder()
        let rig = try FaultInjectionTests.Rig(folder.storeURL)  // full durability
        try rig.insert(["a1"])
        rig.plan.arm(.sync, on: ".pkstore", .fail(EIO))
        rig.plan.arm(.truncate, on: ".pkstore", .fail(EIO))
        do {
            try rig.insert(["b1"])
            Issue.record("the save succeeded although fsync failed")
        } catch {}
        rig.plan.disarm()
        #expect(try rig.storedTitles() == ["a1"], "the failed save is not visible in this session")

        // The process dies now: what it leaves is the file as it is, and -lock.
        let crashed = try TemporaryFolder()
        try FileManager.default.copyItem(at: folder.storeURL, to: crashed.storeURL)
        _ = FileManager.default.createFile(atPath: crashed.storeURL.path + "-lock", contents: nil)
        #expect(try FaultInjectionTests.reopenedTitles(crashed.storeURL) == ["a1"], "the save that threw is committed after recovery")
        try rig.store.close()
    }

    // MARK: 10. -lock is created without a folder sync

    @Test func theLockFileThatMarksASessionIsSyncedBeforeASaveIsAcknowledged() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        do {  // create the store and close it cleanly
            let store = try FileStore.open(at: folder.storeURL, model: model)
            try store.close()
        }
        let syncs = SyncCounter()
        let fs = ReviewFileSystem(base: FaultyFileSystem(plan: FaultPlan()), syncs: syncs)
        let store = try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(durability: .full, fileSystem: fs))
        #expect(FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        let context = try FSSupport.context(for: store, model: model)
        try FSSupport.insertBooks(context, ["acknowledged"])
        #expect(
            syncs.value.load(ordering: .relaxed) > 0,
            "-lock was created and a full-durability save acknowledged without a folder sync: after a power cut the -lock entry may be gone and the strict open reports the file as truncated")
        // One folder sync per session is enough: the next save does not sync again.
        let afterFirst = syncs.value.load(ordering: .relaxed)
        try FSSupport.insertBooks(context, ["second"])
        #expect(syncs.value.load(ordering: .relaxed) == afterFirst)
        try store.close()
    }
    // MARK: 11. A whole record missing from the middle opens without a word

    /// Record numbers must run on: a record dropped from the middle (or a copy of one put
    /// after it) is reported where the sequence breaks, after a clean close and after a
    /// crash alike, instead of the file opening without the dropped record's rows.
    @Test(arguments: [false, true]) func aMissingOrRepeatedRecordIsReported(crashed: Bool) throws {
        let folder = try TemporaryFolder()
        let bytes = try CorruptionTests.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        #expect(records.count >= 4, "three saves and a close record")
        let lock = folder.storeURL.path + "-lock"
        func expectBreak(_ damaged: [UInt8], at offset: Int) throws {
            try FSSupport.write(damaged, to: folder.storeURL)
            try? FileManager.default.removeItem(atPath: lock)
            if crashed { _ = FileManager.default.createFile(atPath: lock, contents: nil) }
            let error = try CorruptionTests.openError(folder.storeURL)
            #expect(error?.kind == .corrupt)
            #expect(error?.offset == offset + 12, "\(String(describing: error))")
        }
        var dropped = bytes
        dropped.removeSubrange(records[1]..<records[2])
        try expectBreak(dropped, at: records[1])
        var repeated = bytes
        repeated.insert(contentsOf: bytes[records[0]..<records[1]], at: records[1])
        try expectBreak(repeated, at: records[1])
        // The file as it was opens.
        try FSSupport.write(bytes, to: folder.storeURL)
        try? FileManager.default.removeItem(atPath: lock)
        #expect(try CorruptionTests.openError(folder.storeURL) == nil)
    }
}
