import Foundation
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file store closes cleanly — close record written, `-lock` removed — without the user
/// removing it from its coordinator: when the last coordinator using it is released, and
/// when the process exits normally with the store still open. Only a clean close removes
/// `-lock`, so its absence is the sign of one.
@Suite("Clean close when the coordinator goes and at process exit")
struct CleanCloseTests {
    @Test("A store still open when the process exits normally is closed cleanly")
    func openStoreIsClosedAtNormalExit() async throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        await #expect(processExitsWith: .success) { [path = url.path as String] in
            let container = try FSSupport.container(at: URL(fileURLWithPath: path))
            let context = container.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).title = "kept"
                try context.save()
            }
            // The container stays alive: only the exit handler can close the store.
            withExtendedLifetime(container) { exit(EXIT_SUCCESS) }
        }
        #expect(!FileManager.default.fileExists(atPath: url.path + "-lock"), "the exit left the store unclosed")
        #expect(try FSSupport.reopenedTitles(url) == ["kept"])
    }

    @Test("A process that ends without running exit handlers leaves the store to recovery")
    func abruptEndLeavesTheStoreToRecovery() async throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        await #expect(processExitsWith: .success) { [path = url.path as String] in
            let container = try FSSupport.container(at: URL(fileURLWithPath: path))
            let context = container.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).title = "kept"
                try context.save()
            }
            withExtendedLifetime(container) { _exit(EXIT_SUCCESS) }
        }
        // No close ran: `-lock` stays, and the next open recovers every returned save.
        #expect(FileManager.default.fileExists(atPath: url.path + "-lock"))
        #expect(try FSSupport.reopenedTitles(url) == ["kept"])
        #expect(!FileManager.default.fileExists(atPath: url.path + "-lock"))
    }

    @Test("Releasing the container closes its store")
    func releasingTheContainerClosesItsStore() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        do {
            let container = try FSSupport.container(at: url)
            let context = container.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).title = "kept"
                try context.save()
            }
            #expect(FileManager.default.fileExists(atPath: url.path + "-lock"))
        }
        #expect(!FileManager.default.fileExists(atPath: url.path + "-lock"), "the released store was not closed")
        #expect(try FSSupport.reopenedTitles(url) == ["kept"])
    }
}
