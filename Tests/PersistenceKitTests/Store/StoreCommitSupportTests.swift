import Foundation
import Testing

@testable import PersistenceKit

/// `StoreCommitSupport` gives a store outside the module what the built-in stores do at
/// commit and read: the answers must be the in-memory store's.
@Suite("Store commit support for stores outside the module")
struct StoreCommitSupportTests {
    @Test("Keeping links fills the derived end and writes the other row, as the in-memory store does")
    func keepsLinks() throws {
        let model = try Fixtures.model()
        let support = StoreCommitSupport(model: model)
        let shelfEntity = try #require(model.entitiesByName["Shelf"])
        let bookEntity = try #require(model.entitiesByName["Book"])
        let shelfID = StoreRowID(entity: shelfEntity.index, primaryKey: 1)
        let booksColumn = try #require(shelfEntity.propertyIndex(named: "books"))
        let shelfColumn = try #require(bookEntity.propertyIndex(named: "shelf"))
        var shelf = StoreRow(id: shelfID, version: 1, values: Array(repeating: .null, count: shelfEntity.properties.count))
        shelf.values[booksColumn] = .references([])
        var book = StoreRow(
            id: StoreRowID(entity: bookEntity.index, primaryKey: 1), version: 0,
            values: Array(repeating: .null, count: bookEntity.properties.count))
        book.values[shelfColumn] = .reference(shelfID)
        var t = StoreTransaction()
        t.inserts = [book]
        try support.keepLinks(of: &t) { id in id == shelfID ? shelf : nil }
        #expect(support.hasLinks(bookEntity.index))
        #expect(t.updates.count == 1)
        #expect(t.updates.first?.values[booksColumn] == .references([book.id]))
    }

    @Test("Constraint conflicts are found against stored rows and within the transaction")
    func constraintConflicts() throws {
        let model = try UCSupport.model()
        let support = StoreCommitSupport(model: model)
        let member = try #require(model.entitiesByName["UCMember"])
        let email = try #require(member.propertyIndex(named: "email"))
        func row(_ pk: Int64, _ address: String) -> StoreRow {
            var values = Array(repeating: StoreValue.null, count: member.properties.count)
            values[email] = .string(address)
            return StoreRow(id: StoreRowID(entity: member.index, primaryKey: pk), version: 1, values: values)
        }
        let stored = [row(1, "a@x")]
        var t = StoreTransaction()
        t.inserts = [row(2, "a@x"), row(3, "b@x"), row(4, "b@x")]
        let conflicts = try support.constraintConflicts(in: t, storedRows: { _ in stored }, stored: { id in stored.first { $0.id == id } })
        #expect(conflicts.count == 2)
        #expect(conflicts.contains { $0.stored?.id.primaryKey == 1 && $0.rows.map(\.primaryKey) == [2] })
        #expect(conflicts.contains { $0.stored == nil && $0.rows.map(\.primaryKey) == [3, 4] })
    }

    @Test("Predicate evaluation and sorting match the in-memory store's")
    func evaluatesAndSorts() throws {
        let model = try Fixtures.model()
        let support = StoreCommitSupport(model: model)
        let book = try #require(model.entitiesByName["Book"])
        let pages = try #require(book.propertyIndex(named: "pages"))
        let rows = (1...6).map { i in
            var values = Array(repeating: StoreValue.null, count: book.properties.count)
            values[pages] = .integer(Int64(i % 3) * 10)
            return StoreRow(id: StoreRowID(entity: book.index, primaryKey: Int64(i)), version: 1, values: values)
        }
        let evaluator = support.evaluator(for: .compare(StorePath(property: pages), .greater, .integer(0)), entity: book.index)
        let matching = try rows.filter { try evaluator.matches($0) { _ in nil } }
        #expect(matching.map(\.id.primaryKey) == [1, 2, 4, 5])
        let sorted = StoreCommitSupport.sorted(matching, by: [StoreSortKey(property: pages, ascending: false)], offset: 1, limit: 2)
        #expect(sorted.map(\.id.primaryKey) == [5, 1])
    }
}
