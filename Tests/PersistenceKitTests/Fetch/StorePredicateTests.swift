import Foundation
import Testing
@testable import PersistenceKit

/// Predicates the store evaluates on its rows — through to-one relationships, over
/// to-manys, with `||`, `!`, `IN` and string tests — written as `#Predicate` and as format
/// strings: each returns the objects an evaluation on every object returns, on the file
/// store and the in-memory store, and runs in the store.
@Suite("Predicates evaluated by the store") struct StorePredicateTests {
    /// A library with a nil shelf, an empty to-many and mixed-case titles: shelves "Poetry"
    /// (3 books) and "Prose" (1 book, no authors), one book on no shelf.
    static func seed(_ context: NSManagedObjectContext) throws {
        try context.performAndWait {
            let poetry = Shelf(context: context)
            poetry.name = "Poetry"
            let prose = Shelf(context: context)
            prose.name = "Prose"
            let keats = Author(context: context)
            keats.name = "Keats"
            let byron = Author(context: context)
            byron.name = "Byron"
            let specs: [(String, Int64, Shelf?, [Author])] = [
                ("Endymion", 400, poetry, [keats]),
                ("Lamia", 120, poetry, [keats, byron]),
                ("Don Juan", 560, poetry, [byron]),
                ("emma", 300, prose, []),
                ("Ulysses", 730, nil, [byron]),
            ]
            for (title, pages, shelf, authors) in specs {
                let b = Book(context: context)
                b.title = title
                b.pages = pages
                b.shelf = shelf
                b.authors = Set(authors)
            }
            try context.save()
        }
    }

    /// A query in both spellings and the in-memory truth.
    struct Query: Sendable, CustomStringConvertible {
        let name: String
        let format: String
        let arguments: [String]
        let truth: @Sendable (Book) -> Bool
        var description: String { name }
    }

    static let queries: [Query] = [
        Query(name: "to-one attribute", format: "shelf.name == %@", arguments: ["Poetry"]) { $0.shelf?.name == "Poetry" },
        Query(name: "to-one attribute, negated", format: "shelf.name != %@", arguments: ["Poetry"]) { $0.shelf?.name != "Poetry" },
        Query(name: "nil to-one", format: "shelf == nil", arguments: []) { $0.shelf == nil },
        Query(name: "or", format: "pages < 200 OR pages > 600", arguments: []) { $0.pages < 200 || $0.pages > 600 },
        Query(name: "not", format: "NOT (pages > 300)", arguments: []) { !($0.pages > 300) },
        Query(name: "in", format: "pages IN {120, 730}", arguments: []) { [120, 730].contains($0.pages) },
        Query(name: "between", format: "pages BETWEEN {300, 560}", arguments: []) { (300...560).contains($0.pages) },
        Query(name: "begins with", format: "title BEGINSWITH 'L'", arguments: []) { $0.title.hasPrefix("L") },
        Query(name: "ends with, case-insensitive", format: "title ENDSWITH[c] 'A'", arguments: []) { $0.title.lowercased().hasSuffix("a") },
        Query(name: "contains, case-insensitive", format: "title CONTAINS[c] 'EM'", arguments: []) { $0.title.lowercased().contains("em") },
        Query(name: "equals, case-insensitive", format: "title ==[c] 'EMMA'", arguments: []) { $0.title.lowercased() == "emma" },
        Query(name: "like", format: "title LIKE 'L?m*'", arguments: []) { $0.title.hasPrefix("L") && $0.title.dropFirst(2).hasPrefix("m") },
        Query(name: "matches", format: "title MATCHES '[A-Z][a-z]+'", arguments: []) { $0.title.range(of: "^[A-Z][a-z]+$", options: .regularExpression) != nil },
        Query(name: "to-many count", format: "authors.@count >= 2", arguments: []) { $0.authors.count >= 2 },
        Query(name: "empty to-many", format: "authors.@count == 0", arguments: []) { $0.authors.isEmpty },
        Query(name: "any", format: "ANY authors.name == 'Keats'", arguments: []) { $0.authors.contains { $0.name == "Keats" } },
        Query(name: "all (true when empty)", format: "ALL authors.name == 'Byron'", arguments: []) { $0.authors.allSatisfy { $0.name == "Byron" } },
        Query(name: "none (true when empty)", format: "NONE authors.name == 'Byron'", arguments: []) { !$0.authors.contains { $0.name == "Byron" } },
        Query(name: "two steps", format: "ANY shelf.books.pages > 500", arguments: []) { $0.shelf?.books.contains { $0.pages > 500 } ?? false },
        Query(name: "constant first", format: "300 < pages", arguments: []) { $0.pages > 300 },
        Query(name: "constant first, count", format: "2 <= authors.@count", arguments: []) { $0.authors.count >= 2 },
        Query(name: "constant first, any", format: "ANY 'Keats' == authors.name", arguments: []) { $0.authors.contains { $0.name == "Keats" } },
    ]

    static func objects(_ context: NSManagedObjectContext, _ request: NSFetchRequest<Book>) throws -> [String] {
        try context.performAndWait { try context.fetch(request).map(\.title).sorted() }
    }

    static func truth(_ context: NSManagedObjectContext, _ test: @Sendable (Book) -> Bool) throws -> [String] {
        try context.performAndWait { try context.fetch(Book.fetchRequest()).filter(test).map(\.title).sorted() }
    }

    @Test(arguments: queries, [false, true])
    func aFormatPredicateReturnsWhatEveryObjectSays(query: Query, onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = onFile ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
        try Self.seed(container.newBackgroundContext())
        let context = container.newBackgroundContext()
        let request = Book.fetchRequest()
        request.predicate = NSPredicate(format: query.format, argumentArray: query.arguments)
        let entity = try #require(container.managedObjectModel.entitiesByName["Book"])
        #expect(request.filter?.storeFilter(for: entity) != nil, "the store runs it")
        let expected = try Self.truth(context, query.truth)
        #expect(try Self.objects(context, request) == expected)
        #expect(try context.performAndWait { try context.count(for: request) } == expected.count)
        if onFile { try FSSupport.close(container) }
    }

    /// The same shapes written with `#Predicate`: translated for the store, and equal to the
    /// format strings' results.
    @Test(arguments: [false, true])
    func foundationPredicatesRunInTheStoreToo(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = onFile ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
        try Self.seed(container.newBackgroundContext())
        let context = container.newBackgroundContext()
        let entity = try #require(container.managedObjectModel.entitiesByName["Book"])
        let listed: [Int64] = [120, 730]
        let pairs: [(Predicate<Book>, String)] = [
            (#Predicate<Book> { $0.shelf?.name == "Poetry" }, "shelf.name == 'Poetry'"),
            (#Predicate<Book> { $0.shelf == nil }, "shelf == nil"),
            (#Predicate<Book> { $0.pages < 200 || $0.pages > 600 }, "pages < 200 OR pages > 600"),
            (#Predicate<Book> { !($0.pages > 300) }, "NOT pages > 300"),
            (#Predicate<Book> { listed.contains($0.pages) }, "pages IN {120, 730}"),
            (#Predicate<Book> { $0.title.starts(with: "L") }, "title BEGINSWITH 'L'"),
            (#Predicate<Book> { $0.title.localizedLowercase.contains("em") }, "title CONTAINS[c] 'em'"),
            (#Predicate<Book> { $0.authors.count >= 2 }, "authors.@count >= 2"),
            (#Predicate<Book> { $0.authors.isEmpty }, "authors.@count == 0"),
            (#Predicate<Book> { $0.authors.contains { $0.name == "Keats" } }, "ANY authors.name == 'Keats'"),
            (#Predicate<Book> { $0.authors.allSatisfy { $0.name == "Byron" } }, "ALL authors.name == 'Byron'"),
        ]
        for (typed, format) in pairs {
            let a = Book.fetchRequest()
            a.predicate = typed
            #expect(a.filter?.storeFilter(for: entity) != nil, "\(format)")
            let b = Book.fetchRequest()
            b.predicate = NSPredicate(format: format)
            #expect(try Self.objects(context, a) == Self.objects(context, b), "\(format)")
            #expect(try Self.objects(context, a) == Self.truth(context) { (try? typed.evaluate($0)) ?? false }, "\(format)")
        }
        if onFile { try FSSupport.close(container) }
    }

    /// A predicate through a relationship sees unsaved changes of the related objects: a
    /// renamed shelf changes which books match, though no book changed.
    @Test func unsavedChangesOfRelatedObjectsCount() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        try Self.seed(container.newBackgroundContext())
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let prose = try #require(try context.fetch(Shelf.fetchRequest()).first { $0.name == "Prose" })
            prose.name = "Poetry"
            let request = Book.fetchRequest()
            request.predicate = NSPredicate(format: "shelf.name == 'Poetry'")
            #expect(try context.fetch(request).map(\.title).sorted() == ["Don Juan", "Endymion", "Lamia", "emma"])
            #expect(try context.count(for: request) == 4)
            request.includesPendingChanges = false
            #expect(try context.fetch(request).count == 3)
        }
        try FSSupport.close(container)
    }

    /// No ordering holds for nil, in the store as on objects: a book without a date is not
    /// "published before" anything.
    @Test(arguments: [false, true])
    func orderingNeverMatchesNil(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = onFile ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
        try Self.seed(container.newBackgroundContext())
        let context = container.newBackgroundContext()
        let cut = Date(timeIntervalSince1970: 1_000_000)
        try context.performAndWait {
            let lamia = try #require(try context.fetch(Book.fetchRequest()).first { $0.title == "Lamia" })
            lamia.published = Date(timeIntervalSince1970: 0)
            try context.save()
            let request = Book.fetchRequest()
            request.predicate = NSPredicate(format: "published < %@", argumentArray: [cut])
            #expect(try context.fetch(request).map(\.title) == ["Lamia"])
            request.predicate = NSPredicate(format: "published != %@", argumentArray: [cut])
            #expect(try context.count(for: request) == 5, "nil differs from every date")
            let inserted = Book(context: context)
            inserted.title = "Unsaved"
            request.predicate = NSPredicate(format: "published < %@", argumentArray: [cut])
            #expect(try context.fetch(request).map(\.title) == ["Lamia"], "judged on the object the same way")
        }
        if onFile { try FSSupport.close(container) }
    }

    /// A case-insensitive `contains` of an ASCII pattern is searched in a stored ASCII string's
    /// bytes; any other string the general way, with Unicode case folding.
    @Test func caseInsensitiveContainsOnBytesAndOnStrings() {
        let test = PreparedText(StoreTextTest(.contains, "mile", caseInsensitive: true))
        func bytes(_ s: String) -> Bool? { Array(s.utf8).withUnsafeBytes { test.matches(utf8: $0) } }
        #expect(bytes("SMILE") == true)
        #expect(bytes("smil") == false)
        #expect(bytes("Émile") == nil, "not ASCII: left to the general search")
        #expect(test.matches("ÉMILE") == true)
        let kelvin = PreparedText(StoreTextTest(.contains, "k", caseInsensitive: true))
        #expect(kelvin.matches("\u{212A}elvin") == true, "the Kelvin sign folds to k")
    }

    @Test func aFormatThatDoesNotParseFailsTheFetchWithItsColumn() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let request = Book.fetchRequest()
        request.predicate = NSPredicate(format: "pages > ")
        let error = #expect(throws: PredicateFormatError.self) { try context.performAndWait { _ = try context.fetch(request) } }
        #expect(error?.column == 9)
    }

    @Test func anUnknownKeyFailsTheFetchNamingTheEntity() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let request = Book.fetchRequest()
        request.predicate = NSPredicate(format: "shelf.nmae == 'x'")
        let error = #expect(throws: PredicateFormatError.self) { try context.performAndWait { _ = try context.count(for: request) } }
        #expect(error?.entityName == "Shelf")
        #expect(error?.column == 7)
    }
}

/// `fetchPlan(for:)` tells where a fetch's predicate runs, which index the store reads and
/// who sorts.
@Suite("Fetch plans") struct FetchPlanTests {
    @Test func thePlanNamesTheIndexThePredicatePlaceAndTheSort() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        try StorePredicateTests.seed(container.newBackgroundContext())
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let indexed = Book.fetchRequest()
            indexed.predicate = NSPredicate(format: "pages >= 300 AND pages <= 600 AND title BEGINSWITH 'E'")
            indexed.sortKeys = [SortKey("title")]
            indexed.fetchLimit = 1
            let plan = try context.fetchPlan(for: indexed)
            #expect(plan == FetchPlan(filtering: .store, index: "Book.pages", storeSortsAndCuts: true))
            #expect(plan.description == "predicate in the store, index on Book.pages, sorted and cut in the store")
            #expect(try context.fetch(indexed).map(\.title) == ["Endymion"])

            let scan = Book.fetchRequest()
            scan.predicate = NSPredicate(format: "shelf.name == 'Poetry'")
            #expect(try context.fetchPlan(for: scan) == FetchPlan(filtering: .store, index: nil, storeSortsAndCuts: false))

            let inMemory = Book.fetchRequest()
            inMemory.predicate = NSPredicate(format: "SUBQUERY(authors, $a, $a.name == 'Keats').@count > 0")
            #expect(try context.fetchPlan(for: inMemory).filtering == .objects)
            #expect(try context.fetch(inMemory).map(\.title).sorted() == ["Endymion", "Lamia"])

            // Unsaved changes of books: the context sorts, and sees them.
            let first = try #require(try context.fetch(Book.fetchRequest()).first { $0.title == "Lamia" })
            first.title = "Alastor"
            #expect(try context.fetchPlan(for: indexed).storeSortsAndCuts == false)
        }
        try FSSupport.close(container)
    }
}
