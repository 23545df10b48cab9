import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

// The store's lock: a record lock on `-lock` against other processes, and StoreLock's
// claims against other store objects of this process.

/// What happened to `-lock` files, in order, and a close that can be held open.
final class LockEvents: Sendable {
    private let entries = TestMutex<[String]>([])
    /// Signalled when the held close starts.
    let closeStarted = DispatchSemaphore(value: 0)
    /// Signalled when a lock is taken.
    let lockTaken = DispatchSemaphore(value: 0)
    /// When set, the next close of a `-lock` file waits (up to `holdLimit`) for another lock to be taken first.
    let holdNextClose = Atomic<Bool>(false)
    static let holdLimit: DispatchTimeInterval = .milliseconds(300)

    var log: [String] { entries.withLock { $0 } }
    func note(_ event: String) { entries.withLock { $0.append(event) } }
}

/// ``PosixFileSystem`` with `-lock` files that report to a ``LockEvents``.
struct LockWatchingFileSystem: StoreFileSystem {
    let base = PosixFileSystem()
    let events: LockEvents

    func open(_ path: String, create: Bool) throws -> any StoreFile {
        let file = try base.open(path, create: create)
        return path.hasSuffix("-lock") ? LockWatchingFile(base: file, events: events) : file
    }
    func fileExists(_ path: String) -> Bool { base.fileExists(path) }
    func rename(_ from: String, to: String) throws { try base.rename(from, to: to) }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ directory: String) throws { try base.syncDirectory(directory) }
    func identity(ofPath path: String) -> FileIdentity? { base.identity(ofPath: path) }
}

final class LockWatchingFile: StoreFile {
    let base: any StoreFile
    let events: LockEvents

    init(base: any StoreFile, events: LockEvents) {
        self.base = base
        self.events = events
    }

    func size() throws -> Int { try base.size() }
    func read(at offset: Int, count: Int) throws -> [UInt8] { try base.read(at: offset, count: count) }
    func write(_ bytes: [UInt8], at offset: Int) throws { try base.write(bytes, at: offset) }
    func sync() throws { try base.sync() }
    func truncate(to size: Int) throws { try base.truncate(to: size) }
    func identity() -> FileIdentity? { base.identity() }

    func tryLock() throws -> Bool {
        let taken = try base.tryLock()
        events.note(taken ? "locked" : "refused")
        if taken { events.lockTaken.signal() }
        return taken
    }

    func close() {
        if events.holdNextClose.exchange(false, ordering: .relaxed) {
            events.note("closing")
            events.closeStarted.signal()
            // A store of this process that takes the lock now would share it with this one.
            _ = events.lockTaken.wait(timeout: .now() + LockEvents.holdLimit)
        }
        base.close()
        events.note("closed")
    }
}

@Suite("The store lock") struct StoreLockTests {
    /// A store that let go of its lock, opened again while another thread spawned a process,
    /// used to fail with "locked by another process". The `flock` lock belonged to the
    /// open file description, which the child shared until it exec'd. A forked child that
    /// never execs makes that window as long as the test needs; a close that fails keeps
    /// `-lock` (a cleanly closed store removes it, and a new file has a new lock).
    @Test func aChildForkedWhileTheStoreIsOpenDoesNotKeepItsLock() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let plan = FaultPlan()
        let options = FileStore.Options(fileSystem: FaultyFileSystem(plan: plan))
        let store = try FileStore.open(at: folder.storeURL, model: model, options: options)
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        let child = fork()
        if child == 0 {
            // The child: wait until the parent closes the pipe, then leave. Only
            // async-signal-safe calls here (the parent has other threads).
            _ = Glibc.close(pipeEnds[1])
            var byte: UInt8 = 0
            _ = read(pipeEnds[0], &byte, 1)
            _exit(0)
        }
        try #require(child > 0)
        _ = Glibc.close(pipeEnds[0])
        defer {
            _ = Glibc.close(pipeEnds[1])
            var status: Int32 = 0
            _ = waitpid(child, &status, 0)
        }
        plan.arm(.sync, on: folder.storeURL.lastPathComponent, .fail(EIO))
        #expect(throws: FileStoreError.self) { try store.close() }
        #expect(FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        // The child still has every descriptor this process had when it forked.
        let again = try FileStore.open(at: folder.storeURL, model: model)
        try again.close()
    }

    /// A store freed on one thread while another thread opens the same path: the open waits
    /// until the freed store has closed its lock file, then takes the lock itself — and keeps
    /// it, against other processes, once the old store is gone. (Before: the open failed with
    /// "locked by another process"; with record locks and no claims, the new store would have
    /// lost its lock when the old one closed its descriptor.)
    @Test func anOpenWaitsForAStoreOfThisProcessStillClosing() async throws {
        let folder = try TemporaryFolder()
        let events = LockEvents()
        let reopened = try Self.openWhileTheLastOwnerIsFreed(folder.storeURL, events: events)
        #expect(events.log == ["locked", "closing", "closed", "locked"])
        #expect(FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"))
        await FSSupport.expectLockedInAnotherProcess(folder.storeURL.path)
        try reopened.close()
    }

    /// Opens a store, frees it on another thread, and opens the path again while the freed
    /// store's close is inside its lock file's close.
    private static func openWhileTheLastOwnerIsFreed(_ url: URL, events: LockEvents) throws -> FileStore {
        let model = try Fixtures.model()
        let options = FileStore.Options(fileSystem: LockWatchingFileSystem(events: events))
        let holder = TestMutex<FileStore?>(try FileStore.open(at: url, model: model, options: options))
        events.lockTaken.wait()  // the first store's own lock
        events.holdNextClose.store(true, ordering: .relaxed)
        let freed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            holder.withLock { $0 = nil }  // the last reference: its deinit closes it
            freed.signal()
        }
        events.closeStarted.wait()
        let reopened = try FileStore.open(at: url, model: model, options: options)
        freed.wait()
        return reopened
    }

    /// Through `loadPersistentStores`, a store locked by another process is a `CoreDataError`
    /// (`.persistentStoreOpen`), as every load error is, with the file store's
    /// `lockedByAnotherProcess` as its underlying error.
    @Test func aLockedStoreLoadsAsACoreDataErrorWithTheStoreErrorUnderneath() async throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        defer { try? FSSupport.close(container) }
        await #expect(processExitsWith: .exitCode(42)) { [path = folder.storeURL.path as String] in
            do {
                _ = try FSSupport.container(at: URL(fileURLWithPath: path))
                exit(1)
            } catch let error as CoreDataError {
                let cause = error.underlying as? FileStoreError
                exit(error.code == .persistentStoreOpen && cause?.kind == .lockedByAnotherProcess ? 42 : 2)
            }
        }
    }

    /// Another process opening an open store gets `lockedByAnotherProcess`; once this process
    /// closes it, the other process opens it.
    @Test func aSecondProcessGetsLockedByAnotherProcess() async throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        let path = folder.storeURL.path
        await FSSupport.expectLockedInAnotherProcess(path)
        // Once this process closes it, another process can open it.
        try FSSupport.close(container)
        await #expect(processExitsWith: .success) { [path = path as String] in
            let store = try FileStore.open(at: URL(fileURLWithPath: path), model: try Fixtures.model())
            try store.close()
        }
    }

    /// The store was cut short after a clean close (its last save and close record partly
    /// gone): a strict open reports `truncated`. One open whose lock call fails with an I/O
    /// error leaves the `-lock` it just created; every later open then took the file for
    /// crashed, cut the damaged tail and opened without a word. A failed lock call now removes
    /// the `-lock` its open created, and the damage is still reported.
    @Test func anOpenWhoseLockCallFailsLeavesNoLockFileBehind() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        do {
            let store = try FileStore.open(at: folder.storeURL, model: model)
            let context = try FSSupport.context(for: store, model: model)
            try FSSupport.insertBooks(context, ["first"])
            try FSSupport.insertBooks(context, ["second"])
            try store.close()
        }
        var bytes = try FSSupport.bytes(folder.storeURL)
        let offsets = FSSupport.recordOffsets(bytes)
        let lastSave = offsets[offsets.count - 2]
        bytes.removeLast(bytes.count - (lastSave + 30))  // the last save and the close record cut short
        try FSSupport.write(bytes, to: folder.storeURL)
        #expect(try CorruptionTests.openError(folder.storeURL)?.kind == .truncated)

        let failing = #expect(throws: FileStoreError.self) {
            try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(fileSystem: LockFailingFileSystem()))
        }
        #expect(failing?.kind == .io)
        #expect(
            !FileManager.default.fileExists(atPath: folder.storeURL.path + "-lock"),
            "the failed open left the -lock it created")
        let error = try CorruptionTests.openError(folder.storeURL)
        #expect(error?.kind == .truncated, "the damaged store now opens as recovered, its last save silently cut: \(String(describing: error))")
    }
}
