import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// Saves that fail in the file layer (short writes, a full disk, a failed fsync, and a cut
/// back that fails too): the save throws a typed error carrying the store's I/O error,
/// nothing of it is visible, and the application can retry, roll back, or close.
@Suite("Failed saves") struct FailedSaveTests {
    enum SaveFault: String, CaseIterable, Sendable {
        case shortWrite, diskFull, fsyncFails
        case shortWriteAndCutBackFails, diskFullAndCutBackFails, fsyncFailsAndCutBackFails

        var errno: Int32 {
            switch self {
            case .shortWrite, .shortWriteAndCutBackFails: 0
            case .diskFull, .diskFullAndCutBackFails: ENOSPC
            case .fsyncFails, .fsyncFailsAndCutBackFails: EIO
            }
        }

        func arm(_ plan: FaultPlan) {
            switch self {
            case .shortWrite, .shortWriteAndCutBackFails: plan.arm(.write, on: ".pkstore", .shortWrite)
            case .diskFull, .diskFullAndCutBackFails: plan.arm(.write, on: ".pkstore", .partialThenFail(ENOSPC))
            case .fsyncFails, .fsyncFailsAndCutBackFails: plan.arm(.sync, on: ".pkstore", .fail(EIO))
            }
            switch self {
            case .shortWriteAndCutBackFails, .diskFullAndCutBackFails, .fsyncFailsAndCutBackFails:
                plan.arm(.truncate, on: ".pkstore", .fail(EIO))
            default: break
            }
        }
    }

    /// What the application does after the failed save.
    enum Then: String, CaseIterable, Sendable {
        /// Saves the same context again (its changes were kept).
        case retry
        /// Rolls the failed changes back and saves something else.
        case rollBackAndSaveOther
        /// Closes the store at once.
        case close
    }

    @Test(arguments: SaveFault.allCases, Then.allCases)
    func failedSaveThrowsTypedErrorAndLosesNothing(fault: SaveFault, then: Then) throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL)
        try rig.insert(["a1", "a2", "a3"])
        try rig.insert(["a4"])
        let sizeBefore = rig.store.fileSize

        fault.arm(rig.plan)
        do {
            try rig.insert(["b1", "b2"])
            Issue.record("the save succeeded although \(fault) was injected")
        } catch {
            FSSupport.expectTypedSaveFailure(error, errno: fault.errno)
        }
        #expect(rig.plan.fired >= 1)
        rig.plan.disarm()

        // Nothing of the failed save is visible; everything before it is.
        #expect(try rig.storedTitles() == ["a1", "a2", "a3", "a4"])
        #expect(rig.store.fileSize == sizeBefore)

        var expected = ["a1", "a2", "a3", "a4"]
        switch then {
        case .retry:
            try rig.save()
            try rig.insert(["c1"])
            expected += ["b1", "b2", "c1"]
        case .rollBackAndSaveOther:
            rig.context.performAndWait { rig.context.rollback() }
            try rig.insert(["c1"])
            expected += ["c1"]
        case .close:
            break
        }
        expected.sort()
        #expect(try rig.storedTitles() == expected)
        try rig.store.close()
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        // The reopen is strict (clean close): a torn tail left by the fault would be reported.
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == expected)
    }

    @Test func failedSaveWithNormalDurabilityIsAlsoTyped() throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, durability: .normal)
        try rig.insert(["a1"])
        rig.plan.arm(.write, on: ".pkstore", .partialThenFail(ENOSPC))
        do {
            try rig.insert(["b1"])
            Issue.record("the save succeeded although ENOSPC was injected")
        } catch {
            FSSupport.expectTypedSaveFailure(error, errno: ENOSPC)
        }
        try rig.save()
        try rig.store.close()
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == ["a1", "b1"])
    }

    /// When a failed save's record can be neither cut off nor have its marker overwritten,
    /// the store object stops: later saves fail, and its lock is released so the store opens
    /// again in this process, recovering (-lock is kept) without the torn record. (Compaction
    /// never leaves the store in this state: it checks the new file before the rename, and
    /// after the rename only the folder sync can fail.)
    @Test func aFailedSaveThatCannotBeUndoneStopsTheStore() throws {
        let folder = try TemporaryFolder()
        let rig = try FSSupport.Rig(folder.storeURL, durability: .normal)
        try rig.insert(["a1"])
        let name = folder.storeURL.lastPathComponent
        rig.plan.arm(.write, on: name, .shortWrite)  // the record, half written
        rig.plan.arm(.truncate, on: name, .fail(EIO))  // cutting it off fails
        rig.plan.arm(.write, on: name, .fail(EIO))  // and so does overwriting its marker
        let error = #expect(throws: CoreDataError.self) { try rig.insert(["b1"]) }
        #expect(error?.message.contains("stopped") == true)
        #expect(rig.plan.fired == 3)
        rig.plan.disarm()
        let stopped = #expect(throws: FileStoreError.self) { _ = try rig.store.allocatePrimaryKeys(entity: 0, count: 1) }
        #expect(stopped?.kind == .closed)
        try? rig.store.close()
        let again = try FileStore.open(at: folder.storeURL, model: rig.model)
        let context = try FSSupport.context(for: again, model: rig.model)
        let titles = try context.performAndWait { try context.fetch(Book.fetchRequest()).map(\.title) }
        #expect(titles == ["a1"])
        try again.close()
    }
}
