import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

// Second durability review of the file store: each test fails on the code as it is.

/// What each sync of the store file does: whether its data reaches the "disk" (the copy a
/// power cut leaves), and whether it reports failure. Syncs past the script persist and succeed.
final class SyncScript: Sendable {
    let steps = TestMutex<[(persist: Bool, fail: Bool)]>([])
    /// The store file's bytes as of the last sync that persisted: what a power cut leaves.
    let durable = TestMutex<[UInt8]>([])
    func next() -> (persist: Bool, fail: Bool) {
        steps.withLock { $0.isEmpty ? (true, false) : $0.removeFirst() }
    }
}

/// A store file whose syncs follow a ``SyncScript`` (an `fsync` may write the data and still
/// report EIO, or fail without writing anything).
final class PowerLossFile: StoreFile {
    let base: any StoreFile
    let path: String
    let script: SyncScript
    init(base: any StoreFile, path: String, script: SyncScript) {
        self.base = base
        self.path = path
        self.script = script
    }
    func size() throws -> Int { try base.size() }
    func read(at offset: Int, count: Int) throws -> [UInt8] { try base.read(at: offset, count: count) }
    func write(_ bytes: [UInt8], at offset: Int) throws { try base.write(bytes, at: offset) }
    func sync() throws {
        let step = script.next()
        if step.persist {
            try base.sync()
            let bytes = try base.read(at: 0, count: try base.size())
            script.durable.withLock { $0 = bytes }
        }
        if step.fail { throw StoreIOError(path: path, operation: "fsync", code: EIO) }
    }
    func truncate(to size: Int) throws { try base.truncate(to: size) }
    func tryLock() throws -> Bool { try base.tryLock() }
    func close() { base.close() }
}

struct PowerLossFileSystem: StoreFileSystem {
    let base = PosixFileSystem()
    let script: SyncScript
    func open(_ path: String, create: Bool) throws -> any StoreFile {
        let file = try base.open(path, create: create)
        return path.hasSuffix(".pkstore") ? PowerLossFile(base: file, path: path, script: script) : file
    }
    func fileExists(_ path: String) -> Bool { base.fileExists(path) }
    func rename(_ from: String, to: String) throws { try base.rename(from, to: to) }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ directory: String) throws { try base.syncDirectory(directory) }
}

@Suite struct DurabilityReview2Tests {
    // MARK: 1. A recovering open acknowledges saves without syncing the folder

    /// The session that crashed created `-lock` and died before its first save (or its
    /// compaction's folder sync failed): those folder entries may still be only in memory.
    /// The open that recovers does not sync the folder either, so the saves it acknowledges
    /// can be lost with them by a power cut.
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
        let fs = ReviewFileSystem(base: FaultyFileSystem(plan: FaultPlan()), syncs: syncs)
        let store = try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(durability: .full, fileSystem: fs))
        try FSSupport.insertBooks(try FSSupport.context(for: store, model: model), ["acknowledged"])
        #expect(
            syncs.value.load(ordering: .relaxed) > 0,
            "a full-durability save was acknowledged after a recovering open without any folder sync (\(crashedSession))")
        try store.close()
    }

    // MARK: 2. A store loaded by one coordinator is closed by another coordinator's remove

    /// The interleaving of `addPersistentStore(type:at:options:)` on coordinator B (its
    /// factory's `FileStore.open`, then `addPersistentStore(_:)`) with `remove` on A.
    @Test func aStoreLoadedWhileAnotherCoordinatorRemovesItIsNotClosedUnderTheLoader() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let a = NSPersistentStoreCoordinator(managedObjectModel: model)
        let storeA = try a.addPersistentStore(type: NSFileStoreType, at: folder.storeURL)
        let b = NSPersistentStoreCoordinator(managedObjectModel: model)
        // B's factory step: the shared store, found open.
        let storeB = try FileStore.open(at: folder.storeURL, model: model)
        #expect(storeB === storeA as? FileStore)
        try a.remove(storeA)  // A's remove: attachments 1 → 0, closes the store
        // B's add step refuses the store A closed (it no longer adds a closed store silently);
        // loading by type opens it again.
        let refused = #expect(throws: CoreDataError.self) { try b.addPersistentStore(storeB) }
        #expect(refused?.code == .persistentStoreOpen)
        try b.addPersistentStore(type: NSFileStoreType, at: folder.storeURL)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: b)
        try FSSupport.insertBooks(context, ["saved"])
    }

    /// The same race through the public loading call only.
    @Test func concurrentLoadAndRemoveNeverLeaveALoadedStoreClosed() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let options = [FileStore.durabilityOptionKey: "normal"]
        var hits = 0
        let iterations = Int(ProcessInfo.processInfo.environment["RACE_ITERATIONS"] ?? "1500") ?? 1500
        for _ in 0..<iterations {
            let a = NSPersistentStoreCoordinator(managedObjectModel: model)
            let storeA = try a.addPersistentStore(type: NSFileStoreType, at: folder.storeURL, options: options)
            let b = NSPersistentStoreCoordinator(managedObjectModel: model)
            let ready = Atomic<Int>(0)
            let loaded = TestMutex<(any PersistentStore)?>(nil)
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                ready.add(1, ordering: .sequentiallyConsistent)
                while ready.load(ordering: .sequentiallyConsistent) < 2 {}
                if i == 0 {
                    try? a.remove(storeA)
                } else {
                    let s = try? b.addPersistentStore(type: NSFileStoreType, at: folder.storeURL, options: options)
                    loaded.withLock { $0 = s }
                }
            }
            guard let s = loaded.withLock({ $0 }) as? FileStore else { Issue.record("B failed to load"); return }
            if s.isClosed { hits += 1 }
            try? b.remove(s)
            try? s.close()
        }
        #expect(hits == 0, "\(hits) of \(iterations) loads returned a store that another coordinator's remove had closed")
    }

    // MARK: 3. A failed save's cut is not synced, and the store carries on

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
        let titles = try FaultInjectionTests.reopenedTitles(after.storeURL)
        #expect(titles == ["a"] || titles == ["a", "b"], "\(titles)")
    }

    // MARK: 4. A row with more than 65,535 values traps instead of being refused

    @Test func aRowWithMoreValuesThanTheFormatHoldsIsRefusedNotATrap() async throws {
        await #expect(processExitsWith: .success) {
            let folder = try TemporaryFolder()
            let model = try Fixtures.model()
            let store = try FileStore.open(at: folder.storeURL, model: model)
            let shelves = model.entitiesByName["Shelf"]!.index
            var transaction = StoreTransaction()
            transaction.inserts = [
                StoreRow(id: StoreRowID(entity: shelves, primaryKey: 1), version: 0, values: Array(repeating: .null, count: 70_000))
            ]
            do {
                _ = try store.commit(transaction)
                exit(3)  // written: its value count wrapped
            } catch let e as FileStoreError where e.kind == .limitExceeded {
                exit(0)
            } catch {
                exit(4)
            }
        }
    }

    // MARK: 5. A checksum-valid record with the largest sequence number crashes the next save

    @Test func aFileWhoseLastSequenceIsTheLargestGivesATypedErrorNotATrap() async throws {
        let folder = try TemporaryFolder()
        var bytes = try CorruptionTests.makeCleanStore(folder.storeURL)
        // The last transaction (the record before the close record) gets sequence UInt64.max,
        // with its checksum fixed: a checksum-valid record with impossible contents.
        let offsets = FSSupport.recordOffsets(bytes)
        let last = offsets[offsets.count - 2]
        for i in 0..<8 { bytes[last + 12 + i] = 0xFF }
        FSSupport.fixRecordCRC(&bytes, recordAt: last)
        try FSSupport.write(bytes, to: folder.storeURL)
        let path = folder.storeURL.path
        await #expect(processExitsWith: .success) { [path = path as String] in
            let model = try Fixtures.model()
            do {
                let store = try FileStore.open(at: URL(fileURLWithPath: path), model: model)
                let shelves = model.entitiesByName["Shelf"]!.index
                let key = try store.allocatePrimaryKeys(entity: shelves, count: 1).lowerBound
                var transaction = StoreTransaction()
                transaction.inserts = [StoreRow(id: StoreRowID(entity: shelves, primaryKey: key), version: 0, values: [.string("s"), .references([])])]
                _ = try store.commit(transaction)
                exit(0)  // accepted (wrapping the sequence) is no crash either
            } catch is FileStoreError {
                exit(0)
            }
        }
    }

    // MARK: 6. A failed lock attempt leaves a -lock it created: the next open "recovers" damage

    /// The store was cut short after a clean close (its last save and close record partly
    /// gone): a strict open reports `truncated`. One open whose lock call fails with an I/O
    /// error leaves the `-lock` it just created; every later open then takes the file for
    /// crashed, cuts the damaged tail and opens without a word.
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

    // MARK: 7. The image outgrows its mapping

    @Test(arguments: [FileStore.Durability.full, .normal])
    func aStoreThatOutgrowsItsMappingReadsEveryRowBack(durability: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [ReviewBlob.self])
        let store = try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(durability: durability))
        let entity = model.entities[0].index
        let chunk = 20 << 20
        var expected: [Int64: UInt8] = [:]
        for i in 0..<5 {  // 100 MiB: past the 64 MiB first mapping
            let key = try store.allocatePrimaryKeys(entity: entity, count: 1).lowerBound
            var transaction = StoreTransaction()
            let fill = UInt8(i + 1)
            transaction.inserts = [StoreRow(id: StoreRowID(entity: entity, primaryKey: key), version: 0, values: [.data(Data(repeating: fill, count: chunk))])]
            _ = try store.commit(transaction)
            expected[key] = fill
            for row in try store.fetchRows(entity: entity, filter: nil) {
                guard case let .data(d) = row.values[0] else { Issue.record("not data"); return }
                #expect(d.count == chunk && d.first == expected[row.id.primaryKey] && d.last == expected[row.id.primaryKey])
            }
        }
        try store.close()
        let again = try FileStore.open(at: folder.storeURL, model: model)
        defer { try? again.close() }
        let rows = try again.fetchRows(entity: entity, filter: nil)
        #expect(rows.count == 5)
        for row in rows {
            guard case let .data(d) = row.values[0] else { Issue.record("not data"); return }
            #expect(d.count == chunk && d.first == expected[row.id.primaryKey] && d.last == expected[row.id.primaryKey])
        }
    }
}

/// A file layer whose `-lock` files cannot be locked: the lock call fails with ENOLCK.
struct LockFailingFileSystem: StoreFileSystem {
    let base = PosixFileSystem()
    final class Unlockable: StoreFile {
        let base: any StoreFile
        init(base: any StoreFile) { self.base = base }
        func size() throws -> Int { try base.size() }
        func read(at offset: Int, count: Int) throws -> [UInt8] { try base.read(at: offset, count: count) }
        func write(_ bytes: [UInt8], at offset: Int) throws { try base.write(bytes, at: offset) }
        func sync() throws { try base.sync() }
        func truncate(to size: Int) throws { try base.truncate(to: size) }
        func tryLock() throws -> Bool { throw StoreIOError(path: "-lock", operation: "fcntl(F_SETLK)", code: ENOLCK) }
        func close() { base.close() }
        func identity() -> FileIdentity? { base.identity() }
    }
    func open(_ path: String, create: Bool) throws -> any StoreFile {
        let file = try base.open(path, create: create)
        return path.hasSuffix("-lock") ? Unlockable(base: file) : file
    }
    func identity(ofPath path: String) -> FileIdentity? { base.identity(ofPath: path) }
    func fileExists(_ path: String) -> Bool { base.fileExists(path) }
    func rename(_ from: String, to: String) throws { try base.rename(from, to: to) }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ directory: String) throws { try base.syncDirectory(directory) }
}
