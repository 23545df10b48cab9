import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// Crashes after torn records, failed writes, failed cuts, failed compactions and failed
/// closes: the store's files as the crash leaves them reopen (recovery) with every save that
/// returned and none that threw, take new saves, and survive the next crash the same way.
@Suite("Recovery after a crash") struct RecoveryTests {
    /// A title three pages long, so that its record spans whole pages.
    static let big = String(repeating: "x", count: 3 * 4096)

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
        let titles = try FSSupport.titles(in: store, model: model)
        try store.close()
        #expect(try FSSupport.reopenedTitles(copy.storeURL) == titles, sourceLocation: sourceLocation)
        return titles
    }

    /// An open after a crash says what it recovered (`FileStore.recovery`): the size found,
    /// the bytes kept and the records cut; a clean open has nothing to say.
    @Test("An open after a crash reports what it cut; a clean open reports nothing")
    func recoveryIsReported() throws {
        let folder = try TemporaryFolder()
        let clean = try CorruptionTests.makeCleanStore(folder.storeURL)
        let model = try Fixtures.model()
        let cleanOpen = try FileStore.open(at: folder.storeURL, model: model)
        #expect(cleanOpen.recovery == nil)
        let titles = try FSSupport.titles(in: cleanOpen, model: model)
        try cleanOpen.close()

        // A crash with nothing unfinished: recovered, nothing cut.
        _ = FileManager.default.createFile(atPath: folder.storeURL.path + "-lock", contents: nil)
        let crashed = try FileStore.open(at: folder.storeURL, model: model)
        let quiet = try #require(crashed.recovery)
        #expect(quiet.discardedBytes == 0 && quiet.discardedRecords == 0 && quiet.keptBytes == clean.count)
        try crashed.close()

        // A crash in the middle of writing a record: its header and part of its payload.
        var torn = try FSSupport.bytes(folder.storeURL)
        let kept = torn.count
        var record = [UInt8](repeating: 0x5A, count: 40)
        FSSupport.putU32(FileStoreFormat.recordMagic, into: &record, at: 0)
        FSSupport.putU32(4096, into: &record, at: 8)  // a length past the end of the file
        torn += record
        try FSSupport.write(torn, to: folder.storeURL)
        _ = FileManager.default.createFile(atPath: folder.storeURL.path + "-lock", contents: nil)
        let recovered = try FileStore.open(at: folder.storeURL, model: model)
        defer { try? recovered.close() }
        let report = try #require(recovered.recovery)
        #expect(report.foundBytes == kept + 40)
        #expect(report.keptBytes == kept)
        #expect(report.discardedBytes == 40)
        #expect(report.discardedRecords == 1)
        #expect(report.description.contains("cut 40 bytes"))
        #expect(try FSSupport.titles(in: recovered, model: model) == titles, "recovery lost a save")
    }

    /// The last record torn at several points (in its header, its payload, pages into it):
    /// recovery cuts it, a save after recovery survives the next crash, and a clean close
    /// after it reopens strictly.
    @Test("A torn last record is cut, and saves after recovery survive the next crash", arguments: [FileStore.Durability.full, .normal])
    func tornLastRecordThenNewSaveAfterRecovery(durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, durability: durability)
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
            #expect(try FSSupport.titles(in: again, model: model) == ["a1"])
            try FSSupport.saveEach(again, model, ["b1"])
            // crash again right away
            #expect(try Self.crashCopyTitles(copy.storeURL) == ["a1", "b1"])
            try again.close()
            #expect(try FSSupport.reopenedTitles(copy.storeURL) == ["a1", "b1"])
        }
        try rig.store.close()
    }

    /// A disk that fills up in the middle of a record, with the cut back failing too (its
    /// marker overwritten, a dirty tail left): the smaller saves after it survive a crash.
    @Test("A record cut short by a full disk, then smaller saves, then a crash", arguments: [FileStore.Durability.full, .normal])
    func enospcMidRecordThenSmallerSaveThenCrash(durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, durability: durability)
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
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == ["a1", "small", "small2"])
    }

    /// An fsync that fails with a cut back that fails, then a retry of the same save (once, and
    /// after the cut has failed again): after a crash the store holds exactly the saves that
    /// returned.
    @Test("A failed fsync and a failed cut back, then a retry, then a crash")
    func fsyncFailsCutFailsThenRetryThenCrash() throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL)
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
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == ["a1", "b1", "c1"])
    }

    /// The step of a compaction that fails (`clearLock`: none fails; the crash comes after).
    enum CompactionStep: String, CaseIterable, Sendable {
        case openCompact, writeCompact, syncCompact, rename, syncDirectory, clearLock
    }

    /// A compaction that fails at any step, then a crash, loses nothing, and neither does a
    /// save after it.
    @Test(arguments: CompactionStep.allCases, [FileStore.Durability.full, .normal])
    func compactionFailureThenCrashLosesNothing(step: CompactionStep, durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: durability)
        var expected = try FSSupport.churn(rig, books: 5, rewrites: 5)
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
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == expected)
    }

    /// A close that cannot write its close record must leave the store recoverable: the lock
    /// file stays, so the next open recovers instead of reporting the file as truncated.
    /// (The lock file used to be removed anyway, which made the store unopenable.)
    @Test(arguments: [FaultPlan.Operation.write, .sync]) func aFailedCloseKeepsTheStoreOpenable(failing operation: FaultPlan.Operation) throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL)
        try rig.insert(["kept one", "kept two"])
        rig.plan.arm(operation, on: "store.pkstore", .fail(ENOSPC))
        #expect(throws: FileStoreError.self) { try rig.store.close() }
        #expect(FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == ["kept one", "kept two"])
    }
}
