import Foundation
import Testing
@testable import PersistenceKit

/// At full durability the store keeps zero-filled space after its data so that saves
/// overwrite allocated blocks (`FileStore.reservation(forDataSize:)`). The zeros must never be mistaken
/// for data or damage: a clean close drops them, recovery after a crash cuts them, and an
/// unfinished record written into them is cut too — unless an intact record follows it.
@Suite("Space reserved ahead at full durability") struct ReservationTests {
    private static func diskSize(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? -1
    }

    private static func saveBooks(_ container: NSPersistentContainer, _ titles: [String]) throws {
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for t in titles {
                let b = Book(context: context)
                b.title = t
            }
            try context.save()
        }
    }

    @Test func fullDurabilityReservesZerosAndACleanCloseDropsThem() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, durability: "full")
        try Self.saveBooks(container, ["a"])
        let store = try #require(FSSupport.fileStores(container).first)
        let dataSize = store.fileSize
        let reserved = FileStore.reservation(forDataSize: dataSize)
        #expect(reserved == 4096, "a small store reserves the minimum")
        #expect(try Self.diskSize(folder.storeURL) == dataSize + reserved)
        // The next small save goes into the reservation: the file does not grow.
        try Self.saveBooks(container, ["b"])
        #expect(store.fileSize > dataSize)
        #expect(try Self.diskSize(folder.storeURL) == dataSize + reserved)
        let bytes = try FSSupport.bytes(folder.storeURL)
        #expect(bytes[store.fileSize...].allSatisfy { $0 == 0 })

        try FSSupport.close(container)
        let closed = try FSSupport.bytes(folder.storeURL)
        let last = try #require(FSSupport.recordOffsets(closed).last)
        #expect(last == store.fileSize, "the close record follows the data directly")
        #expect(closed[last + 4] == FileStoreFormat.RecordKind.close.rawValue)
        // Strict open (no -lock): the file must end with its close record, not with zeros.
        let reopened = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(reopened).map(\.title).sorted() == ["a", "b"])
        try FSSupport.close(reopened)
    }

    @Test func theReservationIsAnEighthOfTheDataWithinBounds() {
        #expect(FileStore.reservation(forDataSize: 0) == 4 << 10)
        #expect(FileStore.reservation(forDataSize: 100 << 10) == 16 << 10)
        #expect(FileStore.reservation(forDataSize: 1 << 20) == 128 << 10)
        #expect(FileStore.reservation(forDataSize: 100 << 20) == 256 << 10)
    }

    @Test func normalDurabilityReservesNothing() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, durability: "normal")
        try Self.saveBooks(container, ["a"])
        let store = try #require(FSSupport.fileStores(container).first)
        #expect(try Self.diskSize(folder.storeURL) == store.fileSize)
        try FSSupport.close(container)
    }

    /// A session that crashed leaves data, reserved zeros and `-lock`: the next open cuts the
    /// zeros and keeps every save.
    @Test func recoveryCutsTheReservationOfACrashedSession() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, durability: "full")
        try Self.saveBooks(container, ["a", "b"])
        let reservedFrom = try #require(FSSupport.fileStores(container).first).fileSize
        try Self.saveBooks(container, ["c"])  // written into the reservation
        let crashed = try FSSupport.bytes(folder.storeURL)  // copied while open: what a crash leaves
        let dataSize = try #require(FSSupport.fileStores(container).first).fileSize
        try FSSupport.close(container)
        #expect(crashed.count == reservedFrom + FileStore.reservation(forDataSize: reservedFrom))
        #expect(crashed[dataSize...].allSatisfy { $0 == 0 })

        try FSSupport.write(crashed, to: folder.storeURL)
        _ = FileManager.default.createFile(atPath: folder.storeURL.path + "-lock", contents: nil)
        let recovered = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(recovered).map(\.title).sorted() == ["a", "b", "c"])
        try FSSupport.close(recovered)
        let after = try FSSupport.bytes(folder.storeURL)
        #expect(FSSupport.recordOffsets(after).last == dataSize, "cut at the end of the data, then a close record")
    }

    /// A record written into the reservation whose first block never reached the disk (its
    /// blocks landed out of order before a power loss): no marker where it starts, its tail
    /// further on. Recovery cuts it — no intact record follows — and keeps the saves before.
    /// The same damage with an intact record after it is reported, never cut.
    @Test func anUnfinishedRecordInTheReservationIsCutUnlessAnIntactRecordFollows() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, durability: "full")
        try Self.saveBooks(container, ["a"])
        let before = try #require(FSSupport.fileStores(container).first).fileSize
        try Self.saveBooks(container, ["b"])
        let crashed = try FSSupport.bytes(folder.storeURL)
        let after = try #require(FSSupport.fileStores(container).first).fileSize
        try FSSupport.close(container)
        let lock = folder.storeURL.path + "-lock"

        var torn = crashed
        for i in before..<(before + 16) { torn[i] = 0 }  // the record's header block is missing
        try FSSupport.write(torn, to: folder.storeURL)
        _ = FileManager.default.createFile(atPath: lock, contents: nil)
        let recovered = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(recovered).map(\.title) == ["a"])
        try FSSupport.close(recovered)

        // Now an intact record (a copy of the last one) follows the damage: report it.
        var followed = torn
        let last = Array(crashed[before..<after])
        followed.replaceSubrange((after + 100)..<(after + 100 + last.count), with: last)
        try FSSupport.write(followed, to: folder.storeURL)
        _ = FileManager.default.createFile(atPath: lock, contents: nil)
        do {
            _ = try FileStore.open(at: folder.storeURL, model: try Fixtures.model())
            Issue.record("damage followed by an intact record was cut instead of reported")
        } catch let error as FileStoreError {
            #expect(error.kind == .corrupt)
            #expect(error.offset == before)
        }
    }
}

extension ReservationTests {
    /// A full-durability store's file copied while open ends in reserved zeros; opened
    /// without its -lock file it is reported as cut short (with the hint about -lock), not
    /// as damaged.
    @Test func aCopyOfAnOpenStoreIsReportedAsTruncated() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, durability: "full")
        try Self.saveBooks(container, ["a"])
        let copy = try FSSupport.bytes(folder.storeURL)
        let dataSize = try #require(FSSupport.fileStores(container).first).fileSize
        try FSSupport.close(container)
        try FSSupport.write(copy, to: folder.storeURL)
        do {
            _ = try FileStore.open(at: folder.storeURL, model: try Fixtures.model())
            Issue.record("a copy of an open store opened strictly without an error")
        } catch let error as FileStoreError {
            #expect(error.kind == .truncated)
            #expect(error.offset == dataSize)
            #expect(error.description.contains("-lock"))
        }
    }
}
