import Foundation
import Testing
@testable import PersistenceKit

/// A power cut during a `normal`-durability session: its saves were never synced, so the
/// disk may hold a later record whole and an earlier one damaged. Recovery cuts at the
/// first damage past where the session began appending (recorded in `-lock`), keeping every
/// save before it — a consistent earlier state — instead of refusing the file. Damage in
/// what was synced, or after a `full` session, is still reported. (The missing piece behind
/// "normal durability is crash-consistent": before, such a file was refused as corrupt.)
@Suite struct SyncedPrefixTests {
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
        #expect(try recorded() == FileStoreFormat.headerSize, "the new file's header was synced at its creation")
        try store.compact()
        #expect(try recorded() == nil)
        let compacted = store.fileSize
        try Self.save(context, ["c"])
        #expect(try recorded() == compacted)
        try store.close()
    }
}
