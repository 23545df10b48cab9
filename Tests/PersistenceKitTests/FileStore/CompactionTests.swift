import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// Compaction rewrites the store as its live rows in a new file (`-compact`), checks it,
/// and renames it over the store: explicitly, or before a save once the file has grown past
/// its threshold and twice its live data. A compaction that fails leaves the store as it was
/// and usable; one that succeeds has every row.
@Suite("Compaction") struct CompactionTests {
    @Test func compactionShrinksTheFileToAtMostTwiceTheLiveData() throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
        let expected = try FSSupport.churn(rig, books: 20, rewrites: 30)
        let grown = rig.store.fileSize
        #expect(grown > 4 * rig.store.liveDataSize)
        #expect(rig.store.compactionCount == 0)

        try rig.store.compact()
        #expect(rig.store.compactionCount == 1)
        #expect(rig.store.fileSize <= 2 * rig.store.liveDataSize)
        #expect(rig.store.fileSize < grown)
        #expect(try FSSupport.diskSize(folder.storeURL) == rig.store.fileSize)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-compact"))
        #expect(try rig.storedTitles() == expected)

        // Still usable, and the compacted file reopens with everything in it.
        try rig.insert(["after"])
        try rig.store.close()
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == (expected + ["after"]).sorted())
    }

    @Test func automaticCompactionKeepsTheFileBounded() throws {
        let folder = try TemporaryFolder()
        let threshold = 4096
        let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: threshold, durability: .normal)
        let titles = try rig.context.performAndWait {
            var books: [Book] = []
            for i in 0..<10 {
                let b = Book(context: rig.context)
                b.title = "book \(i)"
                books.append(b)
            }
            try rig.context.save()
            for r in 0..<300 {
                let b = books[r % books.count]
                b.title = "book \(r % books.count) rev \(r)"
                try rig.context.save()
                // Compaction runs before a save, so the file may exceed the bound by one record.
                let bound = max(threshold, 2 * rig.store.liveDataSize + 512) + 512
                #expect(rig.store.fileSize <= bound, "after rewrite \(r): file \(rig.store.fileSize) > \(bound)")
            }
            return books.map(\.title).sorted()
        }
        #expect(rig.store.compactionCount > 0)
        try rig.store.close()
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == titles)
    }

    /// A save that deletes most rows leaves a file far over twice its live data; the store
    /// compacts it then, or at the latest by the time it is reopened, read and closed without
    /// a write. (The file used to stay at its old size until the next save.)
    @Test func afterASaveThatDeletesMostRowsTheFileIsAtMostTwiceItsLiveData() throws {
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

    enum CompactionFault: String, CaseIterable, Sendable {
        case diskFullWritingNewFile, shortWriteOfNewFile, fsyncOfNewFileFails, renameFails

        func arm(_ plan: FaultPlan) {
            switch self {
            case .diskFullWritingNewFile: plan.arm(.write, on: "-compact", .partialThenFail(ENOSPC))
            case .shortWriteOfNewFile: plan.arm(.write, on: "-compact", .shortWrite)
            case .fsyncOfNewFileFails: plan.arm(.sync, on: "-compact", .fail(EIO))
            case .renameFails: plan.arm(.rename, on: "-compact", .fail(EXDEV))
            }
        }

        var errno: Int32 {
            switch self {
            case .diskFullWritingNewFile: ENOSPC
            case .shortWriteOfNewFile: 0
            case .fsyncOfNewFileFails: EIO
            case .renameFails: EXDEV
            }
        }
    }

    @Test(arguments: CompactionFault.allCases)
    func failedExplicitCompactionLeavesTheStoreConsistentAndUsable(fault: CompactionFault) throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
        var expected = try FSSupport.churn(rig, books: 10, rewrites: 10)
        let size = rig.store.fileSize
        let diskSize = try FSSupport.diskSize(folder.storeURL)

        fault.arm(rig.plan)
        let error = #expect(throws: FileStoreError.self) { try rig.store.compact() }
        #expect(error?.kind == .io)
        #expect(error?.path == FSSupport.path(folder.storeURL))
        #expect(error?.underlying?.code == fault.errno)
        #expect(rig.plan.fired == 1)
        rig.plan.disarm()

        #expect(rig.store.compactionCount == 0)
        #expect(rig.store.fileSize == size)
        #expect(try FSSupport.diskSize(folder.storeURL) == diskSize)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-compact"))
        #expect(try rig.storedTitles() == expected)

        try rig.insert(["after failure"])
        expected = (expected + ["after failure"]).sorted()
        try rig.store.compact()
        #expect(rig.store.compactionCount == 1)
        #expect(rig.store.fileSize <= 2 * rig.store.liveDataSize)
        try rig.insert(["after compaction"])
        expected = (expected + ["after compaction"]).sorted()
        #expect(try rig.storedTitles() == expected)
        try rig.store.close()
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == expected)
    }

    @Test(arguments: CompactionFault.allCases)
    func failedAutomaticCompactionFailsTheSaveTypedAndLosesNothing(fault: CompactionFault) throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
        var expected = try FSSupport.churn(rig, books: 10, rewrites: 10)
        // Reopen with a small threshold so that the next save compacts.
        try rig.store.close()
        let small = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1024, durability: .normal)
        fault.arm(small.plan)
        do {
            try small.insert(["trigger"])
            Issue.record("the save succeeded although compaction failed with \(fault)")
        } catch {
            FSSupport.expectTypedSaveFailure(error, errno: fault.errno)
        }
        small.plan.disarm()
        #expect(small.store.compactionCount == 0)
        #expect(try small.storedTitles() == expected)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-compact"))

        try small.save()  // the kept changes, now with a working compaction
        expected = (expected + ["trigger"]).sorted()
        #expect(small.store.compactionCount == 1)
        #expect(try small.storedTitles() == expected)
        try small.store.close()
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == expected)
    }

    /// The folder sync after the rename fails: the new file is already in place. The store
    /// stays usable after a failure during compaction, and the data is all there.
    @Test func folderSyncFailureAfterCompactionKeepsTheStoreUsable() throws {
        let folder = try TemporaryFolder()
        var expected: [String] = []
        do {
            let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
            expected = try FSSupport.churn(rig, books: 5, rewrites: 5)
            rig.plan.arm(.syncDirectory, on: "", .fail(EIO))
            let error = #expect(throws: FileStoreError.self) { try rig.store.compact() }
            #expect(error?.kind == .io)
            #expect(error?.underlying?.code == EIO)
            rig.plan.disarm()

            // Usable: either the same store keeps working, or it can be opened again in-process.
            do {
                try rig.insert(["after"])
                expected = (expected + ["after"]).sorted()
                #expect(try rig.storedTitles() == expected)
            } catch {
                Issue.record("after a failed folder sync during compaction the store is unusable: \(error)")
                rig.context.performAndWait { rig.context.rollback() }
                do {
                    let again = try FileStore.open(at: folder.storeURL, model: rig.model)
                    #expect(try FSSupport.titles(in: again, model: rig.model) == expected)
                    try again.close()
                } catch {
                    Issue.record("and it cannot be opened again in this process either: \(error)")
                }
            }
            try? rig.store.close()
        }
        // Once every reference is gone, the data is all there.
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == expected)
    }

    /// Compaction reads its new file back before the rename. When what it reads fails its
    /// checksum (a write the disk damaged without reporting it), it must not go on with the
    /// part that checked out: it either fails, or the store keeps every row and hands out no
    /// key of a live row again. (It used to report success over an empty store.)
    @Test func aCompactionWhoseNewFileReadsBackDamagedLosesNoRow() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let fs = SyncCountingFileSystem(base: FaultyFileSystem(plan: FaultPlan()), syncs: SyncCounter(), rotCompaction: true)
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

    /// Converts a closed store file to format `version` (header and record checksums).
    /// Converts a closed store file to format `version` (header and record checksums), with
    /// the title `marker` given an unknown value tag in a checksum-valid record.
    static func convert(_ url: URL, to version: UInt32, damagingValueOf marker: String) throws {
        var bytes = try FSSupport.bytes(url)
        FSSupport.downgrade(&bytes, to: version)
        let needle = Array(marker.utf8)
        var hit: Int?
        for i in 0..<(bytes.count - needle.count) where Array(bytes[i..<(i + needle.count)]) == needle { hit = i }
        let at = try #require(hit)
        #expect(bytes[at - 5] == 6, "the title's string tag")
        bytes[at - 5] = 0xEE  // an unknown value tag, in a record whose checksum is made valid
        for record in FSSupport.recordOffsets(bytes) { FSSupport.fixRecordCRC(&bytes, recordAt: record) }
        try FSSupport.write(bytes, to: url)
    }

    /// A row damaged past its checksum (a crafted file) in a file of format 2, whose
    /// compaction rewrites rows to strip derived lists, or 3, which copies them: a save that
    /// touches no damaged row succeeds when a compaction is due, and so does deleting the
    /// damaged row. (At format 2 the compaction failed on that row, and with
    /// it every save.)
    @Test(arguments: [UInt32(2), 3])
    func anUndecodableRowInAnOldFormatFileDoesNotBlockSavesWhenCompactionIsDue(version: UInt32) throws {
        let folder = try TemporaryFolder()
        do {
            let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1 << 40)
            _ = try FSSupport.churn(rig, books: 10, rewrites: 10)
            try rig.insert(["DAMAGEME"])
            try rig.store.close()
        }
        try Self.convert(folder.storeURL, to: version, damagingValueOf: "DAMAGEME")
        let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1024)
        // An unrelated save: an author.
        #expect(throws: Never.self, "format \(version): a save that touches no damaged row") {
            try rig.context.performAndWait {
                Author(context: rig.context).name = "Keats"
                try rig.context.save()
            }
        }
        // The documented way out: delete the damaged row (Book 11, version 1).
        let book = try #require(rig.model.entities.first { $0.name == "Book" }).index
        var delete = StoreTransaction()
        delete.deletes = [(StoreRowID(entity: book, primaryKey: 11), 1)]
        #expect(throws: Never.self, "format \(version): deleting the damaged row") { _ = try rig.store.commit(delete) }
        try? rig.store.close()
    }
}
