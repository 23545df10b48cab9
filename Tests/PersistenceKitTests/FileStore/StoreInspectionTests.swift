import Foundation
import Testing
@testable import PersistenceKit

/// `FileStore.inspect(at:)` reads a store file without opening it and says what it holds and
/// where it is damaged.
@Suite("Inspecting a store file without opening it") struct StoreInspectionTests {
    static func makeStore(_ url: URL) throws {
        let container = try FSSupport.container(at: url)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for i in 0..<3 {
                Book(context: context).title = "Book \(i)"
                try context.save()
            }
        }
        try FSSupport.close(container)
    }

    @Test func aCleanStoreIsWholeAndClosed() throws {
        let folder = try TemporaryFolder()
        try Self.makeStore(folder.storeURL)
        let report = try FileStore.inspect(at: folder.storeURL)
        #expect(report.damage == nil)
        #expect(report.transactions == 3)
        #expect(report.closes == 1)
        #expect(report.endsWithClose && !report.lockFilePresent)
        #expect(report.trailingBytes == 0)
        #expect(report.layoutHash == (try Fixtures.model()).layoutHashString)
        #expect(report.description.contains("every record verified"))
        #expect(report.description.contains("cleanly"))

        let store = try FileStore.open(at: folder.storeURL, model: try Fixtures.model())
        #expect(try store.objectCount(ofEntityNamed: "Book") == 3)
        #expect(try store.objectCount(ofEntityNamed: "Nothing") == nil)
        // Inspecting an open store is allowed and changes nothing.
        let whileOpen = try FileStore.inspect(at: folder.storeURL)
        #expect(whileOpen.lockFilePresent)
        try store.close()
    }

    @Test func aDamagedRecordIsNamedByItsOffsetAndTheFileIsLeftAsItWas() throws {
        let folder = try TemporaryFolder()
        try Self.makeStore(folder.storeURL)
        var bytes = try Data(contentsOf: folder.storeURL)
        let first = FileStoreFormat.headerSize
        bytes[first + FileStoreFormat.recordHeaderSize + 2] ^= 0x40  // inside the first record's payload
        try bytes.write(to: folder.storeURL)
        let report = try FileStore.inspect(at: folder.storeURL)
        #expect(report.damage?.offset == first)
        #expect(report.description.contains("DAMAGED at offset \(first)"))
        #expect(try Data(contentsOf: folder.storeURL) == bytes, "inspection writes nothing")
    }

    @Test func aFileThatIsNotAStoreThrows() throws {
        let folder = try TemporaryFolder()
        try Data("not a store at all, just text that is long enough to hold a header....".utf8).write(to: folder.storeURL)
        let error = #expect(throws: FileStoreError.self) { try FileStore.inspect(at: folder.storeURL) }
        #expect(error?.kind == .notAStore)
    }
}
