import Foundation
import Testing
@testable import PersistenceKit

/// A close that cannot write its close record must leave the store recoverable: the lock
/// file stays, so the next open recovers instead of reporting the file as truncated.
/// (Regression: the lock file used to be removed anyway, making the store unopenable.)
@Suite struct CloseFailureTests {
    @Test(arguments: [FaultPlan.Operation.write, .sync]) func aFailedCloseKeepsTheStoreOpenable(failing operation: FaultPlan.Operation) throws {
        let folder = try TemporaryFolder()
        let rig = try FaultInjectionTests.Rig(folder.storeURL)
        try rig.insert(["kept one", "kept two"])
        rig.plan.arm(operation, on: "store.pkstore", .fail(ENOSPC))
        #expect(throws: FileStoreError.self) { try rig.store.close() }
        #expect(FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        #expect(try FaultInjectionTests.reopenedTitles(folder.storeURL) == ["kept one", "kept two"])
    }
}
