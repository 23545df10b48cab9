import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// Every fetch answered by the PostgreSQL store (in SQL, or in memory where the translator
/// stops) must equal the in-memory store's answer on the same data.
@Suite("PostgreSQL store: fetches answer as the in-memory store does", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct FetchTranslationTests {
    /// Saves the same shelves, books and authors into `container`.
    static func seed(_ container: NSPersistentContainer) async throws {
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let shelves = (0..<3).map { i in
                let s = Shelf(context: ctx)
                s.name = ["Attic", "Den", "Études"][i]
                return s
            }
            let authors = (0..<4).map { i in
                let a = Author(context: ctx)
                a.name = ["Ann", "bob", "Çem", "dee"][i]
                return a
            }
            let titles = [
                "alpha", "Beta", "gamma", "Delta", "épsilon", "zeta", "Eta", "theta", "iota", "KAPPA", "lambda", "mu", "nu%",
                "x_i", "omicron*", "pi?", "rho", "Sigma", "tau", "upsilon", "", "phi phi", "chi", "psi", "omega",
            ]
            for (i, title) in titles.enumerated() {
                let b = Book(context: ctx)
                b.title = title
                b.pages = Int64((i * 37) % 11) * 10
                b.published = i % 4 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(i) * 86_400)
                b.shelf = i % 5 == 0 ? nil : shelves[i % 3]
                for (k, a) in authors.enumerated() where (i + k) % 3 == 0 { b.authors.insert(a) }
            }
            let specials: [Double] = [.nan, -0.0, 0, .infinity, -.infinity, 1.5, -2.25]
            for (i, v) in specials.enumerated() {
                let r = Record(context: ctx)
                r.ratio = v
                r.single = Float(v)
                r.large = Int64(i) - 3
                r.text = "r\(i)"
                r.flag = i % 2 == 0
            }
            try ctx.save()
        }
    }

    static let bookPredicates: [String] = [
        "pages > 30", "pages >= 30 AND pages < 80", "pages != 40", "NOT (pages == 40)", "published == nil", "published != nil",
        "published < %@", "published > %@ OR pages == 0", "title == 'Beta'", "title BEGINSWITH 'e'", "title ENDSWITH 'a'",
        "title CONTAINS 'ph'", "title LIKE '*a'", "title LIKE 'nu%'", "title LIKE 'x_i'", "title LIKE 'omicron\\\\*'",
        "title LIKE '?i?'", "title CONTAINS[c] 'A'", "title BEGINSWITH[cd] 'E'", "title MATCHES '[a-d].*'",
        "title IN {'alpha', 'Beta', 'nope'}", "NOT (title IN {'alpha', 'Beta'})", "shelf == nil", "shelf != nil",
        "shelf.name == 'Den'", "shelf.name BEGINSWITH 'É'", "NOT (shelf.name == 'Den')", "shelf.name != 'Den'",
        "ANY authors.name == 'Ann'", "ALL authors.name != 'bob'", "NONE authors.name BEGINSWITH 'd'",
        "authors.@count == 2", "authors.@count > 1 OR pages == 100", "SUBQUERY(authors, $a, $a.name == 'dee').@count > 0",
        "title < 'delta'", "title >= 'gamma'", "ANY authors.name ==[c] 'BOB'", "NOT (ANY authors.name == 'Ann')",
        "TRUEPREDICATE", "FALSEPREDICATE", "pages BETWEEN {20, 60}",
    ]

    static let recordPredicates: [String] = [
        "ratio > 0", "ratio < 0", "ratio == 0", "ratio != 0", "ratio >= -1", "single <= 1.5", "large > -2", "flag == YES",
        "NOT (ratio > 0)", "text IN {'r1', 'r4'}",
    ]

    @Test("Filters, sorts, limits, offsets and counts match the in-memory store")
    func matchesInMemory() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let pg = try await TestServer.container(model: model, schema: schema)
        let memory = NSPersistentContainer(name: "memory", managedObjectModel: model)
        memory.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        try await memory.loadPersistentStores()
        try await Self.seed(pg)
        try await Self.seed(memory)
        let cutoff = Date(timeIntervalSinceReferenceDate: 10 * 86_400)
        let sorts: [[SortKey]] = [
            [], [SortKey("title")], [SortKey("pages", ascending: false)],
            [SortKey("published"), SortKey("title", ascending: false)],
            [SortKey("title", comparison: .caseInsensitive)],
        ]
        func books(_ container: NSPersistentContainer, _ format: String, _ sort: [SortKey], offset: Int, limit: Int)
            async throws -> ([String], Int)
        {
            let ctx = container.newBackgroundContext()
            return try await ctx.perform {
                let r = NSFetchRequest<Book>(entityName: "Book")
                r.predicate = NSPredicate(format: format, argumentArray: format.contains("%@") ? [cutoff] : [])
                r.sortKeys = sort.isEmpty ? [SortKey("title")] : sort
                r.fetchOffset = offset
                r.fetchLimit = limit
                let titles = try ctx.fetch(r).map(\.title)
                let c = NSFetchRequest<Book>(entityName: "Book")
                c.predicate = r.predicate
                return (titles, try ctx.count(for: c))
            }
        }
        // The data set makes most predicates select some rows and leave others.
        var selective = 0
        for format in Self.bookPredicates {
            let all = try await books(memory, format, [], offset: 0, limit: 0).1
            if all > 0 && all < 25 { selective += 1 }
            for sort in sorts {
                for (offset, limit) in [(0, 0), (2, 5)] {
                    let a = try await books(pg, format, sort, offset: offset, limit: limit)
                    let b = try await books(memory, format, sort, offset: offset, limit: limit)
                    #expect(a.0 == b.0, "\(format) sorted by \(sort.map(\.key)) window \(offset),\(limit)")
                    #expect(a.1 == b.1, "count of \(format)")
                }
            }
        }
        #expect(selective > Self.bookPredicates.count * 3 / 4)
        func records(_ container: NSPersistentContainer, _ format: String, ascending: Bool) async throws -> [String] {
            let ctx = container.newBackgroundContext()
            return try await ctx.perform {
                let r = NSFetchRequest<Record>(entityName: "Record")
                r.predicate = NSPredicate(format: format)
                r.sortKeys = [SortKey("ratio", ascending: ascending)]
                return try ctx.fetch(r).map(\.text)
            }
        }
        for format in Self.recordPredicates {
            for ascending in [true, false] {
                let a = try await records(pg, format, ascending: ascending)
                let b = try await records(memory, format, ascending: ascending)
                #expect(a == b, "\(format) ascending: \(ascending)")
            }
        }
    }
}
