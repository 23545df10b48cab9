import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// The store answers conditions on indexed attributes from its indexes (`FileStore+Index`):
/// what they return must be exactly what a scan returns, for every operator, after updates,
/// deletes, a compaction and a reopen, and for values that compare oddly (NaN dates,
/// relative URLs). An index build stopped by damage starts over.
@Suite("Indexed fetches") struct IndexTests {
    /// Every operator on an indexed integer, ranges and a mix with an unindexed condition,
    /// after inserts, updates and deletes, and again after a compaction.
    @Test func indexedConditionsReturnExactlyWhatAScanReturns() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        let model = try Fixtures.model()
        let entity = try #require(model.entitiesByName["Book"])
        var random = FSRandom(seed: 42)
        try RoundTripTests.withStore(url, model: model) { context in
            var books: [Book] = []
            for i in 0..<400 {
                let b = Book(context: context)
                b.title = "t\(i % 17)"
                b.pages = Int64.random(in: -20...60, using: &random)
                books.append(b)
            }
            try context.save()
            // Updates move rows between index entries; deletes remove them.
            for b in books.shuffled(using: &random).prefix(120) { b.pages = Int64.random(in: -20...60, using: &random) }
            for b in books.shuffled(using: &random).prefix(60) { context.delete(b) }
            try context.save()
            let extreme = Book(context: context)
            extreme.pages = .max
            let lowest = Book(context: context)
            lowest.pages = .min
            try context.save()
        }

        let store = try FileStore.open(at: url, model: model)
        defer { try? store.close() }
        let pages = try #require(entity.indexByName["pages"])
        let title = try #require(entity.indexByName["title"])
        try Self.checkConditions(store, entity: entity.index, pages: pages, title: title)
        // And again after a compaction (indexes rebuilt from the checkpoint).
        try store.compact()
        try Self.checkConditions(store, entity: entity.index, pages: pages, title: title)
    }

    static func checkConditions(_ store: FileStore, entity: Int32, pages: Int, title: Int) throws {
        let all = try store.fetchRows(entity: entity, filter: nil)
        #expect(all.count == 342)
        func pagesOf(_ row: StoreRow) -> Int64? {
            if case let .integer(x) = row.values[pages] { return x }
            return nil
        }
        typealias Op = StoreFilter.Condition.Operator
        let ops: [(Op, (Int64, Int64) -> Bool)] = [
            (.equal, { $0 == $1 }), (.notEqual, { $0 != $1 }), (.less, { $0 < $1 }),
            (.lessOrEqual, { $0 <= $1 }), (.greater, { $0 > $1 }), (.greaterOrEqual, { $0 >= $1 }),
        ]
        for value: Int64 in [-21, -20, -1, 0, 7, 30, 60, 61, .max, .min] {
            for (op, test) in ops {
                let filter = StoreFilter([.init(property: pages, op, .integer(value))])
                let got = try store.fetchRows(entity: entity, filter: filter).map(\.id)
                let want = all.filter { pagesOf($0).map { test($0, value) } ?? false }.map(\.id)
                #expect(got == want, "pages \(op) \(value): \(got.count) rows, a scan finds \(want.count)")
                #expect(try store.countRows(entity: entity, filter: filter) == want.count)
            }
        }
        // Ranges (two conditions on the indexed attribute) and a mix with an unindexed one.
        for (low, high) in [(Int64(0), Int64(10)), (-5, -5), (10, 0), (-100, 100)] {
            let filter = StoreFilter([.init(property: pages, .greaterOrEqual, .integer(low)), .init(property: pages, .less, .integer(high))])
            let got = try store.fetchRows(entity: entity, filter: filter).map(\.id)
            let want = all.filter { pagesOf($0).map { $0 >= low && $0 < high } ?? false }.map(\.id)
            #expect(got == want, "\(low) <= pages < \(high)")
        }
        let mixed = StoreFilter([.init(property: title, .equal, .string("t3")), .init(property: pages, .greater, .integer(20))])
        let got = try store.fetchRows(entity: entity, filter: mixed).map(\.id)
        let want = all.filter { $0.values[title] == .string("t3") && (pagesOf($0) ?? .min) > 20 }.map(\.id)
        #expect(got == want)
    }

    /// A date with a NaN interval is not indexed (it equals nothing, itself included):
    /// range fetches through the index give what a scan gives.
    @Test func nanDatesLeaveIndexedRangeFetchesRight() throws {
        let folder = try TemporaryFolder()
        let mismatches = try FSSupport.withItemStore(folder.storeURL) { c in
            var random = FSRandom(seed: 7)
            for i in 0..<200 {
                let o = FSItem(context: c)
                o.key = Int64(i)
                let t = i % 5 == 0 ? Double.nan : Double(Int.random(in: 0..<100, using: &random))
                o.iDate = Date(timeIntervalSinceReferenceDate: t)
                o.pDate = o.iDate
            }
            try c.save()
            c.reset()
            var mismatches: [String] = []
            for b in stride(from: 0.0, to: 100, by: 10) {
                let bound = Date(timeIntervalSinceReferenceDate: b)
                let indexed = try FSSupport.itemKeys(c, #Predicate { $0.iDate > bound })
                let scanned = try FSSupport.itemKeys(c, #Predicate { $0.pDate > bound })
                if indexed != scanned { mismatches.append("> \(b): indexed \(indexed.count) rows, scanned \(scanned.count)") }
            }
            return mismatches
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    /// A relative URL is found by an indexed equality fetch for its absolute form, whether
    /// the index was built by the save or after a reopen, as the scan finds it.
    @Test func relativeURLIsIndexedByItsAbsoluteForm() throws {
        let folder = try TemporaryFolder()
        let target: URL? = URL(string: "http://example.com/a/b")
        func counts(_ c: NSManagedObjectContext) throws -> (indexed: Int, scanned: Int) {
            (try FSSupport.itemKeys(c, #Predicate { $0.iURL == target }).count, try FSSupport.itemKeys(c, #Predicate { $0.pURL == target }).count)
        }
        let before = try FSSupport.withItemStore(folder.storeURL) { c in
            let o = FSItem(context: c)
            o.iURL = URL(string: "b", relativeTo: URL(string: "http://example.com/a/"))
            o.pURL = o.iURL
            try c.save()
            c.reset()
            return try counts(c)
        }
        let after = try FSSupport.withItemStore(folder.storeURL) { c in try counts(c) }
        #expect(before == (1, 1))
        #expect(after == (1, 1))
    }

    /// An index build stopped by a damaged value starts over the next time: it used to keep
    /// what it had built, the next build added those rows again, and an indexed fetch returned
    /// them twice.
    @Test func anIndexBuildStoppedByDamageStartsOverNextTime() throws {
        let folder = try TemporaryFolder()
        let marker: Int64 = 0x0123_4567_89AB_CDEF
        let container = try FSSupport.container(at: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for pages in [7, 7, marker] as [Int64] { Book(context: context).pages = pages }  // keys 1, 2, 3
            try context.save()
        }
        try FSSupport.close(container)
        // Give the third book's indexed value an unknown tag; the record stays checksum-valid.
        var bytes = try FSSupport.bytes(folder.storeURL)
        let pattern = withUnsafeBytes(of: marker.littleEndian) { Array($0) }
        let at = try #require((0...(bytes.count - 8)).first { Array(bytes[$0..<($0 + 8)]) == pattern })
        bytes[at - 1] = 0xEE
        FSSupport.fixRecordCRC(&bytes, recordAt: FSSupport.recordOffsets(bytes)[0])
        try FSSupport.write(bytes, to: folder.storeURL)

        let store = try FileStore.open(at: folder.storeURL, model: try Fixtures.model())
        defer { try? store.close() }
        let book = try DeferredOpenTests.index("Book", in: store)
        let pages = try #require(store.model.entitiesByName["Book"]?.indexByName["pages"])
        let sevens = StoreFilter([.init(property: pages, .equal, .integer(7))])
        #expect(throws: FileStoreError.self) { _ = try store.fetchRows(entity: book, filter: sevens) }
        // Remove the damaged row (a delete decodes nothing), then build the index again.
        _ = try store.commit({
            var t = StoreTransaction()
            t.deletes = [(StoreRowID(entity: book, primaryKey: 3), 1)]
            return t
        }())
        #expect(try store.fetchRows(entity: book, filter: sevens).map(\.id.primaryKey) == [1, 2])
    }
}
