import Foundation
import Testing
@testable import PersistenceKit

/// Records whose checksums are right but whose contents no save writes — an entity index
/// out of range, an entity's keys listed twice, one row twice in a record, a row moved to
/// another entity, a value whose tag was changed, a reference to the wrong entity — are
/// `corrupt` at the offset of the entry or value that holds the damage; and a save refuses
/// a row that reading would report so.
@Suite("Impossible record contents are damage") struct ImpossibleContentsTests {
    // Entity indexes: the model's entities sorted by name.
    static let author: Int32 = 0, book: Int32 = 1, shelf: Int32 = 3

    /// One entry of a record's payload, located in the file.
    struct Entry {
        /// Offset of the entry (its op byte).
        var at: Int
        var op: UInt8
        var entity: Int32
        var pk: Int64
        /// Offset of the row's values (its u16 count), for a put.
        var values: Int?
    }

    /// The key entries' offsets and the entries of the record at `record`.
    static func parse(_ bytes: [UInt8], record: Int) -> (keys: [Int], entries: [Entry]) {
        var at = record + 20
        let keyCount = Int(bytes[at]) | Int(bytes[at + 1]) << 8
        at += 2
        let keys = (0..<keyCount).map { at + 12 * $0 }
        at += 12 * keyCount
        let count = Int(FSSupport.u32(bytes, at: at))
        at += 4
        var entries: [Entry] = []
        for _ in 0..<count {
            let op = bytes[at]
            let entity = Int32(bitPattern: FSSupport.u32(bytes, at: at + 1))
            let pk = Int64(FSSupport.u32(bytes, at: at + 5)) | Int64(FSSupport.u32(bytes, at: at + 9)) << 32
            var entry = Entry(at: at, op: op, entity: entity, pk: pk)
            at += 21
            if op == FileStoreFormat.Op.put.rawValue {
                let length = Int(FSSupport.u32(bytes, at: at))
                entry.values = at + 4
                at += 4 + length
            }
            entries.append(entry)
        }
        return (keys, entries)
    }

    /// Offset of value `column` of the row whose values start at `values`.
    static func valueOffset(_ bytes: [UInt8], values: Int, column: Int) -> Int {
        var at = values + 2
        for _ in 0..<column {
            let tag = bytes[at]
            at += 1
            switch FileStoreFormat.Tag(rawValue: tag)! {
            case .null, .boolFalse, .boolTrue: break
            case .integer, .double, .date: at += 8
            case .float: at += 4
            case .string, .data, .uri, .decimal: at += 4 + Int(FSSupport.u32(bytes, at: at))
            case .uuid: at += 16
            case .reference: at += 12
            case .references: at += 4 + 12 * Int(FSSupport.u32(bytes, at: at))
            }
        }
        return at
    }

    /// A clean store (see `CorruptionTests.makeCleanStore`), edited by `edit` in record
    /// `record` (0: a shelf and three books; 1: an author and the three books again; 2: the
    /// book "Endymion" with a date), its checksum
    /// fixed, and written back; returns the offset `edit` names as the damage.
    static func damagedStore(
        _ url: URL, record: Int, _ edit: (inout [UInt8], _ keys: [Int], _ entries: [Entry]) throws -> Int
    ) throws -> Int {
        var bytes = try CorruptionTests.makeCleanStore(url)
        let offset = FSSupport.recordOffsets(bytes)[record]
        let (keys, entries) = parse(bytes, record: offset)
        let damage = try edit(&bytes, keys, entries)
        FSSupport.fixRecordCRC(&bytes, recordAt: offset)
        try FSSupport.write(bytes, to: url)
        return damage
    }

    @Test(arguments: [Int32(-1), 4, 7])
    func anEntityIndexOutOfRangeIsCorruptAtItsEntry(entity: Int32) throws {
        let folder = try TemporaryFolder()
        let damage = try Self.damagedStore(folder.storeURL, record: 0) { bytes, _, entries in
            FSSupport.putU32(UInt32(bitPattern: entity), into: &bytes, at: entries[0].at + 1)
            return entries[0].at
        }
        try CorruptionTests.expectDamage(folder.storeURL, .corrupt, at: damage)
    }

    @Test func anEntityListedTwiceAmongTheKeysIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let damage = try Self.damagedStore(folder.storeURL, record: 0) { bytes, keys, _ in
            try #require(keys.count == 2, "the first save gave keys to books and a shelf")
            for i in 0..<4 { bytes[keys[1] + i] = bytes[keys[0] + i] }
            return keys[1]
        }
        try CorruptionTests.expectDamage(folder.storeURL, .corrupt, at: damage)
    }

    @Test func aRowWrittenTwiceInOneRecordIsCorruptAtTheRepeat() throws {
        let folder = try TemporaryFolder()
        let damage = try Self.damagedStore(folder.storeURL, record: 0) { bytes, _, entries in
            let books = entries.filter { $0.entity == Self.book }
            try #require(books.count == 3)
            for i in 0..<8 { bytes[books[1].at + 5 + i] = bytes[books[0].at + 5 + i] }
            return books[1].at
        }
        try CorruptionTests.expectDamage(folder.storeURL, .corrupt, at: damage)
    }

    /// A book (six values) relabelled as a shelf (two properties).
    @Test func aRowMovedToAnEntityWithFewerPropertiesIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let damage = try Self.damagedStore(folder.storeURL, record: 0) { bytes, _, entries in
            let book = try #require(entries.first { $0.entity == Self.book })
            FSSupport.putU32(UInt32(Self.shelf), into: &bytes, at: book.at + 1)
            return book.at
        }
        try CorruptionTests.expectDamage(folder.storeURL, .corrupt, at: damage)
    }

    /// The shelf relabelled as an author (the same two kinds of value), in a record that
    /// gave authors no keys: no author row can have been written there.
    @Test func aRowMovedToAnEntityThatHadNoSuchKeyIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let damage = try Self.damagedStore(folder.storeURL, record: 0) { bytes, _, entries in
            let shelf = try #require(entries.first { $0.entity == Self.shelf })
            FSSupport.putU32(UInt32(Self.author), into: &bytes, at: shelf.at + 1)
            return shelf.at
        }
        try CorruptionTests.expectDamage(folder.storeURL, .corrupt, at: damage)
    }

    /// Endymion's date (tag 7) relabelled a double (tag 2): the same eight bytes follow, so
    /// only the kind tells.
    @Test func aValueTagChangedToAnotherKindIsCorruptAtTheValue() throws {
        let folder = try TemporaryFolder()
        let damage = try Self.damagedStore(folder.storeURL, record: 2) { bytes, _, entries in
            let book = try #require(entries.first { $0.entity == Self.book })
            let at = Self.valueOffset(bytes, values: try #require(book.values), column: 2)
            #expect(bytes[at] == FileStoreFormat.Tag.date.rawValue)
            bytes[at] = FileStoreFormat.Tag.double.rawValue
            return at
        }
        try CorruptionTests.expectDamage(folder.storeURL, .corrupt, at: damage)
    }

    /// A book's shelf reference relabelled to name an author (in the second save, which
    /// wrote the books again when they gained their author, so its rows are the live ones).
    @Test func aReferenceToAnEntityItsRelationshipDoesNotLeadToIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let damage = try Self.damagedStore(folder.storeURL, record: 1) { bytes, _, entries in
            let book = try #require(entries.first { $0.entity == Self.book })
            let at = Self.valueOffset(bytes, values: try #require(book.values), column: 3)
            #expect(bytes[at] == FileStoreFormat.Tag.reference.rawValue)
            FSSupport.putU32(UInt32(Self.author), into: &bytes, at: at + 1)
            return at
        }
        try CorruptionTests.expectDamage(folder.storeURL, .corrupt, at: damage)
    }

    /// The damaged store still counts from its close record, but every fetch of the damaged
    /// entity reports the damage instead of handing out an object with mistyped values.
    @Test func aFetchNeverReturnsTheDamagedRow() throws {
        let folder = try TemporaryFolder()
        _ = try Self.damagedStore(folder.storeURL, record: 2) { bytes, _, entries in
            let book = try #require(entries.first { $0.entity == Self.book })
            let at = Self.valueOffset(bytes, values: try #require(book.values), column: 2)
            bytes[at] = FileStoreFormat.Tag.double.rawValue
            return at
        }
        let container = try FSSupport.container(at: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws -> Void in
            let error = #expect(throws: FileStoreError.self) { _ = try context.fetch(NSFetchRequest<Book>(entityName: "Book")) }
            #expect(error?.kind == .corrupt)
            #expect(try context.fetch(NSFetchRequest<Shelf>(entityName: "Shelf")).map(\.name) == ["Poetry"])
        }
        try FSSupport.close(container)
    }
}

/// A save refuses, before writing anything, a row that reading would report as damage: the
/// context never sends one, but a caller of the store interface can.
@Suite("Saves refuse rows the file could not read back") struct UnreadableRowTests {
    static func store(_ url: URL) throws -> (FileStore, NSManagedObjectModel) {
        let model = try Fixtures.model()
        return (try FileStore.open(at: url, model: model), model)
    }

    static func shelfRow(_ model: NSManagedObjectModel, pk: Int64, _ values: [StoreValue]) throws -> StoreRow {
        let shelf = try #require(model.entitiesByName["Shelf"])
        return StoreRow(id: StoreRowID(entity: shelf.index, primaryKey: pk), version: 0, values: values)
    }

    @Test func moreValuesThanPropertiesAWrongKindOrAWrongTargetAreRefused() throws {
        let folder = try TemporaryFolder()
        let (store, model) = try Self.store(folder.storeURL)
        let before = try FSSupport.bytes(folder.storeURL)
        let author = StoreRowID(entity: try #require(model.entitiesByName["Author"]).index, primaryKey: 1)
        let bad: [[StoreValue]] = [
            [.string("Poetry"), .null, .null],  // three values, two properties
            [.integer(7), .null],  // an integer for the name
            [.string("Poetry"), .references([author])],  // books naming an author
        ]
        for values in bad {
            var t = StoreTransaction()
            t.inserts = [try Self.shelfRow(model, pk: 1, values)]
            let error = #expect(throws: FileStoreError.self) { _ = try store.commit(t) }
            #expect(error?.kind == .limitExceeded, "\(values)")
            #expect(error?.message.contains("Nothing of the save was written") == true)
        }
        #expect(try FSSupport.bytes(folder.storeURL) == before)
        // A row that ends early is one written before its later properties existed: kept.
        var t = StoreTransaction()
        t.inserts = [try Self.shelfRow(model, pk: 1, [.string("Poetry")])]
        _ = try store.commit(t)
        try store.close()
        let reopened = try FileStore.open(at: folder.storeURL, model: try Fixtures.model())
        let rows = try reopened.fetchRows(entity: t.inserts[0].id.entity, filter: nil)
        #expect(rows.map { $0.value(at: 0) } == [.string("Poetry")])
        try reopened.close()
    }

    @Test(arguments: ["two inserts", "insert and update", "update and delete", "unordered inserts"])
    func aRowNamedTwiceInOneSaveIsRefused(shape: String) throws {
        let folder = try TemporaryFolder()
        let (store, model) = try Self.store(folder.storeURL)
        var t = StoreTransaction()
        t.inserts = [try Self.shelfRow(model, pk: 1, [.string("A"), .null]), try Self.shelfRow(model, pk: 2, [.string("B"), .null])]
        _ = try store.commit(t)
        let before = try FSSupport.bytes(folder.storeURL)
        var twice = StoreTransaction()
        let row = { (pk: Int64, version: Int64) in
            var r = try Self.shelfRow(model, pk: pk, [.string("C"), .null])
            r.version = version
            return r
        }
        switch shape {
        case "two inserts": twice.inserts = [try row(3, 0), try row(3, 0)]
        case "insert and update":
            twice.inserts = [try row(1, 0)]
            twice.updates = [try row(1, 1)]
        case "update and delete":
            twice.updates = [try row(1, 1)]
            twice.deletes = [(id: try row(1, 1).id, expectedVersion: 1)]
        default: twice.inserts = [try row(4, 0), try row(3, 0), try row(4, 0)]
        }
        let error = #expect(throws: FileStoreError.self) { _ = try store.commit(twice) }
        #expect(error?.kind == .limitExceeded)
        #expect(error?.message.contains("appears twice") == true)
        #expect(try FSSupport.bytes(folder.storeURL) == before)
        try store.close()
    }
}
