import Foundation
import Testing
@testable import PersistenceKit

/// The file store keeps persistent history in its file: across reopening and compaction,
/// deletions included, and older files still open.
@Suite("Persistent history in the store file")
struct HistoryPersistenceTests {
    /// Inserts, updates and deletes with several authors; returns the history as read.
    static func writeHistory(_ container: NSPersistentContainer) throws -> [HistorySupport.Summary] {
        let ids = try HistorySupport.insert(["a", "b", "c"], in: container, author: "importer", name: "import")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.transactionAuthor = "editor"
            (try context.existingObject(with: ids[0]) as? Memo)?.body = "edited"
            context.delete(try context.existingObject(with: ids[1]))
            try context.save()
        }
        return try HistorySupport.transactions(after: nil, in: container)
    }

    @Test func historySurvivesReopening() throws {
        let folder = try TemporaryFolder()
        var container = try HistorySupport.container(.file, at: folder.storeURL)
        let before = try Self.writeHistory(container)
        let token = try #require(container.persistentStoreCoordinator.currentPersistentHistoryToken())
        try FSSupport.close(container)

        container = try HistorySupport.container(.file, at: folder.storeURL)
        #expect(try HistorySupport.transactions(after: nil, in: container) == before)
        #expect(container.persistentStoreCoordinator.currentPersistentHistoryToken() == token)
        try HistorySupport.insert(["d"], in: container, author: "later")
        let after = try HistorySupport.transactions(after: token, in: container)
        #expect(after.map(\.author) == ["later"])
        #expect(after[0].number > before.last?.number ?? .max)
        try FSSupport.close(container)
    }

    @Test func historySurvivesCompactionAndDeletedHistoryStaysDeleted() throws {
        let folder = try TemporaryFolder()
        var container = try HistorySupport.container(.file, at: folder.storeURL)
        let before = try Self.writeHistory(container)
        _ = try HistorySupport.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: before[0].token), in: container)
        let store = try #require(FSSupport.fileStores(container).first)
        try store.compact()
        #expect(store.compactionCount == 1)
        #expect(try HistorySupport.transactions(after: nil, in: container) == Array(before.dropFirst()))
        try FSSupport.close(container)

        container = try HistorySupport.container(.file, at: folder.storeURL)
        #expect(try HistorySupport.transactions(after: nil, in: container) == Array(before.dropFirst()))
        let expired = #expect(throws: CoreDataError.self) {
            _ = try HistorySupport.execute(
                NSPersistentHistoryChangeRequest.fetchHistory(after: NSPersistentHistoryToken(storeTokens: before[0].token.storeTokens.mapValues { $0 - 1 })),
                in: container)
        }
        #expect(expired?.code == .persistentHistoryTokenExpired)
        try FSSupport.close(container)
    }

    @Test func deletedHistoryStaysDeletedAfterReopeningWithoutCompaction() throws {
        let folder = try TemporaryFolder()
        var container = try HistorySupport.container(.file, at: folder.storeURL)
        let before = try Self.writeHistory(container)
        _ = try HistorySupport.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: before[0].token), in: container)
        #expect(try #require(FSSupport.fileStores(container).first).compactionCount == 0)
        try FSSupport.close(container)
        container = try HistorySupport.container(.file, at: folder.storeURL)
        #expect(try HistorySupport.transactions(after: nil, in: container) == Array(before.dropFirst()))
        try FSSupport.close(container)
    }

    @Test func compactionThatSavesCallForKeepsHistory() throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(.file, at: folder.storeURL)
        // Rewriting the same rows many times makes the file grow past twice its live data
        // (rows and history), and saves compact it.
        let ids = try HistorySupport.insert((0..<50).map { "memo \($0)" }, in: container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for round in 0..<60 {
                for id in ids { (try context.existingObject(with: id) as? Memo)?.body = String(repeating: "x", count: 40) + "\(round)" }
                try context.save()
            }
        }
        let store = try #require(FSSupport.fileStores(container).first)
        let history = try HistorySupport.transactions(after: nil, in: container)
        #expect(history.count == 61)
        #expect(history.dropFirst().allSatisfy { $0.changes.count == 50 })
        #expect(store.compactionCount > 0)
        // History is live data: the file may compact, but never drops it.
        #expect(store.fileSize < 8 * store.liveDataSize + 200_000)
        try FSSupport.close(container)
    }

    @Test func withTrackingOffTheRecordsAreThoseOfVersionThree() throws {
        let folder = try TemporaryFolder()
        var container = try HistorySupport.container(.file, at: folder.storeURL, tracking: false)
        _ = try Self.writeHistory(container)
        try FSSupport.close(container)
        // Read as version 3, whose records end with their entries: a history section would
        // be reported as bytes after them.
        var bytes = try FSSupport.bytes(folder.storeURL)
        #expect(FSSupport.u32(bytes, at: 8) == FileStoreFormat.version, "new files are of the newest version")
        FSSupport.downgrade(&bytes, to: 3)
        try FSSupport.write(bytes, to: folder.storeURL)
        container = try HistorySupport.container(.file, at: folder.storeURL, tracking: false)
        let context = container.newBackgroundContext()
        #expect(try context.performAndWait { try context.count(for: NSFetchRequest<Memo>(entityName: "Memo")) } == 2)
        try FSSupport.close(container)
    }

    @Test func aVersionThreeFileOpensAndIsUpgradedByItsFirstHistory() throws {
        let folder = try TemporaryFolder()
        var container = try HistorySupport.container(.file, at: folder.storeURL, tracking: false)
        try HistorySupport.insert(["old"], in: container)
        try FSSupport.close(container)
        var bytes = try FSSupport.bytes(folder.storeURL)
        FSSupport.downgrade(&bytes, to: 3)
        try FSSupport.write(bytes, to: folder.storeURL)

        // Without tracking, a version 3 file stays version 3.
        container = try HistorySupport.container(.file, at: folder.storeURL, tracking: false)
        try HistorySupport.insert(["still three"], in: container)
        try FSSupport.close(container)
        #expect(FSSupport.u32(try FSSupport.bytes(folder.storeURL), at: 8) == 3)

        // With tracking, its first save rewrites it as the newest version and is recorded.
        container = try HistorySupport.container(.file, at: folder.storeURL)
        #expect(try HistorySupport.transactions(after: nil, in: container).isEmpty)
        try HistorySupport.insert(["new"], in: container, author: "upgrader")
        #expect(FSSupport.u32(try FSSupport.bytes(folder.storeURL), at: 8) == FileStoreFormat.version)
        #expect(try #require(FSSupport.fileStores(container).first).compactionCount == 1)
        try FSSupport.close(container)

        container = try HistorySupport.container(.file, at: folder.storeURL)
        let history = try HistorySupport.transactions(after: nil, in: container)
        #expect(history.map(\.author) == ["upgrader"] && history[0].changes == ["insert Memo p3"])
        let context = container.newBackgroundContext()
        let titles = try context.performAndWait { try context.fetch(NSFetchRequest<Memo>(entityName: "Memo")).map(\.title).sorted() }
        #expect(titles == ["new", "old", "still three"])
        try FSSupport.close(container)
    }

    @Test func damagedHistoryIsReportedAsCorrupt() throws {
        let folder = try TemporaryFolder()
        var container = try HistorySupport.container(.file, at: folder.storeURL)
        try HistorySupport.insert(["a"], in: container)
        try FSSupport.close(container)
        var bytes = try FSSupport.bytes(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        // The save's record comes before the close record; its payload ends with the history
        // section, whose one change (17 bytes: kind, entity, key, two counts) ends it.
        let save = records[records.count - 2]
        let payloadEnd = save + 20 + Int(FSSupport.u32(bytes, at: save + 8))
        #expect(bytes[payloadEnd - 17] == 0, "the change is an insert")
        bytes[payloadEnd - 17] = 9
        FSSupport.fixRecordCRC(&bytes, recordAt: save)
        try FSSupport.write(bytes, to: folder.storeURL)

        container = try HistorySupport.container(.file, at: folder.storeURL)
        let damage = #expect(throws: FileStoreError.self) { _ = try HistorySupport.transactions(after: nil, in: container) }
        #expect(damage?.kind == .corrupt && damage?.offset == payloadEnd - 17)
        try FSSupport.close(container)
    }

    @Test func oneStoreCannotBeOpenedWithAndWithoutTrackingAtOnce() throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(.file, at: folder.storeURL)
        let error = FSSupport.loadError {
            _ = try HistorySupport.container(.file, at: folder.storeURL, tracking: false)
        }
        #expect(error?.kind == .optionsMismatch)
        try FSSupport.close(container)
    }
}
