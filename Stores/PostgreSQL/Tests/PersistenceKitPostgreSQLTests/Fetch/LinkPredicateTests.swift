import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// Predicates over to-many ends that have no column (a shelf's books, read from the books'
/// key column; an author's books, read from a join table) answer as the in-memory store does.
@Suite("PostgreSQL store: predicates over derived and joined to-many ends", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct LinkPredicateTests {
    static let shelfPredicates = [
        "ANY books.pages > 50", "ALL books.pages < 100", "NONE books.title BEGINSWITH 'e'", "books.@count > 5", "books.@count == 7",
        "SUBQUERY(books, $b, $b.pages > 30).@count >= 2", "ANY books.title IN {'Beta', 'zeta'}", "NOT (ANY books.pages == 0)",
        "ANY books.authors.name == 'Ann'", "books.@count > 6 OR name == 'Attic'",
    ]
    static let authorPredicates = [
        "ANY books.pages > 80", "ALL books.shelf != nil", "NONE books.shelf.name == 'Den'", "books.@count >= 9",
        "ANY books.title == 'alpha'", "SUBQUERY(books, $b, $b.shelf == nil).@count == 2", "NOT (ALL books.pages > 0)",
    ]

    @Test("Shelf and author predicates over their to-many ends match the in-memory store")
    func matchesInMemory() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let pg = try await TestServer.container(model: model, schema: schema)
        let memory = NSPersistentContainer(name: "memory", managedObjectModel: model)
        memory.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        try await memory.loadPersistentStores()
        try await FetchTranslationTests.seed(pg)
        try await FetchTranslationTests.seed(memory)
        func names(_ container: NSPersistentContainer, _ entity: String, _ format: String) async throws -> ([String], Int) {
            let ctx = container.newBackgroundContext()
            return try await ctx.perform {
                let r = NSFetchRequest<NSManagedObject>(entityName: entity)
                r.predicate = NSPredicate(format: format)
                r.sortKeys = [SortKey("name")]
                let names = try ctx.fetch(r).compactMap { $0.value(forKey: "name") as? String }
                return (names, try ctx.count(for: r))
            }
        }
        var selective = 0
        for (entity, formats) in [("Shelf", Self.shelfPredicates), ("Author", Self.authorPredicates)] {
            for format in formats {
                let a = try await names(pg, entity, format)
                let b = try await names(memory, entity, format)
                #expect(a.0 == b.0, "\(entity): \(format)")
                #expect(a.1 == b.1, "count of \(entity): \(format)")
                if !b.0.isEmpty && b.0.count < (entity == "Shelf" ? 3 : 4) { selective += 1 }
            }
        }
        #expect(selective >= 8, "too few predicates select some rows and leave others")
    }
}
