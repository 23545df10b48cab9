import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

// File layers the tests put under the store (`FileStore.Options.fileSystem`): faults on
// demand, counted folder syncs, silent bit rot, syncs that a power cut may undo, and a lock
// call that fails.

// MARK: - A file layer that fails on demand

/// Which file operations fail, on which files, and how. Thread-safe.
final class FaultPlan: Sendable {
    enum Operation: Sendable { case open, write, sync, truncate, rename, syncDirectory }
    enum Effect: Sendable {
        /// Writes half of the bytes, then throws `StoreIOError(code: 0)`.
        case shortWrite
        /// Writes a third of the bytes, then throws with this errno (a disk filling up).
        case partialThenFail(Int32)
        /// Throws with this errno before doing anything.
        case fail(Int32)
    }
    struct Fault: Sendable {
        var operation: Operation
        var pathSuffix: String
        var effect: Effect
        var remaining: Int
    }

    private let faults = TestMutex<[Fault]>([])
    private let firedCount = Atomic<Int>(0)

    /// Makes the next `times` calls of `operation` on files whose path ends with `suffix` fail.
    func arm(_ operation: Operation, on suffix: String, _ effect: Effect, times: Int = 1) {
        faults.withLock { $0.append(Fault(operation: operation, pathSuffix: suffix, effect: effect, remaining: times)) }
    }

    func disarm() { faults.withLock { $0.removeAll() } }

    /// How many faults were injected so far.
    var fired: Int { firedCount.load(ordering: .relaxed) }

    /// The effect to apply to this call, if a fault is armed for it.
    func take(_ operation: Operation, _ path: String) -> Effect? {
        let effect = faults.withLock { list -> Effect? in
            guard let i = list.firstIndex(where: { $0.operation == operation && path.hasSuffix($0.pathSuffix) && $0.remaining > 0 })
            else { return nil }
            list[i].remaining -= 1
            return list[i].effect
        }
        if effect != nil { firedCount.add(1, ordering: .relaxed) }
        return effect
    }
}

/// ``PosixFileSystem`` with faults injected according to a ``FaultPlan``.
struct FaultyFileSystem: StoreFileSystem {
    let base = PosixFileSystem()
    let plan: FaultPlan

    func open(_ path: String, create: Bool) throws -> any StoreFile {
        if let effect = plan.take(.open, path) { throw FaultyFile.error(effect, path: path, operation: "open") }
        return FaultyFile(base: try base.open(path, create: create), path: path, plan: plan)
    }

    func fileExists(_ path: String) -> Bool { base.fileExists(path) }

    func rename(_ from: String, to: String) throws {
        if let effect = plan.take(.rename, from) { throw FaultyFile.error(effect, path: to, operation: "rename") }
        try base.rename(from, to: to)
    }

    func remove(_ path: String) throws { try base.remove(path) }

    func syncDirectory(_ directory: String) throws {
        if let effect = plan.take(.syncDirectory, directory) {
            throw FaultyFile.error(effect, path: directory, operation: "fsync directory")
        }
        try base.syncDirectory(directory)
    }
}

final class FaultyFile: StoreFile {
    let base: any StoreFile
    let path: String
    let plan: FaultPlan

    init(base: any StoreFile, path: String, plan: FaultPlan) {
        self.base = base
        self.path = path
        self.plan = plan
    }

    static func error(_ effect: FaultPlan.Effect, path: String, operation: String) -> StoreIOError {
        switch effect {
        case .shortWrite: StoreIOError(path: path, operation: operation, code: 0)
        case let .partialThenFail(code), let .fail(code): StoreIOError(path: path, operation: operation, code: code)
        }
    }

    func size() throws -> Int { try base.size() }
    func read(at offset: Int, count: Int) throws -> [UInt8] { try base.read(at: offset, count: count) }

    func write(_ bytes: [UInt8], at offset: Int) throws {
        guard let effect = plan.take(.write, path) else { return try base.write(bytes, at: offset) }
        switch effect {
        case .shortWrite: try base.write(Array(bytes.prefix(bytes.count / 2)), at: offset)
        case .partialThenFail: try base.write(Array(bytes.prefix(bytes.count / 3)), at: offset)
        case .fail: break
        }
        throw Self.error(effect, path: path, operation: "write")
    }

    func sync() throws {
        if let effect = plan.take(.sync, path) { throw Self.error(effect, path: path, operation: "fsync") }
        try base.sync()
    }

    func truncate(to size: Int) throws {
        if let effect = plan.take(.truncate, path) { throw Self.error(effect, path: path, operation: "ftruncate") }
        try base.truncate(to: size)
    }

    func tryLock() throws -> Bool { try base.tryLock() }
    func close() { base.close() }
}

// MARK: - Counting folder syncs, and damaging what compaction writes

/// Counts successful folder syncs.
final class SyncCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// A file that silently flips one bit of each record written to it (bit rot, or a write the
/// disk misdirected without reporting it): what compaction's read-back check is for.
final class RottingFile: StoreFile {
    let base: any StoreFile
    init(base: any StoreFile) { self.base = base }
    func size() throws -> Int { try base.size() }
    func read(at offset: Int, count: Int) throws -> [UInt8] { try base.read(at: offset, count: count) }
    func write(_ bytes: [UInt8], at offset: Int) throws {
        var b = bytes
        if offset >= 64, b.count > 40 { b[30] ^= 0x01 }
        try base.write(b, at: offset)
    }
    func sync() throws { try base.sync() }
    func truncate(to size: Int) throws { try base.truncate(to: size) }
    func tryLock() throws -> Bool { try base.tryLock() }
    func close() { base.close() }
}

/// ``FaultyFileSystem`` that also counts successful folder syncs and, with `rotCompaction`,
/// damages what compaction writes to `-compact`.
struct SyncCountingFileSystem: StoreFileSystem {
    let base: FaultyFileSystem
    let syncs: SyncCounter
    var rotCompaction = false

    func open(_ path: String, create: Bool) throws -> any StoreFile {
        let file = try base.open(path, create: create)
        return rotCompaction && path.hasSuffix("-compact") ? RottingFile(base: file) : file
    }
    func fileExists(_ path: String) -> Bool { base.fileExists(path) }
    func rename(_ from: String, to: String) throws { try base.rename(from, to: to) }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ directory: String) throws {
        try base.syncDirectory(directory)
        syncs.value.add(1, ordering: .relaxed)
    }
}

// MARK: - Syncs that may or may not reach the disk (power cuts)

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

/// ``PosixFileSystem`` whose store files (`.pkstore`) sync as a ``SyncScript`` says.
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

/// ``PosixFileSystem`` whose store files sync and persist, recording what they hold at each
/// sync, and the store and `-lock` at the moment compaction renames `-compact` over the store
/// (a rename it can also be told to fail).
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

// MARK: - A lock call that fails

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
