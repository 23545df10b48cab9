import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

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

// MARK: - Tests

@Suite struct FaultInjectionTests {
    /// A store opened through the faulty file layer, with a context on it.
    struct Rig {
        let url: URL
        let plan = FaultPlan()
        let model: NSManagedObjectModel
        let store: FileStore
        let context: NSManagedObjectContext

        init(_ url: URL, compactionThreshold: Int = 64 << 10, durability: FileStore.Durability = .full) throws {
            self.url = url
            model = try Fixtures.model()
            store = try FileStore.open(
                at: url, model: model,
                options: FileStore.Options(
                    durability: durability, fileSystem: FaultyFileSystem(plan: plan), compactionThreshold: compactionThreshold))
            context = try FSSupport.context(for: store, model: model)
        }

        /// Inserts books with these titles and saves.
        func insert(_ titles: [String]) throws {
            try FSSupport.insertBooks(context, titles)
        }

        func save() throws { try context.performAndWait { try context.save() } }

        /// The titles the store holds, read through a fresh coordinator and context.
        func storedTitles() throws -> [String] {
            try FaultInjectionTests.titles(in: store, model: model)
        }
    }

    static func titles(in store: FileStore, model: NSManagedObjectModel) throws -> [String] {
        let context = try FSSupport.context(for: store, model: model)
        return try context.performAndWait { try context.fetch(Book.fetchRequest()).map(\.title).sorted() }
    }

    /// Opens the store again with the real file system (strictly, when it was closed cleanly)
    /// and returns its titles.
    static func reopenedTitles(_ url: URL) throws -> [String] {
        let model = try Fixtures.model()
        let store = try FileStore.open(at: url, model: model)
        defer { try? store.close() }
        return try titles(in: store, model: model)
    }

    /// Checks that a failed save came out as a typed error carrying the store's I/O error.
    static func expectTypedSaveFailure(
        _ error: any Error, errno expected: Int32, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let error = error as? CoreDataError else {
            Issue.record("the save threw \(type(of: error)), not CoreDataError: \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == .persistentStoreSave, sourceLocation: sourceLocation)
        // The store's typed error must travel with the save error (CoreDataError.underlying).
        let cause = error.underlying as? FileStoreError
        #expect(
            cause?.kind == .io && cause?.underlying?.code == expected,
            "the save error should carry the store's FileStoreError (.io, errno \(expected)) as underlying: \(error)",
            sourceLocation: sourceLocation)
    }

    static func diskSize(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? -1
    }

    // MARK: Saves

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
        let rig = try Rig(folder.storeURL)
        try rig.insert(["a1", "a2", "a3"])
        try rig.insert(["a4"])
        let sizeBefore = rig.store.fileSize

        fault.arm(rig.plan)
        do {
            try rig.insert(["b1", "b2"])
            Issue.record("the save succeeded although \(fault) was injected")
        } catch {
            Self.expectTypedSaveFailure(error, errno: fault.errno)
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
        #expect(try Self.reopenedTitles(folder.storeURL) == expected)
    }

    @Test func failedSaveWithNormalDurabilityIsAlsoTyped() throws {
        let folder = try TemporaryFolder()
        let rig = try Rig(folder.storeURL, durability: .normal)
        try rig.insert(["a1"])
        rig.plan.arm(.write, on: ".pkstore", .partialThenFail(ENOSPC))
        do {
            try rig.insert(["b1"])
            Issue.record("the save succeeded although ENOSPC was injected")
        } catch {
            Self.expectTypedSaveFailure(error, errno: ENOSPC)
        }
        try rig.save()
        try rig.store.close()
        #expect(try Self.reopenedTitles(folder.storeURL) == ["a1", "b1"])
    }

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
        #expect(try Self.reopenedTitles(folder.storeURL) == ["first"])
    }

    // MARK: Compaction

    /// Inserts `count` books and rewrites each title `rewrites` times, one save per rewrite.
    static func churn(_ rig: Rig, books count: Int, rewrites: Int) throws -> [String] {
        try rig.context.performAndWait {
            var books: [Book] = []
            for i in 0..<count {
                let b = Book(context: rig.context)
                b.title = "book \(i)"
                b.pages = Int64(i)
                books.append(b)
            }
            try rig.context.save()
            for r in 0..<rewrites {
                for (i, b) in books.enumerated() { b.title = "book \(i) rev \(r) " + String(repeating: "x", count: 40) }
                try rig.context.save()
            }
            return books.map(\.title).sorted()
        }
    }

    @Test func compactionShrinksTheFileToAtMostTwiceTheLiveData() throws {
        let folder = try TemporaryFolder()
        let rig = try Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
        let expected = try Self.churn(rig, books: 20, rewrites: 30)
        let grown = rig.store.fileSize
        #expect(grown > 4 * rig.store.liveDataSize)
        #expect(rig.store.compactionCount == 0)

        try rig.store.compact()
        #expect(rig.store.compactionCount == 1)
        #expect(rig.store.fileSize <= 2 * rig.store.liveDataSize)
        #expect(rig.store.fileSize < grown)
        #expect(try Self.diskSize(folder.storeURL) == rig.store.fileSize)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-compact"))
        #expect(try rig.storedTitles() == expected)

        // Still usable, and the compacted file reopens with everything in it.
        try rig.insert(["after"])
        try rig.store.close()
        #expect(try Self.reopenedTitles(folder.storeURL) == (expected + ["after"]).sorted())
    }

    @Test func automaticCompactionKeepsTheFileBounded() throws {
        let folder = try TemporaryFolder()
        let threshold = 4096
        let rig = try Rig(folder.storeURL, compactionThreshold: threshold, durability: .normal)
        let titles = try rig.context.performAndWait {
            var books: [Book] = []
            for i in 0..<10 {
                let b = Book(context: rig.context)
                b.title = "book \(i)"
                books.append(b)
            }
            try rig.context.save()
            for r in 0..<300 {
                let b = books[r % books.count]
                b.title = "book \(r % books.count) rev \(r)"
                try rig.context.save()
                // Compaction runs before a save, so the file may exceed the bound by one record.
                let bound = max(threshold, 2 * rig.store.liveDataSize + 512) + 512
                #expect(rig.store.fileSize <= bound, "after rewrite \(r): file \(rig.store.fileSize) > \(bound)")
            }
            return books.map(\.title).sorted()
        }
        #expect(rig.store.compactionCount > 0)
        try rig.store.close()
        #expect(try Self.reopenedTitles(folder.storeURL) == titles)
    }

    enum CompactionFault: String, CaseIterable, Sendable {
        case diskFullWritingNewFile, shortWriteOfNewFile, fsyncOfNewFileFails, renameFails

        func arm(_ plan: FaultPlan) {
            switch self {
            case .diskFullWritingNewFile: plan.arm(.write, on: "-compact", .partialThenFail(ENOSPC))
            case .shortWriteOfNewFile: plan.arm(.write, on: "-compact", .shortWrite)
            case .fsyncOfNewFileFails: plan.arm(.sync, on: "-compact", .fail(EIO))
            case .renameFails: plan.arm(.rename, on: "-compact", .fail(EXDEV))
            }
        }

        var errno: Int32 {
            switch self {
            case .diskFullWritingNewFile: ENOSPC
            case .shortWriteOfNewFile: 0
            case .fsyncOfNewFileFails: EIO
            case .renameFails: EXDEV
            }
        }
    }

    /// `obtainPermanentIDs(for:)` writes the keys it hands out; when that write fails the
    /// objects keep their temporary IDs, and saving them later works.
    @Test func failingToRecordPermanentIDsKeepsTheTemporaryOnes() throws {
        let folder = try TemporaryFolder()
        let rig = try Rig(folder.storeURL)
        try rig.insert(["before"])
        rig.plan.arm(.write, on: folder.storeURL.lastPathComponent, .fail(ENOSPC))
        try rig.context.performAndWait {
            let book = Book(context: rig.context)
            book.title = "later"
            #expect(throws: FileStoreError.self) { try rig.context.obtainPermanentIDs(for: [book]) }
            #expect(book.objectID.isTemporaryID)
            try rig.context.save()
            #expect(!book.objectID.isTemporaryID)
        }
        #expect(rig.plan.fired == 1)
        #expect(try rig.storedTitles() == ["before", "later"])
        try rig.store.close()
    }

    /// When a failed save's record can be neither cut off nor have its marker overwritten,
    /// the store object stops: later saves fail, and its lock is released so the store opens
    /// again in this process, recovering (-lock is kept) without the torn record. (This
    /// replaces a test of compaction failing after its rename: compaction now checks the new
    /// file before the rename, and nothing after it can fail but the folder sync.)
    @Test func aFailedSaveThatCannotBeUndoneStopsTheStore() throws {
        let folder = try TemporaryFolder()
        let rig = try Rig(folder.storeURL, durability: .normal)
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

    @Test(arguments: CompactionFault.allCases)
    func failedExplicitCompactionLeavesTheStoreConsistentAndUsable(fault: CompactionFault) throws {
        let folder = try TemporaryFolder()
        let rig = try Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
        var expected = try Self.churn(rig, books: 10, rewrites: 10)
        let size = rig.store.fileSize
        let diskSize = try Self.diskSize(folder.storeURL)

        fault.arm(rig.plan)
        let error = #expect(throws: FileStoreError.self) { try rig.store.compact() }
        #expect(error?.kind == .io)
        #expect(error?.path == FSSupport.path(folder.storeURL))
        #expect(error?.underlying?.code == fault.errno)
        #expect(rig.plan.fired == 1)
        rig.plan.disarm()

        #expect(rig.store.compactionCount == 0)
        #expect(rig.store.fileSize == size)
        #expect(try Self.diskSize(folder.storeURL) == diskSize)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-compact"))
        #expect(try rig.storedTitles() == expected)

        try rig.insert(["after failure"])
        expected = (expected + ["after failure"]).sorted()
        try rig.store.compact()
        #expect(rig.store.compactionCount == 1)
        #expect(rig.store.fileSize <= 2 * rig.store.liveDataSize)
        try rig.insert(["after compaction"])
        expected = (expected + ["after compaction"]).sorted()
        #expect(try rig.storedTitles() == expected)
        try rig.store.close()
        #expect(try Self.reopenedTitles(folder.storeURL) == expected)
    }

    @Test(arguments: CompactionFault.allCases)
    func failedAutomaticCompactionFailsTheSaveTypedAndLosesNothing(fault: CompactionFault) throws {
        let folder = try TemporaryFolder()
        let rig = try Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
        var expected = try Self.churn(rig, books: 10, rewrites: 10)
        // Reopen with a small threshold so that the next save compacts.
        try rig.store.close()
        let small = try Rig(folder.storeURL, compactionThreshold: 1024, durability: .normal)
        fault.arm(small.plan)
        do {
            try small.insert(["trigger"])
            Issue.record("the save succeeded although compaction failed with \(fault)")
        } catch {
            Self.expectTypedSaveFailure(error, errno: fault.errno)
        }
        small.plan.disarm()
        #expect(small.store.compactionCount == 0)
        #expect(try small.storedTitles() == expected)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + "-compact"))

        try small.save()  // the kept changes, now with a working compaction
        expected = (expected + ["trigger"]).sorted()
        #expect(small.store.compactionCount == 1)
        #expect(try small.storedTitles() == expected)
        try small.store.close()
        #expect(try Self.reopenedTitles(folder.storeURL) == expected)
    }

    /// The folder sync after the rename fails: the new file is already in place. The issue
    /// requires the store to stay usable after a failure during compaction.
    @Test func folderSyncFailureAfterCompactionKeepsTheStoreUsable() throws {
        let folder = try TemporaryFolder()
        var expected: [String] = []
        do {
            let rig = try Rig(folder.storeURL, compactionThreshold: 1 << 40, durability: .normal)
            expected = try Self.churn(rig, books: 5, rewrites: 5)
            rig.plan.arm(.syncDirectory, on: "", .fail(EIO))
            let error = #expect(throws: FileStoreError.self) { try rig.store.compact() }
            #expect(error?.kind == .io)
            #expect(error?.underlying?.code == EIO)
            rig.plan.disarm()

            // Usable: either the same store keeps working, or it can be opened again in-process.
            do {
                try rig.insert(["after"])
                expected = (expected + ["after"]).sorted()
                #expect(try rig.storedTitles() == expected)
            } catch {
                Issue.record("after a failed folder sync during compaction the store is unusable: \(error)")
                rig.context.performAndWait { rig.context.rollback() }
                do {
                    let again = try FileStore.open(at: folder.storeURL, model: rig.model)
                    #expect(try Self.titles(in: again, model: rig.model) == expected)
                    try again.close()
                } catch {
                    Issue.record("and it cannot be opened again in this process either: \(error)")
                }
            }
            try? rig.store.close()
        }
        // Once every reference is gone, the data is all there.
        #expect(try Self.reopenedTitles(folder.storeURL) == expected)
    }
}
