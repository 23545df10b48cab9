import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// Both stores keep the two ends of every stored link in agreement (`LinkKeeper`): the
// owning end (a to-one of a one-to-many; of two like ends, the one whose entity and
// relationship names sort first) is taken as written, and the other end follows, in the
// transaction's rows and in rows outside it. These tests write rows directly, as no context
// would, to show that no transaction can leave a link on one side.

@Suite struct StoreLinkTests {
    /// A store of either kind with the fixtures' model, and a way to build rows by name.
    final class Bench {
        let store: any PersistentStore
        let model: NSManagedObjectModel
        let folder: TemporaryFolder  // unused by the in-memory store

        init(_ kind: String) throws {
            let model = try Fixtures.model()
            model.seal()
            self.model = model
            folder = try TemporaryFolder()
            store = kind == "file" ? try FileStore.open(at: folder.storeURL, model: model) : InMemoryStore(model: model)
        }

        deinit { try? (store as? FileStore)?.close() }

        func id(_ entity: String, _ pk: Int64) -> StoreRowID {
            StoreRowID(entity: model.entitiesByName[entity]!.index, primaryKey: pk)
        }

        /// A row of `entity` with `values` by property name, `.null` elsewhere.
        func row(_ entity: String, _ pk: Int64, version: Int64 = 0, _ values: [String: StoreValue]) -> StoreRow {
            let e = model.entitiesByName[entity]!
            var all = [StoreValue](repeating: .null, count: e.properties.count)
            for (name, v) in values { all[e.indexByName[name]!] = v }
            return StoreRow(id: id(entity, pk), version: version, values: all)
        }

        func value(_ entity: String, _ pk: Int64, _ name: String) throws -> StoreValue? {
            let e = model.entitiesByName[entity]!
            return try store.fetchRow(id(entity, pk))?.value(at: e.indexByName[name]!)
        }

        func version(_ entity: String, _ pk: Int64) throws -> Int64? { try store.fetchRow(id(entity, pk))?.version }

        @discardableResult
        func commit(inserts: [StoreRow] = [], updates: [StoreRow] = [], deletes: [(StoreRowID, Int64)] = []) throws -> [StoreRow] {
            var t = StoreTransaction()
            t.inserts = inserts
            t.updates = updates
            t.deletes = deletes.map { (id: $0.0, expectedVersion: $0.1) }
            guard case let .committed(rows) = try store.commit(t) else {
                Issue.record("unexpected conflict")
                return []
            }
            return rows
        }
    }

    /// Committed rows carry version 1 for inserts and `expected + 1` for updates, whatever
    /// version the transaction's inserts came with: the file store hands back the
    /// transaction's own array only when its inserts are already at version 1 and nothing
    /// else was written.
    @Test(arguments: ["file", "memory"])
    func insertsCommitAtVersionOneWhateverTheyCarry(kind: String) throws {
        let b = try Bench(kind)
        let atZero = try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("A")]), b.row("Shelf", 2, ["name": .string("B")])])
        #expect(atZero.map(\.version) == [1, 1])
        #expect(atZero.map(\.id) == [b.id("Shelf", 1), b.id("Shelf", 2)])
        let sent = [b.row("Shelf", 3, version: 1, ["name": .string("C")]), b.row("Shelf", 4, version: 7, ["name": .string("D")])]
        let mixed = try b.commit(inserts: sent)
        #expect(mixed.map(\.version) == [1, 1])
        let name = b.model.entitiesByName["Shelf"]!.indexByName["name"]!
        #expect(mixed.map { $0.value(at: name) } == [.string("C"), .string("D")])
        // A shelf's list of books is a derived end, stored as what the books say: sent as
        // that list, the row is committed exactly as sent.
        let asSent = [b.row("Shelf", 5, version: 1, ["name": .string("E"), "books": .references([])])]
        #expect(try b.commit(inserts: asSent) == asSent)
        let withUpdate = try b.commit(
            inserts: [b.row("Shelf", 6, version: 1, ["name": .string("F")])],
            updates: [b.row("Shelf", 5, version: 1, ["name": .string("E2")])])
        #expect(withUpdate.map(\.id) == [b.id("Shelf", 6), b.id("Shelf", 5)])
        #expect(withUpdate.map(\.version) == [1, 2])
        #expect(try b.version("Shelf", 4) == 1)
        #expect(try b.version("Shelf", 5) == 2)
        #expect(try b.value("Shelf", 5, "name") == .string("E2"))
    }

    /// A book written with a shelf, the shelf not written: the shelf's row lists the book
    /// afterwards (written by the store at its next version), and the commit returns it
    /// after the transaction's own rows. Unlinking through the book takes it off again.
    @Test(arguments: ["file", "memory"])
    func theOwningEndAloneMakesTheLink(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")]), b.row("Book", 1, ["title": .string("B")])])
        #expect(try b.version("Shelf", 1) == 1)
        let rows = try b.commit(updates: [b.row("Book", 1, version: 1, ["title": .string("B"), "shelf": .reference(b.id("Shelf", 1))])])
        #expect(rows.map(\.id) == [b.id("Book", 1), b.id("Shelf", 1)])
        #expect(try b.value("Shelf", 1, "books") == .references([b.id("Book", 1)]))
        #expect(try b.version("Shelf", 1) == 2)
        try b.commit(updates: [b.row("Book", 1, version: 2, ["title": .string("B")])])
        #expect(try b.value("Shelf", 1, "books") == .references([]))
    }

    /// A shelf written as listing a book whose own row names no shelf: the shelf's row
    /// keeps what the owning end says (no book), in the row the commit returns too.
    @Test(arguments: ["file", "memory"])
    func aDerivedEndCannotMakeALinkAlone(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")]), b.row("Book", 1, ["title": .string("B")])])
        let rows = try b.commit(updates: [b.row("Shelf", 1, version: 1, ["name": .string("T"), "books": .references([b.id("Book", 1)])])])
        #expect(rows.count == 1)
        #expect(rows.first?.value(at: b.model.entitiesByName["Shelf"]!.indexByName["books"]!) == .references([]))
        #expect(try b.value("Shelf", 1, "books") == .references([]))
        #expect(try b.value("Shelf", 1, "name") == .string("T"))
        #expect(try b.value("Book", 1, "shelf") == .null)
    }

    /// Many-to-many: the owning end is `Author.books` ("Author" sorts before "Book"). A book
    /// written alone with an author gets no link; the author written alone with the book
    /// makes it, on both rows.
    @Test(arguments: ["file", "memory"])
    func manyToManyFollowsItsOwningEnd(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Author", 1, ["name": .string("A")]), b.row("Book", 1, ["title": .string("B")])])
        try b.commit(updates: [b.row("Book", 1, version: 1, ["title": .string("B"), "authors": .references([b.id("Author", 1)])])])
        #expect(try b.value("Book", 1, "authors") == .references([]))
        try b.commit(updates: [b.row("Author", 1, version: 1, ["name": .string("A"), "books": .references([b.id("Book", 1)])])])
        #expect(try b.value("Book", 1, "authors") == .references([b.id("Author", 1)]))
        #expect(try b.value("Author", 1, "books") == .references([b.id("Book", 1)]))
    }

    /// Many links changed in one commit (merged through sorted lists) and a few (placed by
    /// binary search) leave the derived list exactly the owning ends' books, sorted.
    @Test(arguments: ["file", "memory"], [3, 40])
    func manyOrFewChangesLeaveTheExactSortedList(kind: String, changes: Int) throws {
        let b = try Bench(kind)
        let shelf = b.id("Shelf", 1)
        func book(_ pk: Int64, version: Int64 = 0, on: Bool) -> StoreRow {
            b.row("Book", pk, version: version, ["title": .string("b\(pk)"), "shelf": on ? .reference(shelf) : .null])
        }
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")])] + (1...100).map { book(Int64($0), on: $0 % 2 == 0) })
        var expected = Set((1...100).filter { $0 % 2 == 0 }.map { Int64($0) })
        #expect(try b.value("Shelf", 1, "books") == .references(expected.sorted().map { b.id("Book", $0) }))
        // Take `changes` even books off, put `changes` odd books on, in one commit.
        let off = (1...100).filter { $0 % 2 == 0 }.prefix(changes).map { Int64($0) }
        let on = (1...100).filter { $0 % 2 == 1 }.suffix(changes).map { Int64($0) }
        try b.commit(updates: off.map { book($0, version: 1, on: false) } + on.map { book($0, version: 1, on: true) })
        expected.subtract(off)
        expected.formUnion(on)
        #expect(try b.value("Shelf", 1, "books") == .references(expected.sorted().map { b.id("Book", $0) }))
    }

    /// Deleting a row takes it out of the rows that link to it (the nullify rule, applied
    /// by the store when the transaction does not carry those rows); a row that is deleted
    /// too is not written.
    @Test(arguments: ["file", "memory"])
    func deletingARowLetsTheOtherEndsGo(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [
            b.row("Shelf", 1, ["name": .string("S"), "books": .references([b.id("Book", 1), b.id("Book", 2)])]),
            b.row("Book", 1, ["title": .string("B1"), "shelf": .reference(b.id("Shelf", 1))]),
            b.row("Book", 2, ["title": .string("B2"), "shelf": .reference(b.id("Shelf", 1))]),
        ])
        #expect(try b.value("Shelf", 1, "books") == .references([b.id("Book", 1), b.id("Book", 2)]))
        try b.commit(deletes: [(b.id("Shelf", 1), 1), (b.id("Book", 2), 1)])
        #expect(try b.value("Book", 1, "shelf") == .null)
        #expect(try b.version("Book", 1) == 2)
        #expect(try b.version("Book", 2) == nil)
    }
}
