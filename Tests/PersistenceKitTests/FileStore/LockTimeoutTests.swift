import Foundation
import Testing
@testable import PersistenceKit

/// `NSPersistentStoreDescription.timeout` (`NSPersistentStoreTimeoutOption`): an open of a
/// store another process has open waits up to that long for it to close, instead of failing
/// at once.
@Suite("File store lock timeout")
struct LockTimeoutTests {
    @Test("Another process waiting with a timeout opens the store once this one closes it")
    func waitsForTheOtherProcess() async throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        let marker = folder.url.appendingPathComponent("waiting").path
        let path = folder.storeURL.path
        let other = Task { await Self.otherProcessWaits(path: path, marker: marker) }
        let deadline = ContinuousClock.now + .seconds(60)
        while !FileManager.default.fileExists(atPath: marker) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(FileManager.default.fileExists(atPath: marker), "the other process did not start")
        // Held a little longer, so that the other process's open meets the lock and waits:
        // without the timeout it would fail (exit code 2).
        try await Task.sleep(for: .milliseconds(300))
        try FSSupport.close(container)
        await other.value
    }

    /// Another process says it is about to wait (it makes `marker`), then opens the store at
    /// `path` with a 60 s timeout: exit code 42 when the open succeeded.
    static func otherProcessWaits(path: String, marker: String) async {
        await #expect(processExitsWith: .exitCode(42)) { [path = path as String, marker = marker as String] in
            // Without a timeout the open fails at once: the store is held.
            do {
                _ = try FileStore.open(at: URL(fileURLWithPath: path), model: try Fixtures.model())
                exit(3)
            } catch let e as FileStoreError where e.kind == .lockedByAnotherProcess {
            } catch {
                exit(4)
            }
            _ = FileManager.default.createFile(atPath: marker, contents: Data())
            var options = FileStore.Options()
            options.lockTimeout = 60
            do {
                let store = try FileStore.open(at: URL(fileURLWithPath: path), model: try Fixtures.model(), options: options)
                try store.close()
                exit(42)
            } catch {
                exit(2)
            }
        }
    }

    @Test("The option comes from the description; a value that is not a number of seconds is refused, typed")
    func fromTheDescription() throws {
        let description = NSPersistentStoreDescription(url: URL(fileURLWithPath: "/tmp/unused.pkstore"))
        description.timeout = 2.5
        #expect(description.effectiveOptions[NSPersistentStoreTimeoutOption] == "2.5")
        let folder = try TemporaryFolder()
        let container = NSPersistentContainer(name: "Timeout", managedObjectModel: try Fixtures.model())
        let bad = NSPersistentStoreDescription(url: folder.storeURL)
        bad.setOption("soon", forKey: NSPersistentStoreTimeoutOption)
        container.persistentStoreDescriptions = [bad]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get() as? CoreDataError)
        #expect(error.code == .persistentStoreOpen)
        #expect(error.message.contains("soon"))
    }
}
