import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

// Power cuts and crashes around recovery and compaction (found in review; each test failed
// before its fix, or covers a scenario the review tried). A power cut is modelled as: every
// byte a file held at its last successful fsync is on disk; bytes written after it may or
// may not be, page by page, in any order (Docs/StoreFormat.md, "normal durability"). The
// store file is DurabilityReview2Tests' `PowerLossFile` with syncs that persist and succeed.

/// What a power cut could leave, as recorded by ``PowerCutFileSystem``.
final class PowerCutRecorder: Sendable {
    /// Syncs that persist and succeed; its `durable` holds the main store file's bytes as of
    /// its last fsync (what is surely on disk).
    let script = SyncScript()
    var durable: TestMutex<[UInt8]> { script.durable }
    /// The store file and its `-lock` at the moment compaction renamed `-compact` over the
    /// store: a power cut before the folder sync that follows can lose the rename.
    let atRename = TestMutex<(store: [UInt8], lock: [UInt8])?>(nil)
    let failRename = Atomic<Bool>(false)
}

struct PowerCutFileSystem: StoreFileSystem {
    let base = PosixFileSystem()
    let recorder: PowerCutRecorder
    func open(_ path: String, create: Bool) throws -> any StoreFile {
        let file = try base.open(path, create: create)
        return path.hasSuffix(".pkstore") ? PowerLossFile(base: file, path: path, script: recorder.script) : file
    }
    func fileExists(_ path: String) -> Bool { base.fileExists(path) }
    func rename(_ from: String, to: String) throws {
        if from.hasSuffix("-compact") {
            let store = (try? Data(contentsOf: URL(fileURLWithPath: to))).map { [UInt8]($0) } ?? []
            let lock = (try? Data(contentsOf: URL(fileURLWithPath: to + "-lock"))).map { [UInt8]($0) } ?? []
            recorder.atRename.withLock { $0 = (store, lock) }
            if recorder.failRename.load(ordering: .relaxed) {
                throw StoreIOError(path: to, operation: "rename", code: EIO)
            }
        }
        try base.rename(from, to: to)
    }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ directory: String) throws { try base.syncDirectory(directory) }
}

@Suite struct PowerCutReviewTests {
    static let page = 4096

    /// Saves one book per title, one save each.
    static func save(_ store: FileStore, _ model: NSManagedObjectModel, _ titles: [String]) throws {
        let context = try FSSupport.context(for: store, model: model)
        try context.performAndWait {
            for t in titles {
                Book(context: context).title = t
                try context.save()
            }
        }
    }

    /// What a power cut can leave of `bytes` when `durable` is what the last fsync of the
    /// file covered: every whole page of record `index` that lies past the synced part is
    /// lost (zeros: never written back), every other page was written back.
    static func losingPages(of index: Int, in bytes: [UInt8], durable: [UInt8]) -> [UInt8] {
        let records = FSSupport.recordOffsets(bytes)
        let start = records[index]
        let end = index + 1 < records.count ? records[index + 1] : bytes.count
        let first = max((start + page - 1) / page * page, (durable.count + page - 1) / page * page)
        let last = end / page * page
        var image = bytes
        if first < last { for i in first..<last { image[i] = 0 } }
        return image
    }

    /// Expects the power-cut image to open, holding the saves of some prefix of `history`
    /// (the titles in save order): the state after the last save it kept.
    static func expectAPrefixState(
        _ result: Result<[String], FileStoreError>, of history: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let prefixes = (0...history.count).map { Array(history.prefix($0)).sorted() }
        switch result {
        case let .success(titles):
            #expect(prefixes.contains(titles), "\(what): \(titles) is not the state after any save", sourceLocation: sourceLocation)
        case let .failure(error):
            Issue.record("\(what): the store no longer opens: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// Writes `store` and `lock` as a store and its `-lock` in a fresh folder, opens it with
    /// the POSIX layer and returns the titles, or the open's error.
    static func openPowerCutImage(store: [UInt8], lock: [UInt8]) throws -> Result<[String], FileStoreError> {
        let folder = try TemporaryFolder()
        try FSSupport.write(store, to: folder.storeURL)
        try FSSupport.write(lock, to: URL(fileURLWithPath: folder.storeURL.path + "-lock"))
        let model = try Fixtures.model()
        do {
            let opened = try FileStore.open(at: folder.storeURL, model: model)
            defer { try? opened.close() }
            let titles = try FaultInjectionTests.titles(in: opened, model: model)
            return .success(titles)
        } catch let e as FileStoreError {
            return .failure(e)
        }
    }

    static let big = String(repeating: "x", count: 3 * page)

    /// A store at `normal` durability with one save synced by a clean close, then reopened
    /// with `options` and given two more saves (`big` first) that no fsync covered; open.
    /// Records: synced, close, big, lost 2.
    static func storeWithUnsyncedSaves(
        _ folder: borrowing TemporaryFolder, _ model: NSManagedObjectModel, _ options: FileStore.Options
    ) throws -> FileStore {
        do {
            let store = try FileStore.open(at: folder.storeURL, model: model, options: options)
            try save(store, model, ["synced"])
            try store.close()
        }
        let store = try FileStore.open(at: folder.storeURL, model: model, options: options)
        try save(store, model, [big, "lost 2"])
        return store
    }

    // MARK: A recovering open syncs the file before it clears the synced-prefix record

    /// A `normal` session appends two saves and the process dies (its `-lock` records where
    /// its unsynced appends begin). The next open finds nothing to cut; before it clears that
    /// record it syncs the file, so a power cut afterwards that loses a page of the crashed
    /// session's first save cannot happen: the store comes back in the state after some save.
    /// (Before the fix the record was cleared with the appends unsynced, and the damage such
    /// a cut leaves made the store refuse to open as corrupt.)
    @Test(arguments: [FileStore.Durability.normal, .full])
    func aRecoveringOpenSyncsTheFileBeforeItForgetsTheSyncedPrefix(next: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let recorder = PowerCutRecorder()
        let fs = PowerCutFileSystem(recorder: recorder)
        do {
            let store = try Self.storeWithUnsyncedSaves(folder, model, .init(durability: .normal, fileSystem: fs))
            store.state.withLock { store.stop(&$0) }  // the process dies: -lock (with its record) stays
        }
        let store = try FileStore.open(at: folder.storeURL, model: model, options: .init(durability: next, fileSystem: fs))
        if next == .normal { try Self.save(store, model, ["after"]) }
        // Power cut now. Records: synced, close, big, lost 2 (, after).
        let image = Self.losingPages(
            of: 2, in: try FSSupport.bytes(folder.storeURL), durable: recorder.durable.withLock { $0 })
        let lock = try FSSupport.bytes(URL(fileURLWithPath: folder.storeURL.path + "-lock"))
        let result = try Self.openPowerCutImage(store: image, lock: lock)
        Self.expectAPrefixState(
            result, of: ["synced", Self.big, "lost 2"] + (next == .normal ? ["after"] : []),
            "power cut after a recovering open (\(next)) lost an unsynced page of the crashed session's first save")
        try store.close()
    }

    // MARK: Compaction at normal durability syncs the old file before it clears the record

    /// A `normal` session appends two saves, then compacts. Compaction clears the record in
    /// `-lock` before its rename, so it syncs the old file first: if the rename fails (the
    /// store carries on with the old file), or a power cut comes before the folder sync that
    /// makes the rename durable (the old file comes back), the old file still reopens in the
    /// state after some save. (Before the fix its unsynced tail was covered by no record, and
    /// damage there was refused as corrupt.)
    @Test(arguments: ["rename fails", "rename lost by power cut"])
    func compactionAtNormalDurabilitySyncsTheOldFileBeforeItForgetsTheSyncedPrefix(how: String) throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let recorder = PowerCutRecorder()
        let fs = PowerCutFileSystem(recorder: recorder)
        let options = FileStore.Options(durability: .normal, fileSystem: fs, compactionThreshold: 1 << 40)
        let store = try Self.storeWithUnsyncedSaves(folder, model, options)
        let old: (store: [UInt8], lock: [UInt8])
        if how == "rename fails" {
            recorder.failRename.store(true, ordering: .relaxed)
            #expect(throws: FileStoreError.self) { try store.compact() }
            old = (try FSSupport.bytes(folder.storeURL), try FSSupport.bytes(URL(fileURLWithPath: folder.storeURL.path + "-lock")))
        } else {
            try store.compact()
            old = try #require(recorder.atRename.withLock { $0 })
        }
        // Records of the old file: synced, close, big, lost 2. (Only the old file's own syncs
        // count: -compact is not tracked.)
        let image = Self.losingPages(of: 2, in: old.store, durable: recorder.durable.withLock { $0 })
        let result = try Self.openPowerCutImage(store: image, lock: old.lock)
        Self.expectAPrefixState(
            result, of: ["synced", Self.big, "lost 2"], "power cut (\(how)) lost an unsynced page of the session's first save")
        try store.close()
    }

    // MARK: Crashes after torn records, failed writes and failed compactions

    /// The store's files as a process crash leaves them (store, `-lock` as it is or empty,
    /// any `-compact`), copied to a fresh folder; opened (recovery), then closed and
    /// reopened strictly. Returns the titles both opens saw (they must agree).
    static func crashCopyTitles(_ url: URL, tear: ((inout [UInt8]) -> Void)? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let copy = try TemporaryFolder()
        var bytes = try FSSupport.bytes(url)
        tear?(&bytes)
        try FSSupport.write(bytes, to: copy.storeURL)
        let lock = URL(fileURLWithPath: url.path + "-lock")
        let lockBytes = (try? FSSupport.bytes(lock)) ?? []
        try FSSupport.write(lockBytes, to: URL(fileURLWithPath: copy.storeURL.path + "-lock"))
        if let compact = try? FSSupport.bytes(URL(fileURLWithPath: url.path + "-compact")) {
            try FSSupport.write(compact, to: URL(fileURLWithPath: copy.storeURL.path + "-compact"))
        }
        let model = try Fixtures.model()
        let store = try FileStore.open(at: copy.storeURL, model: model)
        let titles = try FaultInjectionTests.titles(in: store, model: model)
        try store.close()
        #expect(try FaultInjectionTests.reopenedTitles(copy.storeURL) == titles, sourceLocation: sourceLocation)
        return titles
    }

    @Test(arguments: [FileStore.Durability.full, .normal])
    func tornLastRecordThenNewSaveAfterRecovery(durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let rig = try FaultInjectionTests.Rig(folder.storeURL, durability: durability)
        try rig.insert(["a1"])
        try rig.insert(["a2 " + Self.big])
        // crash image: last record torn at several points
        let bytes = try FSSupport.bytes(folder.storeURL)
        let recs = FSSupport.recordOffsets(bytes).filter { FSSupport.u32(bytes, at: $0) == 0x4352_4B50 }
        let last = recs[recs.count - 1]
        for cutAt in [last + 1, last + 13, last + 30, last + 5000, last + 12000] {
            let copy = try TemporaryFolder()
            var torn = Array(bytes[0..<min(cutAt, bytes.count)])
            if durability == .full { torn += [UInt8](repeating: 0, count: 4096) }  // reservation after it
            try FSSupport.write(torn, to: copy.storeURL)
            _ = FileManager.default.createFile(atPath: copy.storeURL.path + "-lock", contents: nil)
            let model = try Fixtures.model()
            let again = try FileStore.open(at: copy.storeURL, model: model, options: .init(durability: durability))
            #expect(try FaultInjectionTests.titles(in: again, model: model) == ["a1"])
            try Self.save(again, model, ["b1"])
            // crash again right away
            #expect(try Self.crashCopyTitles(copy.storeURL) == ["a1", "b1"])
            try again.close()
            #expect(try FaultInjectionTests.reopenedTitles(copy.storeURL) == ["a1", "b1"])
        }
        try rig.store.close()
    }

    @Test(arguments: [FileStore.Durability.full, .normal])
    func enospcMidRecordThenSmallerSaveThenCrash(durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let rig = try FaultInjectionTests.Rig(folder.storeURL, durability: durability)
        try rig.insert(["a1"])
        rig.plan.arm(.write, on: ".pkstore", .partialThenFail(ENOSPC))
        #expect(throws: (any Error).self) { try rig.insert(["big " + Self.big + Self.big]) }
        rig.plan.disarm()
        rig.context.performAndWait { rig.context.rollback() }
        try rig.insert(["small"])
        #expect(try Self.crashCopyTitles(folder.storeURL) == ["a1", "small"])
        // and with the cut failing too (marker overwritten, dirty tail)
        rig.plan.arm(.write, on: ".pkstore", .partialThenFail(ENOSPC))
        rig.plan.arm(.truncate, on: ".pkstore", .fail(EIO))
        #expect(throws: (any Error).self) { try rig.insert(["big2 " + Self.big + Self.big]) }
        rig.plan.disarm()
        #expect(try Self.crashCopyTitles(folder.storeURL) == ["a1", "small"])
        rig.context.performAndWait { rig.context.rollback() }
        try rig.insert(["small2"])
        #expect(try Self.crashCopyTitles(folder.storeURL) == ["a1", "small", "small2"])
        try rig.store.close()
        #expect(try FaultInjectionTests.reopenedTitles(folder.storeURL) == ["a1", "small", "small2"])
    }

    @Test func fsyncFailsCutFailsThenRetryThenCrash() throws {
        let folder = try TemporaryFolder()
        let rig = try FaultInjectionTests.Rig(folder.storeURL)
        try rig.insert(["a1"])
        // fits in the reservation
        rig.plan.arm(.sync, on: ".pkstore", .fail(EIO))
        rig.plan.arm(.truncate, on: ".pkstore", .fail(EIO))
        #expect(throws: (any Error).self) { try rig.insert(["b1"]) }
        rig.plan.disarm()
        #expect(try Self.crashCopyTitles(folder.storeURL) == ["a1"])
        try rig.save()  // retry
        #expect(try Self.crashCopyTitles(folder.storeURL) == ["a1", "b1"])
        // fsync fails twice in a row, then the retry succeeds
        rig.plan.arm(.sync, on: ".pkstore", .fail(EIO))
        rig.plan.arm(.truncate, on: ".pkstore", .fail(EIO), times: 2)
        #expect(throws: (any Error).self) { try rig.insert(["c1"]) }
        rig.plan.disarm()
        rig.plan.arm(.truncate, on: ".pkstore", .fail(EIO))
        #expect(throws: (any Error).self) { try rig.save() }  // dirty tail cut fails again
        rig.plan.disarm()
        #expect(try Self.crashCopyTitles(folder.storeURL) == ["a1", "b1"])
        try rig.save()
        #expect(try Self.crashCopyTitles(folder.storeURL) == ["a1", "b1", "c1"])
        try rig.store.close()
        #expect(try FaultInjectionTests.reopenedTitles(folder.storeURL) == ["a1", "b1", "c1"])
    }

    enum CompactionStep: String, CaseIterable, Sendable {
        case openCompact, writeCompact, syncCompact, rename, syncDirectory, clearLock
    }

    @Test(arguments: CompactionStep.allCases, [FileStore.Durability.full, .normal])
    func compactionFailureThenCrashLosesNothing(step: CompactionStep, durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let rig = try FaultInjectionTests.Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: durability)
        var expected = try FaultInjectionTests.churn(rig, books: 5, rewrites: 5)
        switch step {
        case .openCompact: rig.plan.arm(.open, on: "-compact", .fail(EMFILE))
        case .writeCompact: rig.plan.arm(.write, on: "-compact", .partialThenFail(ENOSPC))
        case .syncCompact: rig.plan.arm(.sync, on: "-compact", .fail(EIO))
        case .rename: rig.plan.arm(.rename, on: "-compact", .fail(EIO))
        case .syncDirectory: rig.plan.arm(.syncDirectory, on: "", .fail(EIO))
        case .clearLock: break
        }
        _ = try? rig.store.compact()
        rig.plan.disarm()
        #expect(try Self.crashCopyTitles(folder.storeURL) == expected)
        try rig.insert(["after"])
        expected = (expected + ["after"]).sorted()
        #expect(try Self.crashCopyTitles(folder.storeURL) == expected)
        try rig.store.close()
        #expect(try FaultInjectionTests.reopenedTitles(folder.storeURL) == expected)
    }

    /// Two coordinators on one store: one saves pairs of books, the other counts them.
    @Test func twoCoordinatorsNeverSeeHalfATransaction() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let store = try FileStore.open(at: folder.storeURL, model: model)
        let writer = try FSSupport.context(for: store, model: model)
        let reader = try FSSupport.context(for: try FileStore.open(at: folder.storeURL, model: model), model: model)
        let done = Atomic<Bool>(false)
        let odd = Atomic<Int>(0)
        let t = Thread {
            while !done.load(ordering: .relaxed) {
                let n = (try? reader.performAndWait { try reader.count(for: Book.fetchRequest()) }) ?? 0
                if n % 2 != 0 { odd.add(1, ordering: .relaxed) }
                let rows = (try? store.fetchRows(entity: model.entities.first { $0.name == "Book" }!.index, filter: nil).count) ?? 0
                if rows % 2 != 0 { odd.add(1, ordering: .relaxed) }
            }
        }
        t.start()
        for i in 0..<200 { try FSSupport.insertBooks(writer, ["x\(i)", "y\(i)"]) }
        done.store(true, ordering: .relaxed)
        Thread.sleep(forTimeInterval: 0.1)
        #expect(odd.load(ordering: .relaxed) == 0)
        try store.close()
    }

    /// Control for 1 and 2: the same page loss while the crashed `normal` session's record is
    /// still in `-lock` is recovered (so the damage model is the one the format handles).
    @Test func controlThePageLossIsRecoveredWhileTheRecordIsKept() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let recorder = PowerCutRecorder()
        let fs = PowerCutFileSystem(recorder: recorder)
        let store = try Self.storeWithUnsyncedSaves(folder, model, .init(durability: .normal, fileSystem: fs))
        let image = Self.losingPages(of: 2, in: try FSSupport.bytes(folder.storeURL), durable: recorder.durable.withLock { $0 })
        let lock = try FSSupport.bytes(URL(fileURLWithPath: folder.storeURL.path + "-lock"))
        #expect(try Self.openPowerCutImage(store: image, lock: lock).get() == ["synced"])
        try store.close()
    }

    // MARK: A version 1/2 file with one undecodable row: compaction copies it

    /// Converts a closed store file to format `version` (header and record checksums).
    static func convert(_ url: URL, to version: UInt32, damagingValueOf marker: String) throws {
        var bytes = try FSSupport.bytes(url)
        FSSupport.putU32(version, into: &bytes, at: 8)
        FSSupport.fixHeaderCRC(&bytes)
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
    /// damaged row. (Before the fix, at format 2 the compaction failed on that row, and with
    /// it every save.)
    @Test(arguments: [UInt32(2), 3])
    func anUndecodableRowInAnOldFormatFileDoesNotBlockSavesWhenCompactionIsDue(version: UInt32) throws {
        let folder = try TemporaryFolder()
        do {
            let rig = try FaultInjectionTests.Rig(folder.storeURL, compactionThreshold: 1 << 40)
            _ = try FaultInjectionTests.churn(rig, books: 10, rewrites: 10)
            try rig.insert(["DAMAGEME"])
            try rig.store.close()
        }
        try Self.convert(folder.storeURL, to: version, damagingValueOf: "DAMAGEME")
        let rig = try FaultInjectionTests.Rig(folder.storeURL, compactionThreshold: 1024)
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
