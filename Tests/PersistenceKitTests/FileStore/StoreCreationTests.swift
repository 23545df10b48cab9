import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// A new store file is written as `-new` and renamed into place: a failure while creating it
/// is typed and leaves nothing that keeps the store from opening next time.
@Suite("Creating a store file") struct StoreCreationTests {
    @Test func failureWhileCreatingTheStoreIsTypedAndLeavesNothingBehind() throws {
        let folder = try TemporaryFolder()
        let plan = FaultPlan()
        plan.arm(.write, on: "-new", .partialThenFail(ENOSPC))
        let model = try Fixtures.model()
        let options = FileStore.Options(fileSystem: FaultyFileSystem(plan: plan))
        let error = #expect(throws: FileStoreError.self) { try FileStore.open(at: folder.storeURL, model: model, options: options) }
        #expect(error?.kind == .io)
        #expect(error?.path == FSSupport.path(folder.storeURL))
        #expect(error?.underlying?.code == ENOSPC)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path))

        let store = try FileStore.open(at: folder.storeURL, model: model, options: options)
        let context = try FSSupport.context(for: store, model: model)
        try context.performAndWait {
            Book(context: context).title = "first"
            try context.save()
        }
        try store.close()
        #expect(try FSSupport.reopenedTitles(folder.storeURL) == ["first"])
    }

    /// An open that creates the file and then fails (the folder sync after the rename of
    /// `-new`, or opening the file just created) wrote no save: once the fault is gone the
    /// store opens and works. (Such a store used to never open again.)
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
}
