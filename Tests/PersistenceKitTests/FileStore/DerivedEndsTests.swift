import Foundation
import Testing
@testable import PersistenceKit

// The file store keeps derived to-many ends (a shelf's `books`, an author's side of a
// many-to-many) from the owning ends instead of writing them (format version 3; see
// `DerivedEnds`). Before, a save that put one book on a large shelf rewrote the shelf's
// whole list.
//
// Checked here: what a save writes; version 2 files, which keep writing the lists so that an
// older build reads them right; lists kept save by save against lists built afresh; the file
// store against the in-memory store on random transactions; damaged owning values; failed
// saves. What each of these once got wrong: a row repeated in an owning list read back twice
// after a reopen; store filters on a derived column saw the stored null; one damaged owning
// value made every related read fail. (Taking many rows off a large list one at a time was
// quadratic; `DerivedEnds.applyPending` batches them. Its timing is not a test.)

@Suite("Derived to-many ends", .serialized) struct DerivedEndsTests {
    /// Bytes of the store file.
    static func size(_ url: URL) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? -1
    }

    /// A shelf with `count` books, saved; returns the shelf's ID.
    static func seedShelf(_ context: NSManagedObjectContext, books count: Int) throws -> NSManagedObjectID {
        try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "big"
            for i in 0..<count {
                let book = Book(context: context)
                book.title = "b\(i)"
                book.shelf = shelf
            }
            try context.save()
            return shelf.objectID
        }
    }

    /// The shelf `shelfID` names, in `context` (whose container may have reopened the store).
    static func shelf(_ shelfID: NSManagedObjectID, in context: NSManagedObjectContext) throws -> Shelf? {
        let coordinator = try #require(context.persistentStoreCoordinator)
        let id = try #require(coordinator.managedObjectID(forURIRepresentation: shelfID.uriRepresentation()))
        return try context.existingObject(with: id) as? Shelf
    }

    /// Puts one new book on the shelf and saves; returns how many bytes the file grew by.
    static func addOneBook(to shelfID: NSManagedObjectID, _ context: NSManagedObjectContext, url: URL) throws -> Int {
        let before = try size(url)
        try context.performAndWait {
            let book = Book(context: context)
            book.title = "one more"
            book.shelf = try shelf(shelfID, in: context)
            try context.save()
        }
        return try size(url) - before
    }

    static func bookCount(of shelfID: NSManagedObjectID, _ container: NSPersistentContainer) throws -> Int {
        let context = container.newBackgroundContext()
        return try context.performAndWait { try shelf(shelfID, in: context)?.books.count ?? -1 }
    }

    @Test func oneBookOntoALargeShelfWritesASmallRecord() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        // Normal durability: the file is exactly its records (no space reserved ahead).
        var container = try FSSupport.container(at: url, durability: "normal")
        let context = container.newBackgroundContext()
        let shelfID = try Self.seedShelf(context, books: 5_000)
        let grown = try Self.addOneBook(to: shelfID, context, url: url)
        // The new book's row and the shelf's row without its list: a few hundred bytes. The
        // list alone was over 60 KB.
        #expect(grown > 0 && grown < 1_000, "the save appended \(grown) bytes")
        #expect(try Self.bookCount(of: shelfID, container) == 5_001)

        try FSSupport.close(container)
        container = try FSSupport.container(at: url, durability: "normal")
        #expect(try Self.bookCount(of: shelfID, container) == 5_001, "rebuilt from the books' own shelf column")
        try FSSupport.close(container)
    }

    /// A file of version 2 stores the lists: it is read from the owning ends, saves keep
    /// writing the lists (so an older build still reads it right), and a compaction rewrites
    /// it as the newest version (3 or later), without them.
    @Test func versionTwoFilesKeepTheirListsUntilCompacted() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        var container = try FSSupport.container(at: url, durability: "normal")
        let shelfID = try Self.seedShelf(container.newBackgroundContext(), books: 2_000)
        try FSSupport.close(container)

        var bytes = try FSSupport.bytes(url)
        #expect(FSSupport.u32(bytes, at: 8) == FileStoreFormat.version, "new files are of the newest version")
        FSSupport.downgrade(&bytes, to: 2)  // the records' checksum is the same from 2 on
        try FSSupport.write(bytes, to: url)

        container = try FSSupport.container(at: url, durability: "normal")
        #expect(try Self.bookCount(of: shelfID, container) == 2_000)
        let grown = try Self.addOneBook(to: shelfID, container.newBackgroundContext(), url: url)
        #expect(grown > 2_001 * 8, "a version 2 file gets the shelf's whole list: \(grown) bytes")
        #expect(FSSupport.u32(try FSSupport.bytes(url), at: 8) == 2)

        let store = try #require(FSSupport.fileStores(container).first)
        try store.compact()
        let compacted = try FSSupport.bytes(url)
        #expect(FSSupport.u32(compacted, at: 8) == FileStoreFormat.version, "compaction writes the newest version")
        #expect(try Self.bookCount(of: shelfID, container) == 2_001)
        #expect(try Self.addOneBook(to: shelfID, container.newBackgroundContext(), url: url) < 1_000)
        try FSSupport.close(container)

        container = try FSSupport.container(at: url, durability: "normal")
        #expect(try Self.bookCount(of: shelfID, container) == 2_002)
        #expect(try storedGraphProblems(container) == [])
        try FSSupport.close(container)
    }

    /// Random moves, author changes, inserts and deletes (cascades included), with
    /// compactions between: after each save the ends agree, and the lists the store kept
    /// save by save equal the lists built afresh by reopening.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func listsKeptSaveBySaveEqualListsBuiltAfresh(seed: UInt64) throws {
        var random = FSRandom(seed: seed)
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        var container = try FSSupport.container(at: url)
        let model = container.managedObjectModel
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelves = (0..<5).map { i in
                let s = Shelf(context: context)
                s.name = "s\(i)"
                return s
            }
            let authors = (0..<5).map { i in
                let a = Author(context: context)
                a.name = "a\(i)"
                return a
            }
            for i in 0..<60 {
                let b = Book(context: context)
                b.title = "b\(i)"
                b.shelf = shelves.randomElement(using: &random)
                b.authors = Set(authors.filter { _ in random.next() % 3 == 0 })
            }
            try context.save()
        }
        for round in 0..<40 {
            try context.performAndWait {
                let shelves = try context.fetch(Shelf.fetchRequest())
                let books = try context.fetch(Book.fetchRequest())
                let authors = try context.fetch(Author.fetchRequest())
                for _ in 0..<5 {
                    switch random.next() % 6 {
                    case 0, 1:
                        books.randomElement(using: &random)?.shelf = random.next() % 5 == 0 ? nil : shelves.randomElement(using: &random)
                    case 2:
                        books.randomElement(using: &random)?.authors = Set(authors.filter { _ in random.next() % 3 == 0 })
                    case 3:
                        let b = Book(context: context)
                        b.title = "new"
                        b.shelf = shelves.randomElement(using: &random)
                        b.authors = Set(authors.filter { _ in random.next() % 4 == 0 })
                    case 4:
                        if let b = books.randomElement(using: &random), !b.isDeleted { context.delete(b) }
                    default:
                        // A shelf goes with its books (cascade); a new one takes its place.
                        if round % 8 == 7, let s = shelves.randomElement(using: &random), !s.isDeleted {
                            context.delete(s)
                            Shelf(context: context).name = "replacement"
                        }
                    }
                }
                try context.save()
            }
            #expect(try storedGraphProblems(container) == [], "seed \(seed), round \(round)")
            if round % 10 == 9, let store = FSSupport.fileStores(container).first { try store.compact() }
        }
        let kept = try FSSupport.allRows(try #require(FSSupport.fileStores(container).first), model)
        try FSSupport.close(container)
        container = try FSSupport.container(at: url)
        let rebuilt = try FSSupport.allRows(try #require(FSSupport.fileStores(container).first), model)
        #expect(kept == rebuilt, "seed \(seed)")
        #expect(kept.values.contains { row in row.values.contains { if case let .references(r) = $0 { r.count > 3 } else { false } } })
        try FSSupport.close(container)
    }
}

// MARK: - A model of nodes and tags for random link transactions

final class DRVNode: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "children", deleteRule: .noActionDeleteRule) var parent: DRVNode?
    @Relationship(inverse: "parent", deleteRule: .noActionDeleteRule) var children: Set<DRVNode>
    @Relationship(inverse: "tagged", deleteRule: .nullifyDeleteRule) var tags: Set<DRVTag>
    @Relationship(inverse: "friends") var friends: Set<DRVNode>
}

final class DRVTag: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "tags", deleteRule: .noActionDeleteRule) var tagged: Set<DRVNode>
}

// MARK: - Against the in-memory store, an older build's reader, damage and failed saves

extension DerivedEndsTests {
    typealias Bench = StoreLinkTests.Bench

    /// A row of `e` with these values by property name (the rest null).
    static func row(_ e: NSEntityDescription, _ pk: Int64, version: Int64 = 0, _ values: [String: StoreValue]) -> StoreRow {
        var all = [StoreValue](repeating: .null, count: e.properties.count)
        for (n, v) in values { all[e.indexByName[n]!] = v }
        return StoreRow(id: StoreRowID(entity: e.index, primaryKey: pk), version: version, values: all)
    }

    /// Differential run: the same random transactions against a file store and the in-memory
    /// store (which stores every derived list) must read back the same rows.
    @Test(arguments: Array(UInt64(1)...UInt64(30)))
    func fileStoreMatchesMemoryStore(seed: UInt64) throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [DRVNode.self, DRVTag.self])
        model.seal()
        let folder = try TemporaryFolder()
        var file = try FileStore.open(at: folder.storeURL, model: model)
        let memory = InMemoryStore(model: model)
        var generator = RandomLinkTransactions(model: model, seed: seed, odd: true)
        for round in 0..<60 {
            let t = generator.next(after: try FSSupport.allRows(memory, model))
            let a = try file.commit(t), b = try memory.commit(t)
            guard case let .committed(fileRows) = a, case let .committed(memoryRows) = b else {
                Issue.record("seed \(seed) round \(round): conflict")
                return
            }
            #expect(fileRows == memoryRows, "seed \(seed) round \(round): committed rows differ")
            let fromFile = try FSSupport.allRows(file, model), fromMemory = try FSSupport.allRows(memory, model)
            if fromFile != fromMemory {
                let diff = fromMemory.keys.filter { fromFile[$0] != fromMemory[$0] }.sorted()
                Issue.record("seed \(seed) round \(round): rows differ: \(diff.map { "\($0): file \(String(describing: fromFile[$0]?.values)) memory \(String(describing: fromMemory[$0]?.values))" })")
                return
            }
            if round % 11 == 10 { try file.compact() }
            if round % 17 == 16 {
                try file.close()
                file = try FileStore.open(at: folder.storeURL, model: model)
                // Half the time a commit comes before any read (lists not built yet).
                if generator.random.next() % 2 == 0 { _ = try FSSupport.allRows(file, model) }
            }
        }
        try file.close()
    }
}

extension DerivedEndsTests {
    /// An owning to-many written with a row twice (`Author.books` = [B1, B1]; the store API
    /// takes any rows): B1.authors holds A1 once, save by save and after a reopen (the build
    /// listed it twice).
    @Test func aRowTwiceInAnOwningListIsListedOnceAfterAReopen() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        model.seal()
        let author = model.entitiesByName["Author"]!, book = model.entitiesByName["Book"]!
        let a1 = StoreRowID(entity: author.index, primaryKey: 1), b1 = StoreRowID(entity: book.index, primaryKey: 1)
        var store = try FileStore.open(at: folder.storeURL, model: model)
        var t = StoreTransaction()
        t.inserts = [Self.row(book, 1, ["title": .string("B1")])]
        _ = try store.commit(t)
        _ = try store.fetchRow(b1)  // lists built
        t.inserts = [Self.row(author, 1, ["name": .string("A1"), "books": .references([b1, b1])])]
        _ = try store.commit(t)
        let authors = book.indexByName["authors"]!
        let kept = try store.fetchRow(b1)?.value(at: authors)
        #expect(kept == .references([a1]))
        try store.close()
        store = try FileStore.open(at: folder.storeURL, model: model)
        defer { try? store.close() }
        let rebuilt = try store.fetchRow(b1)?.value(at: authors)
        #expect(rebuilt == kept, "kept \(String(describing: kept)), rebuilt \(String(describing: rebuilt))")
    }

    /// A store filter on a derived to-many column is matched against the list the row reads
    /// back with (it was matched against the encoded row, which holds null there).
    @Test(arguments: ["file", "memory"])
    func filtersOnADerivedToManyColumnSeeTheList(kind: String) throws {
        let b = try Bench(kind)
        let shelf = b.id("Shelf", 1)
        try b.commit(inserts: [
            b.row("Shelf", 1, ["name": .string("S")]),
            b.row("Book", 1, ["title": .string("B1"), "shelf": .reference(shelf)]),
        ])
        let shelfEntity = b.model.entitiesByName["Shelf"]!
        let books = shelfEntity.indexByName["books"]!
        #expect(try b.value("Shelf", 1, "books") == .references([b.id("Book", 1)]))
        // "books is not null": the shelf's books read back as a list, so the shelf matches.
        let filter = StoreFilter([StoreFilter.Condition(property: books, .notEqual, .null)])
        let fetched = try b.store.fetchRows(entity: shelfEntity.index, filter: filter)
        #expect(fetched.map(\.id) == [shelf], "\(kind)")
        #expect(try b.store.countRows(entity: shelfEntity.index, filter: filter) == 1, "\(kind)")
        // And "books is null" returns a row whose books are not null.
        let nullFilter = StoreFilter([StoreFilter.Condition(property: books, .equal, .null)])
        for row in try b.store.fetchRows(entity: shelfEntity.index, filter: nullFilter) {
            #expect(row.value(at: books) == .null, "\(kind): filter said null, row reads \(row.value(at: books))")
        }
    }
}

extension DerivedEndsTests {
    /// The rows of a store file as a build that reads the stored values as they are (one
    /// that knows only versions 1 and 2) sees them: the records replayed, no list derived.
    static func rawRows(_ url: URL, model: NSManagedObjectModel) throws -> [StoreRowID: StoreRow] {
        let shapes = RowShapes(model: model)
        let bytes = try FSSupport.bytes(url)
        var rows: [StoreRowID: StoreRow] = [:]
        try bytes.withUnsafeBytes { buf in
            var offset = 64
            while offset + 24 <= buf.count {
                let kind = buf[offset + 4]
                let length = Int(FSSupport.u32(bytes, at: offset + 8))
                let payload = (offset + 20)..<(offset + 20 + length)
                offset += 24 + length
                guard kind == 1 || kind == 2 else { continue }
                var r = ByteReader(buf, range: payload, path: "raw")
                let keys = Int(try r.u16())
                try r.skip(12 * keys)
                let entries = Int(try r.u32())
                for _ in 0..<entries {
                    let (op, entity, pk, version) = try r.entryHeader()
                    let id = StoreRowID(entity: entity, primaryKey: pk)
                    if op == FileStoreFormat.Op.put.rawValue {
                        let n = Int(try r.u32())
                        var v = ByteReader(buf, range: r.position..<(r.position + n), path: "raw")
                        rows[id] = StoreRow(id: id, version: version, values: try FileStoreFormat.decodeValues(&v, shape: shapes.shape(entity)))
                        try r.skip(n)
                    } else {
                        rows[id] = nil
                    }
                }
            }
        }
        return rows
    }

    /// A version 2 file written by this build: what an older build reads from it (the stored
    /// lists) must equal what the in-memory store holds after the same transactions.
    @Test(arguments: Array(UInt64(1)...UInt64(30)))
    func versionTwoFileReadsRightForAnOlderBuild(seed: UInt64) throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [DRVNode.self, DRVTag.self])
        model.seal()
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        try FileStore.open(at: url, model: model).close()
        var bytes = try FSSupport.bytes(url)
        FSSupport.downgrade(&bytes, to: 2)
        try FSSupport.write(bytes, to: url)
        var file = try FileStore.open(at: url, model: model, options: .init(compactionThreshold: 1 << 40))
        let memory = InMemoryStore(model: model)
        var generator = RandomLinkTransactions(model: model, seed: seed, odd: false)
        for round in 0..<40 {
            let t = generator.next(after: try FSSupport.allRows(memory, model))
            _ = try file.commit(t)
            _ = try memory.commit(t)
            if round % 13 == 12 {
                try file.close()
                file = try FileStore.open(at: url, model: model, options: .init(compactionThreshold: 1 << 40))
            }
        }
        try file.close()
        #expect(FSSupport.u32(try FSSupport.bytes(url), at: 8) == 2)
        let raw = try Self.rawRows(url, model: model)
        let expected = try FSSupport.allRows(memory, model)
        let differing = expected.keys.filter { raw[$0] != expected[$0] }.sorted()
        #expect(differing.isEmpty, "seed \(seed): \(differing.prefix(3).map { "\($0): stored \(String(describing: raw[$0]?.values)) memory \(String(describing: expected[$0]?.values))" })")
        #expect(Set(raw.keys) == Set(expected.keys))
    }
}

extension DerivedEndsTests {
    /// Offset in the file of the tag byte of value `column` of the last put of row `id`.
    static func valueOffset(_ url: URL, _ id: StoreRowID, column: Int) throws -> (record: Int, tag: Int)? {
        let bytes = try FSSupport.bytes(url)
        var found: (Int, Int)?
        try bytes.withUnsafeBytes { buf in
            var offset = 64
            while offset + 24 <= buf.count {
                let record = offset
                let kind = buf[offset + 4]
                let length = Int(FSSupport.u32(bytes, at: offset + 8))
                let payload = (offset + 20)..<(offset + 20 + length)
                offset += 24 + length
                guard kind == 1 || kind == 2 else { continue }
                var r = ByteReader(buf, range: payload, path: "raw")
                try r.skip(12 * Int(try r.u16()))
                for _ in 0..<Int(try r.u32()) {
                    let (op, entity, pk, _) = try r.entryHeader()
                    guard op == FileStoreFormat.Op.put.rawValue else { continue }
                    let n = Int(try r.u32())
                    if entity == id.entity, pk == id.primaryKey {
                        var v = ByteReader(buf, range: r.position..<(r.position + n), path: "raw")
                        _ = try v.u16()
                        for _ in 0..<column { try FileStoreFormat.skipValue(&v) }
                        found = (record, v.position)
                    }
                    try r.skip(n)
                }
            }
        }
        return found
    }

    /// One book row whose `shelf` value is damaged (checksum-valid record, unknown value
    /// tag): reading that book reports it, and the intact shelves and books stay readable
    /// (the build of the lists threw on it, so every related read failed).
    @Test func aDamagedOwningValueBreaksOnlyItsOwnRow() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        let model = try Fixtures.model()
        model.seal()
        let b = { (e: String, pk: Int64) in StoreRowID(entity: model.entitiesByName[e]!.index, primaryKey: pk) }
        let book = model.entitiesByName["Book"]!, shelf = model.entitiesByName["Shelf"]!
        var store = try FileStore.open(at: url, model: model)
        var t = StoreTransaction()
        t.inserts = [
            Self.row(shelf, 1, ["name": .string("S1")]), Self.row(shelf, 2, ["name": .string("S2")]),
            Self.row(book, 1, ["title": .string("B1"), "shelf": .reference(b("Shelf", 1))]),
            Self.row(book, 2, ["title": .string("B2"), "shelf": .reference(b("Shelf", 2))]),
        ]
        _ = try store.commit(t)
        try store.close()

        var bytes = try FSSupport.bytes(url)
        let at = try #require(try Self.valueOffset(url, b("Book", 2), column: book.indexByName["shelf"]!))
        #expect(bytes[at.tag] == FileStoreFormat.Tag.reference.rawValue)
        bytes[at.tag] = 0xEE
        FSSupport.fixRecordCRC(&bytes, recordAt: at.record)
        try FSSupport.write(bytes, to: url)

        store = try FileStore.open(at: url, model: model)
        defer { try? store.close() }
        #expect(throws: FileStoreError.self, "the damaged row itself is reported") { try store.fetchRow(b("Book", 2)) }
        // Rows that hold no damaged byte.
        #expect(throws: Never.self) { try store.fetchRow(b("Shelf", 1)) }
        #expect(throws: Never.self) { try store.fetchRow(b("Book", 1)) }
        #expect(throws: Never.self) { try store.fetchRows(entity: shelf.index, filter: nil) }
    }
}

extension DerivedEndsTests {
    /// Saves that fail (write, fsync, compaction rename, compaction folder sync) leave the
    /// lists as the tables are; later saves keep them; a reopen builds the same.
    @Test(arguments: ["write", "sync", "compactRename", "compactFolderSync", "compactWrite"])
    func failedSavesLeaveTheListsRight(fault: String) throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        let model = try Fixtures.model()
        model.seal()
        let plan = FaultPlan()
        let compacting = fault.hasPrefix("compact")
        let options = FileStore.Options(fileSystem: FaultyFileSystem(plan: plan), compactionThreshold: compacting ? 1 : 64 << 10)
        var store = try FileStore.open(at: url, model: model, options: options)
        let book = model.entitiesByName["Book"]!, shelf = model.entitiesByName["Shelf"]!, author = model.entitiesByName["Author"]!
        func id(_ e: NSEntityDescription, _ pk: Int64) -> StoreRowID { StoreRowID(entity: e.index, primaryKey: pk) }
        var t = StoreTransaction()
        t.inserts = [Self.row(shelf, 1, ["name": .string("S1")]), Self.row(shelf, 2, ["name": .string("S2")]), Self.row(author, 1, ["name": .string("A")])]
            + (1...20).map { Self.row(book, Int64($0), ["title": .string("b\($0)"), "shelf": .reference(id(shelf, 1))]) }
        _ = try store.commit(t)
        var a = StoreTransaction()
        a.updates = [Self.row(author, 1, version: 1, ["name": .string("A"), "books": .references((1...20).map { id(book, Int64($0)) })])]
        _ = try store.commit(a)
        _ = try FSSupport.allRows(store, model)  // lists built
        func retitle(_ title: String) throws {
            var bloat = StoreTransaction()
            let rows = try FSSupport.allRows(store, model)
            bloat.updates = (1...20).map { pk in
                var r = rows[id(book, Int64(pk))]!
                r.values[book.indexByName["title"]!] = .string(title)
                return r
            }
            _ = try store.commit(bloat)
        }
        if compacting { try retitle(String(repeating: "x", count: 8000)) }
        // Compaction faults fire twice: in the best-effort compaction after a save that
        // shrinks every book (so that one is due), then in the one the next save runs first.
        switch fault {
        case "write": plan.arm(.write, on: ".pkstore", .shortWrite)
        case "sync": plan.arm(.sync, on: ".pkstore", .fail(EIO))
        case "compactRename": plan.arm(.rename, on: "-compact", .fail(EIO), times: 2)
        case "compactWrite": plan.arm(.write, on: "-compact", .fail(ENOSPC), times: 2)
        default: plan.arm(.syncDirectory, on: "", .fail(EIO), times: 2)
        }
        if compacting { try retitle("small") }
        let before = try FSSupport.allRows(store, model)
        var move = StoreTransaction()
        let current = try FSSupport.allRows(store, model)
        move.updates = (1...10).map { pk in
            var r = current[id(book, Int64(pk))]!
            r.values[book.indexByName["shelf"]!] = .reference(id(shelf, 2))
            return r
        }
        move.deletes = [(id: id(book, 20), expectedVersion: current[id(book, 20)]!.version)]
        var failed = false
        do { _ = try store.commit(move) } catch { failed = true }
        #expect(failed && plan.fired >= 1, "\(fault): the fault fired and the save failed")
        plan.disarm()
        if failed {
            #expect(try FSSupport.allRows(store, model) == before, "\(fault): a failed save changed what reads back")
            #expect(try storedGraphProblems(store, model) == [], "\(fault)")
            _ = try store.commit(move)
        }
        let kept = try FSSupport.allRows(store, model)
        #expect(try storedGraphProblems(store, model) == [], "\(fault)")
        #expect(kept[id(shelf, 2)]?.value(at: shelf.indexByName["books"]!) == .references((1...10).map { id(book, Int64($0)) }))
        try store.close()
        store = try FileStore.open(at: url, model: model)
        #expect(try FSSupport.allRows(store, model) == kept, "\(fault): lists kept differ from lists rebuilt")
        try store.close()
    }
}

/// Random transactions over the `DRVNode`/`DRVTag` model, written straight to a store: node
/// and tag inserts, parent and tag changes, deletions. With `odd`, also the inputs contexts
/// never send: self-inverse `friends`, values written to a derived end (`children`, which
/// stores ignore), and rows shorter than their entity.
struct RandomLinkTransactions {
    let node: NSEntityDescription
    let tag: NSEntityDescription
    let odd: Bool
    var random: FSRandom
    var nextNode: Int64 = 1
    var nextTag: Int64 = 1

    init(model: NSManagedObjectModel, seed: UInt64, odd: Bool) {
        node = model.entitiesByName["DRVNode"]!
        tag = model.entitiesByName["DRVTag"]!
        self.odd = odd
        random = FSRandom(seed: seed)
    }

    private func p(_ e: NSEntityDescription, _ n: String) -> Int { e.indexByName[n]! }

    private mutating func refs(_ pool: [StoreRowID]) -> StoreValue {
        .references(Set(pool.filter { _ in random.next() % 3 == 0 }).sorted())
    }

    /// The next transaction, given every row the store holds now.
    mutating func next(after rows: [StoreRowID: StoreRow]) -> StoreTransaction {
        let nodes = rows.keys.filter { $0.entity == node.index }.sorted()
        let tags = rows.keys.filter { $0.entity == tag.index }.sorted()
        var t = StoreTransaction()
        var touched = Set<StoreRowID>()
        for _ in 0..<(1 + Int(random.next() % 4)) {
            switch random.next() % 7 {
            case 0, 1:
                let id = StoreRowID(entity: node.index, primaryKey: nextNode)
                nextNode += 1
                var v = [StoreValue](repeating: .null, count: node.properties.count)
                v[p(node, "name")] = .string("n\(id.primaryKey)")
                if let parent = nodes.randomElement(using: &random), random.next() % 2 == 0 { v[p(node, "parent")] = .reference(parent) }
                v[p(node, "tags")] = refs(tags)
                if odd { v[p(node, "friends")] = refs(nodes) }
                t.inserts.append(StoreRow(id: id, version: 0, values: v))
            case 2:
                let id = StoreRowID(entity: tag.index, primaryKey: nextTag)
                nextTag += 1
                var v = [StoreValue](repeating: .null, count: tag.properties.count)
                v[p(tag, "name")] = .string("t\(id.primaryKey)")
                t.inserts.append(StoreRow(id: id, version: 0, values: v))
            case 3, 4:
                guard let id = nodes.randomElement(using: &random), !touched.contains(id), let row = rows[id] else { continue }
                touched.insert(id)
                var v = row.values
                if v.count < node.properties.count { v += [StoreValue](repeating: .null, count: node.properties.count - v.count) }
                switch random.next() % (odd ? 3 : 2) {
                case 0: v[p(node, "parent")] = random.next() % 3 == 0 ? .null : .reference(nodes.randomElement(using: &random)!)
                case 1: v[p(node, "tags")] = refs(tags)
                default: v[p(node, "children")] = refs(nodes)  // a derived end written: ignored
                }
                t.updates.append(StoreRow(id: id, version: row.version, values: v))
            case 5:
                guard let id = nodes.randomElement(using: &random), !touched.contains(id), let row = rows[id] else { continue }
                touched.insert(id)
                t.deletes.append((id: id, expectedVersion: row.version))
            default:
                guard let id = tags.randomElement(using: &random), !touched.contains(id), let row = rows[id] else { continue }
                touched.insert(id)
                t.deletes.append((id: id, expectedVersion: row.version))
            }
        }
        guard odd else { return t }
        // Rows with fewer values than the entity has properties, now and then.
        for i in t.inserts.indices where random.next() % 5 == 0 {
            t.inserts[i].values = Array(t.inserts[i].values.prefix(1 + Int(random.next() % UInt64(t.inserts[i].values.count))))
        }
        for i in t.updates.indices where random.next() % 5 == 0 {
            t.updates[i].values = Array(t.updates[i].values.prefix(1 + Int(random.next() % UInt64(t.updates[i].values.count))))
        }
        return t
    }
}
