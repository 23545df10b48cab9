import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// What a save the store acknowledged survives. At `full` durability a save returns only
/// once its record, and every folder entry the store file depends on (`-lock`, a compaction's
/// rename), is synced; a save that threw never comes back after a crash; and when the store
/// cannot undo a failed save durably it stops instead of writing on top of it.
@Suite("Durability of acknowledged saves") struct DurabilityTests {
    /// A compaction renamed its file over the store and the folder sync after it failed; the
    /// store carries on with the new file. The next full-durability save syncs the folder
    /// before it returns: until then a power cut can bring back the old file without it.
    /// (Such saves used to be acknowledged with the rename never synced.)
    @Test func aSaveAfterACompactionWhoseFolderSyncFailedSyncsTheRenameFirst() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let plan = FaultPlan()
        let syncs = SyncCounter()
        let fs = SyncCountingFileSystem(base: FaultyFileSystem(plan: plan), syncs: syncs)
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

    /// A save whose fsync failed (and whose cut back failed too) threw; the process then
    /// dies. Recovery must not bring that save back: it was reported as not made. (It used to
    /// come back committed.)
    @Test func aSaveWhoseFsyncFailedIsNotResurrectedByRecovery() throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL)  // full durability
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
        #expect(try FSSupport.reopenedTitles(crashed.storeURL) == ["a1"], "the save that threw is committed after recovery")
        try rig.store.close()
    }

    /// `-lock` marks an open session; a full-durability save returns only once the folder
    /// entry that created it is synced (once per session), or after a power cut the strict
    /// open finds no `-lock` and reports the file as truncated. (`-lock` used to be created
    /// without a folder sync.)
    @Test func theLockFileThatMarksASessionIsSyncedBeforeASaveIsAcknowledged() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        do {  // create the store and close it cleanly
            let store = try FileStore.open(at: folder.storeURL, model: model)
            try store.close()
        }
        let syncs = SyncCounter()
        let fs = SyncCountingFileSystem(base: FaultyFileSystem(plan: FaultPlan()), syncs: syncs)
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

    /// The session that crashed created `-lock` and died before its first save (or its
    /// compaction's folder sync failed): those folder entries may still be only in memory.
    /// The open that recovers syncs the folder before it acknowledges a save, or those saves
    /// could be lost with the entries by a power cut (they were, before it did).
    @Test(arguments: ["lock created, no save", "compaction rename unsynced"])
    func aRecoveringOpenSyncsTheFolderBeforeItAcknowledgesASave(crashedSession: String) throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        if crashedSession == "lock created, no save" {
            do {
                let store = try FileStore.open(at: folder.storeURL, model: model)
                try FSSupport.insertBooks(try FSSupport.context(for: store, model: model), ["before"])
                try store.close()
            }
            // The crashed session: it opened the store (creating -lock) and died.
            _ = FileManager.default.createFile(atPath: folder.storeURL.path + "-lock", contents: nil)
        } else {
            let plan = FaultPlan()
            let store = try FileStore.open(
                at: folder.storeURL, model: model,
                options: FileStore.Options(durability: .full, fileSystem: FaultyFileSystem(plan: plan), compactionThreshold: 1 << 40))
            try FSSupport.insertBooks(try FSSupport.context(for: store, model: model), ["before"])
            plan.arm(.syncDirectory, on: "", .fail(EIO))
            #expect(throws: FileStoreError.self) { try store.compact() }  // renamed; the rename not synced
            // The process dies here (as `stop` leaves it: -lock kept, nothing more written).
            store.state.withLock { store.stop(&$0) }
        }
        #expect(FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))

        let syncs = SyncCounter()
        let fs = SyncCountingFileSystem(base: FaultyFileSystem(plan: FaultPlan()), syncs: syncs)
        let store = try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(durability: .full, fileSystem: fs))
        try FSSupport.insertBooks(try FSSupport.context(for: store, model: model), ["acknowledged"])
        #expect(
            syncs.value.load(ordering: .relaxed) > 0,
            "a full-durability save was acknowledged after a recovering open without any folder sync (\(crashedSession))")
        try store.close()
    }

    /// The record's fsync writes it and reports EIO; the cut is made, but the sync after it
    /// fails too. Nothing written can be trusted to reach the disk any more, so the store
    /// object stops instead of carrying on over a record that may come back (it did not
    /// stop before). That record may then count as saved after a power cut — the one case
    /// the format documents — but nothing is written on top of it, and the state the store
    /// recovers is one a sequence of saves produced.
    @Test func aFailedSaveWhoseCutCannotBeSyncedStopsTheStore() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        do {
            let store = try FileStore.open(at: folder.storeURL, model: model)
            try store.close()
        }
        let script = SyncScript()
        script.durable.withLock { $0 = (try? FSSupport.bytes(folder.storeURL)) ?? [] }
        let store = try FileStore.open(
            at: folder.storeURL, model: model, options: FileStore.Options(durability: .full, fileSystem: PowerLossFileSystem(script: script)))
        let context = try FSSupport.context(for: store, model: model)
        try FSSupport.insertBooks(context, ["a"])
        script.steps.withLock { $0 = [(persist: true, fail: true), (persist: false, fail: true)] }
        #expect(throws: (any Error).self) { try FSSupport.insertBooks(context, ["b"]) }
        #expect(store.isClosed, "the failed save could not be undone durably, so the store stopped")
        #expect(throws: (any Error).self) { try FSSupport.insertBooks(context, ["c"]) }

        // Power cut: the disk holds what the last persisting sync wrote, and -lock.
        let after = try TemporaryFolder()
        try FSSupport.write(script.durable.withLock { $0 }, to: after.storeURL)
        _ = FileManager.default.createFile(atPath: after.storeURL.path + "-lock", contents: nil)
        let titles = try FSSupport.reopenedTitles(after.storeURL)
        #expect(titles == ["a"] || titles == ["a", "b"], "\(titles)")
    }
}
