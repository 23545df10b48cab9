import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// A power cut during a `normal`-durability session: its saves were never synced, so the
/// disk may hold a later record whole and an earlier one damaged. Recovery cuts at the
/// first damage past where the session began appending (recorded in `-lock`), keeping every
/// save before it — a consistent earlier state — instead of refusing the file. Damage in
/// what was synced, or after a `full` session, is still reported. (The missing piece behind
/// "normal durability is crash-consistent": before, such a file was refused as corrupt.)
@Suite("Recovery of a normal-durability session's unsynced saves") struct SyncedPrefixTests {
    /// Saves `titles` one save each.
    static func save(_ context: NSManagedObjectContext, _ titles: [String]) throws {
        try context.performAndWait {
            for t in titles {
                let b = Book(context: context)
                b.title = t
                try context.save()
            }
        }
    }

    /// The store and its `-lock` as a power cut during the session could leave them: copied
    /// while the store is open, with the payload of record `damaged` (counted from the first
    /// record of the file) overwritten.
    @discardableResult
    static func powerCutCopy(of store: URL, to copy: URL, damaging damaged: Int) throws -> Int {
        var bytes = try FSSupport.bytes(store)
        let records = FSSupport.recordOffsets(bytes)
        let at = records[damaged]
        for i in (at + 20)..<(at + 24) { bytes[i] ^= 0xFF }
        try FSSupport.write(bytes, to: copy)
        try FileManager.default.copyItem(atPath: store.path + "-lock", toPath: copy.path + "-lock")
        return at
    }

    /// A store closed cleanly after the saves of `synced`, open again at `normal` durability
    /// with the saves of `unsynced` made: the session a power cut interrupts.
    static func normalSession(at url: URL, synced: [String], unsynced: [String]) throws -> NSPersistentContainer {
        do {
            let first = try FSSupport.container(at: url, durability: "normal")
            try save(first.newBackgroundContext(), synced)
            try FSSupport.close(first)
        }
        let session = try FSSupport.container(at: url, durability: "normal")
        try save(session.newBackgroundContext(), unsynced)
        return session
    }

    /// Expects the damage `powerCutCopy` makes to record `damaged` to be reported as corrupt
    /// at that record.
    static func expectReported(_ store: URL, damaging damaged: Int) throws {
        let copy = try TemporaryFolder()
        let offset = try powerCutCopy(of: store, to: copy.storeURL, damaging: damaged)
        let error = try CorruptionTests.openError(copy.storeURL)
        #expect(error?.kind == .corrupt)
        #expect(error?.offset == offset)
    }

    @Test func damageInANormalSessionsUnsyncedSavesIsCutWithWhatFollows() throws {
        let folder = try TemporaryFolder()
        let session = try Self.normalSession(
            at: folder.storeURL, synced: ["synced 1", "synced 2"], unsynced: ["unsynced 1", "unsynced 2", "unsynced 3"])
        // Records: synced 1, synced 2, close, unsynced 1, 2, 3. Damage "unsynced 2" only.
        let copy = try TemporaryFolder()
        try Self.powerCutCopy(of: folder.storeURL, to: copy.storeURL, damaging: 4)
        let recovered = try FSSupport.container(at: copy.storeURL, durability: "normal")
        #expect(try FSSupport.books(recovered).map(\.title).sorted() == ["synced 1", "synced 2", "unsynced 1"])
        // Recovery used the record and cleared it: the store goes on, and a save works.
        try Self.save(recovered.newBackgroundContext(), ["after"])
        try FSSupport.close(recovered)
        let reopened = try FSSupport.container(at: copy.storeURL)
        #expect(try FSSupport.books(reopened).count == 4)
        try FSSupport.close(reopened)
        try FSSupport.close(session)
    }

    @Test func damageInWhatWasSyncedIsStillReported() throws {
        let folder = try TemporaryFolder()
        let session = try Self.normalSession(at: folder.storeURL, synced: ["synced 1", "synced 2"], unsynced: ["unsynced 1"])
        try Self.expectReported(folder.storeURL, damaging: 0)
        try FSSupport.close(session)
    }

    /// A `full` session synced every save it acknowledged: damage with an intact record after
    /// it is not a power cut's doing, and is reported — also when the crash before it was a
    /// `normal` session's, whose record recovery cleared.
    @Test func afterAFullSessionDamageIsReported() throws {
        let folder = try TemporaryFolder()
        let normal = try FSSupport.container(at: folder.storeURL, durability: "normal")
        try Self.save(normal.newBackgroundContext(), ["normal 1"])
        // The normal session "crashes": its files as they are, -lock with its record.
        let crashed = try TemporaryFolder()
        try FileManager.default.copyItem(at: folder.storeURL, to: crashed.storeURL)
        try FileManager.default.copyItem(atPath: folder.storeURL.path + "-lock", toPath: crashed.storeURL.path + "-lock")
        try FSSupport.close(normal)
        let full = try FSSupport.container(at: crashed.storeURL, durability: "full")
        try Self.save(full.newBackgroundContext(), ["full 1", "full 2", "full 3"])
        // Records: normal 1, full 1, full 2, full 3 (the crashed session wrote no close).
        try Self.expectReported(crashed.storeURL, damaging: 2)
        try FSSupport.close(full)
    }

    /// A compaction starts a new file, synced before its rename: the record about the old
    /// file is cleared first, and the next save records the new file's.
    @Test func aCompactionMovesTheRecordToTheNewFile() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let store = try FileStore.open(at: folder.storeURL, model: model, options: FileStore.Options(durability: .normal))
        let context = try FSSupport.context(for: store, model: model)
        try Self.save(context, ["a", "b"])
        // (Reading -lock through a descriptor of this process drops the store's record lock
        // on it, which only matters against other processes: none here.)
        func recorded() throws -> Int? {
            FileStore.syncedPrefix(in: [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder.storeURL.path + "-lock"))))
        }
        let created = FSSupport.firstRecord(try FSSupport.bytes(folder.storeURL))
        #expect(created > FileStoreFormat.headerSize, "a new file starts with its model record")
        #expect(try recorded() == created, "the new file's header and model record were synced at its creation")
        try store.compact()
        #expect(try recorded() == nil)
        let compacted = store.fileSize
        try Self.save(context, ["c"])
        #expect(try recorded() == compacted)
        try store.close()
    }

    // MARK: Power cuts after the record is cleared
    //
    // A power cut is modelled as: every byte a file held at its last successful fsync is on
    // disk; bytes written after it may or may not be, page by page, in any order
    // (Docs/StoreFormat.md, "normal durability"). The store file is a `PowerLossFile` whose
    // syncs persist and succeed.

    static let page = 4096

    /// What a power cut can leave of `bytes` when `durable` is what the last fsync of the
    /// file covered: every whole page of record `index` that lies past the synced part is
    /// lost (zeros: never written back), every other page was written back.
    static func losingPages(of index: Int, in bytes: [UInt8], durable: [UInt8]) -> [UInt8] {
        let records = FSSupport.recordOffsets(bytes)
        let start = records[index]
        let end = index + 1 < records.count ? records[index + 1] : bytes.count
        let first = max((start + page - 1) / page * page, (durable.count + page - 1) / page * page)
        let last = end / page * page
        var image = bytes
        if first < last { for i in first..<last { image[i] = 0 } }
        return image
    }

    /// Expects the power-cut image to open, holding the saves of some prefix of `history`
    /// (the titles in save order): the state after the last save it kept.
    static func expectAPrefixState(
        _ result: Result<[String], FileStoreError>, of history: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let prefixes = (0...history.count).map { Array(history.prefix($0)).sorted() }
        switch result {
        case let .success(titles):
            #expect(prefixes.contains(titles), "\(what): \(titles) is not the state after any save", sourceLocation: sourceLocation)
        case let .failure(error):
            Issue.record("\(what): the store no longer opens: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// Writes `store` and `lock` as a store and its `-lock` in a fresh folder, opens it with
    /// the POSIX layer and returns the titles, or the open's error.
    static func openPowerCutImage(store: [UInt8], lock: [UInt8]) throws -> Result<[String], FileStoreError> {
        let folder = try TemporaryFolder()
        try FSSupport.write(store, to: folder.storeURL)
        try FSSupport.write(lock, to: URL(fileURLWithPath: folder.storeURL.path + "-lock"))
        let model = try Fixtures.model()
        do {
            let opened = try FileStore.open(at: folder.storeURL, model: model)
            defer { try? opened.close() }
            let titles = try FSSupport.titles(in: opened, model: model)
            return .success(titles)
        } catch let e as FileStoreError {
            return .failure(e)
        }
    }

    static let big = String(repeating: "x", count: 3 * page)

    /// A store at `normal` durability with one save synced by a clean close, then reopened
    /// with `options` and given two more saves (`big` first) that no fsync covered; open.
    /// Records: synced, close, big, lost 2.
    static func storeWithUnsyncedSaves(
        _ folder: borrowing TemporaryFolder, _ model: NSManagedObjectModel, _ options: FileStore.Options
    ) throws -> FileStore {
        do {
            let store = try FileStore.open(at: folder.storeURL, model: model, options: options)
            try FSSupport.saveEach(store, model, ["synced"])
            try store.close()
        }
        let store = try FileStore.open(at: folder.storeURL, model: model, options: options)
        try FSSupport.saveEach(store, model, [big, "lost 2"])
        return store
    }

    /// A `normal` session appends two saves and the process dies (its `-lock` records where
    /// its unsynced appends begin). The next open finds nothing to cut; before it clears that
    /// record it syncs the file, so a power cut afterwards that loses a page of the crashed
    /// session's first save cannot happen: the store comes back in the state after some save.
    /// (Before the fix the record was cleared with the appends unsynced, and the damage such
    /// a cut leaves made the store refuse to open as corrupt.)
    @Test(arguments: [FileStore.Durability.normal, .full])
    func aRecoveringOpenSyncsTheFileBeforeItForgetsTheSyncedPrefix(next: FileStore.Durability) throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let recorder = PowerCutRecorder()
        let fs = PowerCutFileSystem(recorder: recorder)
        do {
            let store = try Self.storeWithUnsyncedSaves(folder, model, .init(durability: .normal, fileSystem: fs))
            store.state.withLock { store.stop(&$0) }  // the process dies: -lock (with its record) stays
        }
        let store = try FileStore.open(at: folder.storeURL, model: model, options: .init(durability: next, fileSystem: fs))
        if next == .normal { try FSSupport.saveEach(store, model, ["after"]) }
        // Power cut now. Records: synced, close, big, lost 2 (, after).
        let image = Self.losingPages(
            of: 2, in: try FSSupport.bytes(folder.storeURL), durable: recorder.durable.withLock { $0 })
        let lock = try FSSupport.bytes(URL(fileURLWithPath: folder.storeURL.path + "-lock"))
        let result = try Self.openPowerCutImage(store: image, lock: lock)
        Self.expectAPrefixState(
            result, of: ["synced", Self.big, "lost 2"] + (next == .normal ? ["after"] : []),
            "power cut after a recovering open (\(next)) lost an unsynced page of the crashed session's first save")
        try store.close()
    }

    /// A `normal` session appends two saves, then compacts. Compaction clears the record in
    /// `-lock` before its rename, so it syncs the old file first: if the rename fails (the
    /// store carries on with the old file), or a power cut comes before the folder sync that
    /// makes the rename durable (the old file comes back), the old file still reopens in the
    /// state after some save. (Before the fix its unsynced tail was covered by no record, and
    /// damage there was refused as corrupt.)
    @Test(arguments: ["rename fails", "rename lost by power cut"])
    func compactionAtNormalDurabilitySyncsTheOldFileBeforeItForgetsTheSyncedPrefix(how: String) throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let recorder = PowerCutRecorder()
        let fs = PowerCutFileSystem(recorder: recorder)
        let options = FileStore.Options(durability: .normal, fileSystem: fs, compactionThreshold: 1 << 40)
        let store = try Self.storeWithUnsyncedSaves(folder, model, options)
        let old: (store: [UInt8], lock: [UInt8])
        if how == "rename fails" {
            recorder.failRename.store(true, ordering: .relaxed)
            #expect(throws: FileStoreError.self) { try store.compact() }
            old = (try FSSupport.bytes(folder.storeURL), try FSSupport.bytes(URL(fileURLWithPath: folder.storeURL.path + "-lock")))
        } else {
            try store.compact()
            old = try #require(recorder.atRename.withLock { $0 })
        }
        // Records of the old file: synced, close, big, lost 2. (Only the old file's own syncs
        // count: -compact is not tracked.)
        let image = Self.losingPages(of: 2, in: old.store, durable: recorder.durable.withLock { $0 })
        let result = try Self.openPowerCutImage(store: image, lock: old.lock)
        Self.expectAPrefixState(
            result, of: ["synced", Self.big, "lost 2"], "power cut (\(how)) lost an unsynced page of the session's first save")
        try store.close()
    }

    /// The page loss the two tests above model, while the `normal` session's record is still
    /// in `-lock`, is recovered: the damage model is one the format handles.
    @Test func thePageLossIsRecoveredWhileTheRecordIsKept() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let recorder = PowerCutRecorder()
        let fs = PowerCutFileSystem(recorder: recorder)
        let store = try Self.storeWithUnsyncedSaves(folder, model, .init(durability: .normal, fileSystem: fs))
        let image = Self.losingPages(of: 2, in: try FSSupport.bytes(folder.storeURL), durable: recorder.durable.withLock { $0 })
        let lock = try FSSupport.bytes(URL(fileURLWithPath: folder.storeURL.path + "-lock"))
        #expect(try Self.openPowerCutImage(store: image, lock: lock).get() == ["synced"])
        try store.close()
    }
}
