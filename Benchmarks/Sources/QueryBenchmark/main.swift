// Query benchmark: fetch requests, a predicate through a to-one relationship, to-many faults,
// counts and a string search, done through PersistenceKit's object stack on the file store
// (full durability), printed beside raw SQLite doing the same work on the same data
// (SQLiteBaseline/SQLiteQueryBaseline.swift, which lists the data and the workloads),
// measured in the same run on the same clock.
//
//   swift run -c release --package-path Benchmarks QueryBenchmark [N=100000]
//
// As in StoreBenchmark, each side runs in fresh processes of this executable
// (`QueryBenchmark ours <N>`, `QueryBenchmark sqlite <N>`), alternating, for
// `PK_BENCH_ROUNDS` rounds (default 3); the table shows each side's best time, their ratio
// and the range of the single rounds' ratios, and `PK_BENCH_JSON=<file>` writes it as JSON.
//
// Every workload reads every attribute of every object it gets, as SQLite's side reads
// every column, and each runs in a context of its own, which has no object registered when
// it starts. The batch update and delete run as NSBatchUpdateRequest and
// NSBatchDeleteRequest, in the store, as SQLite's side runs one UPDATE and one DELETE. The
// N more books are inserted twice on our side: as managed objects and one save, then as an
// NSBatchInsertRequest of dictionaries (the store then holds N more books than SQLite's
// table did for its insert); both rows compare with SQLite's one insert transaction.

import BenchmarkSupport
import Foundation
import PersistenceKit
import SQLiteBaseline

final class Author: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var country: Int64 = 0
    @Relationship(inverse: "author") var books: Set<Book>
}

final class Book: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var price: Double = 0
    @Attribute(.indexed) var year: Int64 = 0
    @Attribute var genre: Int64 = 0
    @Relationship(inverse: "books") var author: Author?
}

/// One run's figures, as the `ours` and `sqlite` child processes print them: one JSON object
/// keyed as SQLite's side names them (`load_s`, `top20_sorted_s`, `top20_rows`, …). A
/// workload our API cannot express is absent on our side.
struct Figures: Codable {
    var engine = ""
    var n = 0
    var load: Double?
    var top20Sorted: Double?
    var top20Rows: Int?
    var keyPathPredicate: Double?
    var keyPathRows: Int?
    var toMany: Double?
    var toManyRows: Int?
    var countRange: Double?
    var counted: Int?
    var containsCaseInsensitive: Double?
    var containsRows: Int?
    var groupedAggregate: Double?
    var groupRows: Int?
    var batchUpdate: Double?
    var updated: Int?
    var batchDelete: Double?
    var deleted: Int?
    var batchInsert: Double?
    var batchInsertRequest: Double?

    enum CodingKeys: String, CodingKey {
        case engine, n
        case load = "load_s"
        case top20Sorted = "top20_sorted_s"
        case top20Rows = "top20_rows"
        case keyPathPredicate = "keypath_pred_s"
        case keyPathRows = "keypath_rows"
        case toMany = "to_many_s"
        case toManyRows = "to_many_rows"
        case countRange = "count_range_s"
        case counted
        case containsCaseInsensitive = "contains_ci_s"
        case containsRows = "contains_rows"
        case groupedAggregate = "group_agg_s"
        case groupRows = "group_rows"
        case batchUpdate = "batch_update_s"
        case updated
        case batchDelete = "batch_delete_s"
        case deleted
        case batchInsert = "batch_insert_s"
        case batchInsertRequest = "batch_insert_request_s"
    }
}

final class LockedBox: @unchecked Sendable {
    // @unchecked Sendable: written once by a synchronous completion handler on this thread.
    private var value: String?
    func set(_ v: String?) { value = v }
    func get() -> String? { value }
}

func makeContainer(_ url: URL, _ model: NSManagedObjectModel) throws -> NSPersistentContainer {
    let container = NSPersistentContainer(name: "queries", managedObjectModel: model)
    let description = NSPersistentStoreDescription(url: url)
    description.setOption(FileStore.Durability.full.rawValue, forKey: FileStore.durabilityOptionKey)
    container.persistentStoreDescriptions = [description]
    let failure = LockedBox()
    container.loadPersistentStores { _, error in failure.set(error.map { "\($0)" }) }
    if let message = failure.get() { throw BenchmarkError(message) }
    return container
}

/// Sets the attributes and author of book `i`, by the formulas SQLite's side uses.
@inline(__always)
func fill(_ book: Book, _ i: Int, authors: [Author]) {
    book.title = "Book \(i)"
    book.price = Double((i * 7919) % 100_000) / 100.0
    book.year = Int64(1900 + (i * 31) % 120)
    book.genre = Int64(i % 10)
    book.author = authors[(i * 13) % 1000]
}

/// Reads every attribute of `book` and its author (the foreign key SQLite's side reads; the
/// author stays a fault) into `sink`.
@inline(__always)
func read(_ book: Book, into sink: inout Double) {
    sink += Double(book.title.utf8.count) + book.price + Double(book.year) + Double(book.genre)
    if book.author == nil { sink += 1 }
}

/// Keeps `value` alive to the optimizer, so the work that produced it is not left out.
@inline(never)
func blackHole(_ value: Double) {
    if value == -.pi { print(value) }
}

func runOurs(n: Int) throws -> Figures {
    let dir = try makeScratchDirectory("pk-queries")
    defer { try? FileManager.default.removeItem(at: dir) }
    let model = try NSManagedObjectModel(managedObjectClasses: [Author.self, Book.self])
    let container = try makeContainer(dir.appendingPathComponent("queries.store"), model)
    var f = Figures(engine: "PersistenceKit", n: n)
    var sink = 0.0

    var authorIDs: [NSManagedObjectID] = []  // in pk order: authorIDs[pk - 1]
    let loader = container.newBackgroundContext()
    try loader.performAndWait {
        var authors: [Author] = []
        authors.reserveCapacity(1000)
        f.load = try seconds {
            for pk in 1...1000 {
                let author = Author(context: loader)
                author.name = "Author \(pk)"
                author.country = Int64(pk % 50)
                authors.append(author)
            }
            for i in 0..<n { fill(Book(context: loader), i, authors: authors) }
            try loader.save()
        }
        authorIDs = authors.map(\.objectID)
        loader.reset()
    }

    let top = container.newBackgroundContext()
    try top.performAndWait {
        var rows = 0
        // A request per genre inside the clock, as SQLite's side binds each genre inside its.
        f.top20Sorted = try seconds {
            for g in Int64(0)..<10 {
                let request = Book.fetchRequest()
                request.predicate = #Predicate<Book> { $0.genre == g }
                request.sortKeys = [SortKey("price", ascending: false)]
                request.fetchLimit = 20
                for book in try top.fetch(request) {
                    rows += 1
                    read(book, into: &sink)
                }
            }
        }
        f.top20Rows = rows
    }

    let keyPath = container.newBackgroundContext()
    try keyPath.performAndWait {
        // Built before the clock, as SQLite's side prepares and binds before its clock. A
        // predicate through a relationship is not a store condition: it runs in Swift on
        // every book, firing the authors' faults.
        let country: Int64 = 7
        let request = Book.fetchRequest()
        request.predicate = #Predicate<Book> { $0.author?.country == country }
        var rows = 0
        f.keyPathPredicate = try seconds {
            for book in try keyPath.fetch(request) {
                rows += 1
                read(book, into: &sink)
            }
        }
        f.keyPathRows = rows
    }

    let toMany = container.newBackgroundContext()
    try toMany.performAndWait {
        var rows = 0
        f.toMany = try seconds {
            for pk in 1...100 {
                guard let author = toMany.object(with: authorIDs[pk - 1]) as? Author else {
                    throw BenchmarkError("author \(pk) is not an Author")
                }
                for book in author.books {
                    rows += 1
                    read(book, into: &sink)
                }
            }
        }
        f.toManyRows = rows
    }

    let counter = container.newBackgroundContext()
    try counter.performAndWait {
        var counted = 0
        f.countRange = try seconds {
            for k in Int64(0)..<100 {
                let low = 1900 + k
                let high = low + 9
                let request = Book.fetchRequest()
                request.predicate = #Predicate<Book> { $0.year >= low && $0.year <= high }
                counted += try counter.count(for: request)
            }
        }
        f.counted = counted
    }

    let search = container.newBackgroundContext()
    try search.performAndWait {
        // SQLite's LIKE folds ASCII case; Linux Foundation's #Predicate has no
        // case-insensitive `contains`, so the title is lowercased (the needle already is).
        let needle = "123"
        let request = Book.fetchRequest()
        request.predicate = #Predicate<Book> { $0.title.localizedLowercase.contains(needle) }
        var rows = 0
        f.containsCaseInsensitive = try seconds {
            for book in try search.fetch(request) {
                rows += 1
                read(book, into: &sink)
            }
        }
        f.containsRows = rows
    }

    let grouper = container.newBackgroundContext()
    try grouper.performAndWait {
        // One dictionary fetch grouped by genre, the five aggregates SQLite's side computes;
        // every value of every result is read, as SQLite's side reads every column.
        func aggregate(_ name: String, _ function: String, _ keyPath: String) -> NSExpressionDescription {
            let d = NSExpressionDescription()
            d.name = name
            d.expression = NSExpression(forFunction: function, arguments: [NSExpression(forKeyPath: keyPath)])
            return d
        }
        var rows = 0
        f.groupedAggregate = try seconds {
            let request = NSFetchRequest<NSDictionary>(entityName: "Book")
            request.resultType = .dictionaryResultType
            request.propertiesToFetch = [
                "genre", aggregate("count", "count:", "genre"), aggregate("total", "sum:", "price"),
                aggregate("mean", "average:", "price"), aggregate("first", "min:", "year"), aggregate("last", "max:", "year"),
            ]
            request.propertiesToGroupBy = ["genre"]
            for group in try grouper.fetch(request) {
                rows += 1
                for key in ["genre", "count", "total", "mean", "first", "last"] {
                    sink += (group[key] as? Double) ?? 0
                }
            }
        }
        f.groupRows = rows
    }

    // The batch update and delete, each one request run in the store, built inside the
    // clock as SQLite's side prepares its statements inside its.
    let changer = container.newBackgroundContext()
    try changer.performAndWait {
        var updated = 0
        f.batchUpdate = try seconds {
            let update = NSBatchUpdateRequest(entityName: "Book")
            update.predicate = NSPredicate(format: "genre == %d", 3)
            update.propertiesToUpdate = [
                "price": NSExpression(
                    forFunction: "multiply:by:", arguments: [NSExpression(forKeyPath: "price"), NSExpression(forConstantValue: 1.1)])
            ]
            update.resultType = .updatedObjectsCountResultType
            updated = (try changer.execute(update) as? NSBatchUpdateResult)?.result as? Int ?? -1
        }
        f.updated = updated
        var deleted = 0
        f.batchDelete = try seconds {
            let old = NSFetchRequest<NSFetchRequestResult>(entityName: "Book")
            old.predicate = NSPredicate(format: "year < %d", 1960)
            let delete = NSBatchDeleteRequest(fetchRequest: old)
            delete.resultType = .resultTypeCount
            deleted = (try changer.execute(delete) as? NSBatchDeleteResult)?.result as? Int ?? -1
        }
        f.deleted = deleted
    }

    let inserter = container.newBackgroundContext()
    try inserter.performAndWait {
        // The authors are registered (as faults) before the clock: SQLite's side has their
        // keys at hand.
        var authors: [Author] = []
        for id in authorIDs {
            guard let author = inserter.object(with: id) as? Author else { throw BenchmarkError("\(id) is not an Author") }
            authors.append(author)
        }
        f.batchInsert = try seconds {
            for i in n..<(2 * n) { fill(Book(context: inserter), i, authors: authors) }
            try inserter.save()
        }
    }

    let batchInserter = container.newBackgroundContext()
    try batchInserter.performAndWait {
        // The same formulas as `fill`, one dictionary per book handed to the request as it
        // asks for the next; the author by its ID (the foreign key SQLite's side writes).
        f.batchInsertRequest = try seconds {
            var i = n
            let insert = NSBatchInsertRequest(entityName: "Book") { (book: inout [String: Any]) in
                guard i < 2 * n else { return true }
                book["title"] = "Book \(i)"
                book["price"] = Double((i * 7919) % 100_000) / 100.0
                book["year"] = Int64(1900 + (i * 31) % 120)
                book["genre"] = Int64(i % 10)
                book["author"] = authorIDs[(i * 13) % 1000]
                i += 1
                return false
            }
            try batchInserter.execute(insert)
        }
    }
    blackHole(sink)
    return f
}

/// `QueryBenchmark ours <N>` / `QueryBenchmark sqlite <N>`: one run of one side, in a fresh
/// process (see `runThisExecutable`), printed as one JSON object.
if CommandLine.arguments.count > 2 && ["ours", "sqlite"].contains(CommandLine.arguments[1]) {
    let n = Int(CommandLine.arguments[2]) ?? 100_000
    let figures: Figures
    if CommandLine.arguments[1] == "ours" {
        figures = try runOurs(n: n)
    } else {
        let dir = try makeScratchDirectory("pk-sqlite-queries")
        defer { try? FileManager.default.removeItem(at: dir) }
        let b = try SQLiteQueryBaseline.run(n: n, directory: dir.path)
        figures = Figures(
            engine: "SQLite \(sqliteVersion)", n: n, load: b.load, top20Sorted: b.top20Sorted, top20Rows: b.top20Rows,
            keyPathPredicate: b.keyPathPredicate, keyPathRows: b.keyPathRows, toMany: b.toMany, toManyRows: b.toManyRows,
            countRange: b.countRange, counted: b.counted, containsCaseInsensitive: b.containsCaseInsensitive,
            containsRows: b.containsRows, groupedAggregate: b.groupedAggregate, groupRows: b.groupRows,
            batchUpdate: b.batchUpdate, updated: b.updated, batchDelete: b.batchDelete, deleted: b.deleted,
            batchInsert: b.batchInsert, batchInsertRequest: b.batchInsert)
    }
    FileHandle.standardOutput.write(try JSONEncoder().encode(figures))
    exit(0)
}

let n = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let rounds = benchmarkRounds

/// The timed workloads, in table order, and the row counts both sides must agree on.
let workloads: [(name: String, time: (Figures) -> Double?, rows: (Figures) -> Int?)] = [
    ("load: 1,000 authors + \(n) books, one save (setup)", { $0.load }, { _ in nil }),
    ("10 fetches by genre, sorted by price, limit 20", { $0.top20Sorted }, { $0.top20Rows }),
    ("1 fetch through a to-one: author.country == 7", { $0.keyPathPredicate }, { $0.keyPathRows }),
    ("to-many faults: the books of 100 authors", { $0.toMany }, { $0.toManyRows }),
    ("100 counts of an indexed year range", { $0.countRange }, { $0.counted }),
    ("1 fetch: title contains \"123\", case-insensitive", { $0.containsCaseInsensitive }, { $0.containsRows }),
    ("grouped aggregate by genre (dictionary results)", { $0.groupedAggregate }, { $0.groupRows }),
    ("batch update: genre == 3, price × 1.1", { $0.batchUpdate }, { $0.updated }),
    ("batch delete: year < 1960", { $0.batchDelete }, { $0.deleted }),
    ("insert \(n) more books, one save", { $0.batchInsert }, { _ in nil }),
    ("insert \(n) more books, NSBatchInsertRequest", { $0.batchInsertRequest }, { _ in nil }),
]

var ours: [Figures] = []
var base: [Figures] = []
for _ in 0..<rounds {
    ours.append(try JSONDecoder().decode(Figures.self, from: runThisExecutable(["ours", "\(n)"])))
    base.append(try JSONDecoder().decode(Figures.self, from: runThisExecutable(["sqlite", "\(n)"])))
}
print("Query benchmark, N = \(n), full durability, release build, best of \(rounds) rounds, SQLite \(sqliteVersion). Ratio = ours / SQLite (lower is better).")
print("| workload | PersistenceKit | SQLite | ratio | ratio per round |")
print("|---|---|---|---|---|")
var resultLines: [Comparison] = []
for w in workloads {
    let line = Comparison(w.name, durability: "FULL", unit: .seconds, ours: ours.map(w.time), sqlite: base.map { w.time($0) ?? .nan })
    print("| \(([w.name] + line.cells).joined(separator: " | ")) |")
    resultLines.append(line)
    for (o, b) in zip(ours, base) {
        if let ourRows = w.rows(o), let theirRows = w.rows(b), ourRows != theirRows {
            print("warning: \(w.name): ours found \(ourRows) rows, SQLite \(theirRows)")
        }
    }
}
try writeJSONIfAsked(resultLines)
