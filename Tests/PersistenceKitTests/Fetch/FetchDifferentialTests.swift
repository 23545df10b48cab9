import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

struct FetchDiffRNG: RandomNumberGenerator {
    var s: UInt64
    mutating func next() -> UInt64 {
        s &+= 0x9E37_79B9_7F4A_7C15
        var z = s
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum FetchDiff {
    static func title(_ rng: inout FetchDiffRNG, _ n: Int) -> String {
        String((0..<2).map { _ in "abcd".randomElement(using: &rng)! }) + "-\(n)"
    }
    static let predicates: [Predicate<Book>?] = [
        nil,
        #Predicate<Book> { $0.title.contains("a") },
        #Predicate<Book> { $0.shelf?.name == "s1" },
        #Predicate<Book> { $0.authors.count >= 2 },
        #Predicate<Book> { $0.pages > 5 },
        #Predicate<Book> { $0.pages > 3 && $0.title.contains("b") },
        #Predicate<Book> { ($0.shelf?.books.count ?? 0) > 8 },
        #Predicate<Book> { $0.authors.contains { $0.name == "a1" } },
        #Predicate<Book> { b in b.shelf?.books.contains { $0.pages > 8 } == true },
    ]
    static func less(_ sort: Int, _ a: Book, _ b: Book) -> Bool {
        switch sort {
        case 1: return a.title < b.title
        case 2: return a.pages != b.pages ? a.pages > b.pages : a.title < b.title
        case 3: return a.pages != b.pages ? a.pages < b.pages : a.title < b.title
        default:
            let x = a.shelf?.name, y = b.shelf?.name
            if x != y { return x == nil ? true : (y == nil ? false : x! < y!) }
            return a.title < b.title
        }
    }
    static func apply(_ sort: Int, to r: NSFetchRequest<some Any>) {
        switch sort {
        case 1: r.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: true)]
        case 2: r.sortDescriptors = [NSSortDescriptor(keyPath: \Book.pages, ascending: false), NSSortDescriptor(keyPath: \Book.title, ascending: true)]
        case 3: r.sortBy([SortDescriptor(\Book.pages), SortDescriptor(\Book.title)])
        case 4: r.sortBy([SortDescriptor(\Book.shelf?.name), SortDescriptor(\Book.title)])
        default: break
        }
    }
}

/// A randomized differential run of fetches (row stand-ins included): random books,
/// shelves and authors, random pending changes, then one fetch with a random predicate (in
/// memory or in the store, through relationships or not), sort, window and mode, checked
/// against the object-ID fetch, `count(for:)`, and an oracle that filters and sorts every
/// object in Swift. `PK_FETCH_SEEDS` sets the number of seeds (2,000 passed).
@Suite("Fetches checked against an oracle") struct FetchDifferentialTests {
    @Test func randomFetchesAgreeWithTheOracle() throws {
        var mismatches = 0
        let seeds = Int(ProcessInfo.processInfo.environment["PK_FETCH_SEEDS"] ?? "150") ?? 150
        for seed in 0..<seeds {
            var rng = FetchDiffRNG(s: UInt64(seed) &* 7919)
            let container = try Fixtures.container(name: "fetchdiff\(seed)")
            let setup = container.newBackgroundContext()
            var bookIDs: [NSManagedObjectID] = [], shelfIDs: [NSManagedObjectID] = [], authorIDs: [NSManagedObjectID] = []
            try setup.performAndWait {
                let shelves = (0..<3).map { i -> Shelf in let s = Shelf(context: setup); s.name = "s\(i)"; return s }
                let authors = (0..<4).map { i -> Author in let a = Author(context: setup); a.name = "a\(i)"; return a }
                var books: [Book] = []
                for i in 0..<25 {
                    let b = Book(context: setup)
                    b.title = FetchDiff.title(&rng, i)
                    b.pages = Int64.random(in: 0..<10, using: &rng)
                    if Bool.random(using: &rng) { b.shelf = shelves.randomElement(using: &rng) }
                    for a in authors where Int.random(in: 0..<3, using: &rng) == 0 { b.$authors.insert(a) }
                    books.append(b)
                }
                try setup.save()
                bookIDs = books.map(\.objectID); shelfIDs = shelves.map(\.objectID); authorIDs = authors.map(\.objectID)
            }
            let ctx = container.newBackgroundContext()
            try ctx.performAndWait {
                var n = 100
                for _ in 0..<Int.random(in: 0..<8, using: &rng) {
                    let b = ctx.object(with: bookIDs.randomElement(using: &rng)!) as! Book
                    if b.isDeleted { continue }
                    n += 1
                    switch Int.random(in: 0..<9, using: &rng) {
                    case 0: _ = b.title  // only registered and fired
                    case 1: b.title = FetchDiff.title(&rng, n)
                    case 2: b.pages = Int64.random(in: 0..<10, using: &rng)
                    case 3: b.shelf = Bool.random(using: &rng) ? nil : (ctx.object(with: shelfIDs.randomElement(using: &rng)!) as! Shelf)
                    case 4: b.$authors.insert(ctx.object(with: authorIDs.randomElement(using: &rng)!) as! Author)
                    case 5: b.authors = []
                    case 6: ctx.delete(b)
                    case 7:
                        let nb = Book(context: ctx)
                        nb.title = FetchDiff.title(&rng, n)
                        nb.pages = Int64.random(in: 0..<10, using: &rng)
                        nb.shelf = ctx.object(with: shelfIDs.randomElement(using: &rng)!) as? Shelf
                    default: (ctx.object(with: shelfIDs.randomElement(using: &rng)!) as! Shelf).name = "s\(Int.random(in: 0..<3, using: &rng))"
                    }
                }
                let p = Int.random(in: 0..<FetchDiff.predicates.count, using: &rng)
                let sort = Int.random(in: 0..<5, using: &rng)
                let pending = Int.random(in: 0..<4, using: &rng) != 0
                let limit = Bool.random(using: &rng) ? Int.random(in: 1..<6, using: &rng) : 0
                let offset = Int.random(in: 0..<4, using: &rng) == 0 ? Int.random(in: 1..<4, using: &rng) : 0
                let mode = Int.random(in: 0..<4, using: &rng)
                func configure(_ r: NSFetchRequest<some Any>) {
                    r.setPredicate(FetchDiff.predicates[p]); FetchDiff.apply(sort, to: r)
                    r.includesPendingChanges = pending; r.fetchLimit = limit; r.fetchOffset = offset
                }
                let idReq = NSFetchRequest<NSManagedObjectID>(entityName: "Book"); configure(idReq); idReq.resultType = .managedObjectIDResultType
                let ids = try ctx.fetch(idReq)
                let cntReq = NSFetchRequest<Book>(entityName: "Book"); configure(cntReq)
                let count = try ctx.count(for: cntReq)
                let req = NSFetchRequest<Book>(entityName: "Book"); configure(req)
                if mode == 1 { req.includesPropertyValues = false }
                if mode == 2 { req.fetchBatchSize = 2 }
                if mode == 3 { req.returnsObjectsAsFaults = false }
                let liveBefore = Set(ctx.registeredObjects.filter { !$0.isFault }.map(ObjectIdentifier.init))
                let got = try ctx.fetch(req)
                let desc = "seed \(seed) p\(p) sort\(sort) pending \(pending) limit \(limit) offset \(offset) mode \(mode)"
                var problems: [String] = []
                if Set(got.map(ObjectIdentifier.init)).count != got.count { problems.append("duplicate objects") }
                if Set(got.map(\.objectID)).count != got.count { problems.append("duplicate IDs") }
                if got.contains(where: { ctx.registeredObject(for: $0.objectID) !== $0 }) { problems.append("result not the registered object") }
                if mode == 1, got.contains(where: { !$0.isFault && !liveBefore.contains(ObjectIdentifier($0)) }) { problems.append("includesPropertyValues=false returned a non-fault") }
                if got.map(\.objectID) != ids { problems.append("ID fetch differs: \(ids.count) vs \(got.count)") }
                if count != got.count { problems.append("count \(count) vs \(got.count)") }
                // Oracle.
                let oracleCtx = pending ? ctx : container.newBackgroundContext()
                var expected: [NSManagedObjectID] = []
                try oracleCtx.performAndWait {
                    let all = try oracleCtx.fetch(NSFetchRequest<Book>(entityName: "Book"))
                    var m = try all.filter { b in try FetchDiff.predicates[p].map { try $0.evaluate(b) } ?? true }
                    if sort != 0 { m.sort { FetchDiff.less(sort, $0, $1) } }
                    m = Array(m.dropFirst(offset))
                    if limit > 0 { m = Array(m.prefix(limit)) }
                    expected = m.map(\.objectID)
                }
                let gotIDs = got.map(\.objectID)
                // Without pending changes a predicate or sort through a relationship reads the
                // related objects as this context has them (Docs/Differences.md), which the
                // oracle's fresh context does not: no oracle for those.
                let throughRelationship = [2, 3, 6, 7, 8].contains(p) || sort == 4
                let ok =
                    (!pending && throughRelationship)
                    || (sort != 0 ? gotIDs == expected : (limit == 0 && offset == 0 ? Set(gotIDs) == Set(expected) : gotIDs.count == expected.count))
                if !ok { problems.append("oracle: expected \(expected.map { $0.uriRepresentation().lastPathComponent }) got \(gotIDs.map { $0.uriRepresentation().lastPathComponent })") }
                if !problems.isEmpty {
                    mismatches += 1
                    Issue.record("\(desc): \(problems)")
                }
            }
        }
        #expect(mismatches == 0)
    }
}
