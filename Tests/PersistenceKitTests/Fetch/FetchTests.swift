import Foundation
import Testing
@testable import PersistenceKit

/// Saves books (title, pages) and returns nothing; every test reads them back its own way.
private func seedBooks(_ container: NSPersistentContainer, _ books: [(String, Int64)]) async throws {
    let ctx = container.newBackgroundContext()
    let list = books.map { BookSeed(title: $0.0, pages: $0.1) }
    try await ctx.perform {
        for s in list {
            let b = Book(context: ctx)
            b.title = s.title
            b.pages = s.pages
        }
        try ctx.save()
    }
}

private struct BookSeed: Sendable {
    let title: String
    let pages: Int64
}

private let standardBooks: [(String, Int64)] = [
    ("Emma", 474), ("Beloved", 324), ("Dune", 412), ("Ulysses", 730), ("Carrie", 199),
]

/// Predicates, sort keys, windows and result types of a fetch request, and how pending
/// changes of the context are matched.
@Suite("Fetch requests") struct FetchTests {
    /// An object another context changed, not merged here, is judged by its saved row on
    /// both paths, as the store judges it, in fetches and counts alike.
    @Test(arguments: [false, true]) func anUnmergedObjectIsJudgedByItsSavedRow(file: Bool) throws {
        let folder = try TemporaryFolder()
        let coordinator = try PredicateFixtures.coordinator(fileAt: file ? folder.storeURL : nil)
        let a = PredicateFixtures.context(coordinator)
        let b = PredicateFixtures.context(coordinator)
        let id = try a.performAndWait {
            let n = PredicateNode(context: a)
            n.name = "n"
            n.rank = 1
            try a.save()
            return n.objectID
        }
        try b.performAndWait { () throws in
            try #require(try b.existingObject(with: id) as? PredicateNode).rank = 2
            try b.save()
        }
        try a.performAndWait { () throws in
            #expect(try PredicateFixtures.names(a, #Predicate<PredicateNode> { $0.rank == 2 }) == ["n"])
            #expect(try PredicateFixtures.names(a, #Predicate<PredicateNode> { $0.rank == 2 || $0.rank == 2 }) == ["n"])
            let request = PredicateNode.fetchRequest()
            request.predicate = #Predicate<PredicateNode> { $0.rank == 2 || $0.rank == 2 }
            #expect(try a.count(for: request) == 1)
        }
    }

    /// An object another context changed, not merged here, sorts by its saved row, as the
    /// store's ORDER BY would, so a limit takes the right page: with no predicate, with one
    /// the store runs, and with one that runs in memory. The object keeps its older values
    /// (Core Data returns registered objects as they are).
    @Test(arguments: [false, true], [0, 1, 2]) func anUnmergedObjectSortsByItsSavedRow(file: Bool, predicate: Int) throws {
        let folder = try TemporaryFolder()
        let coordinator = try PredicateFixtures.coordinator(fileAt: file ? folder.storeURL : nil)
        let a = PredicateFixtures.context(coordinator)
        let b = PredicateFixtures.context(coordinator)
        let firstID = try a.performAndWait {
            let nodes = (0..<3).map { i in
                let n = PredicateNode(context: a)
                n.name = "n\(i)"
                n.rank = Int64(i * 10)
                return n
            }
            try a.save()
            return nodes[0].objectID
        }
        try b.performAndWait { () throws in
            try #require(try b.existingObject(with: firstID) as? PredicateNode).rank = 100
            try b.save()
        }
        try a.performAndWait { () throws in
            #expect(!a.hasChanges)
            let request = PredicateNode.fetchRequest()
            switch predicate {
            case 1: request.predicate = #Predicate<PredicateNode> { $0.rank >= 0 }
            case 2: request.predicate = #Predicate<PredicateNode> { $0.rank >= 0 || $0.name == "none" }
            default: break
            }
            request.sortKeys = [SortKey("rank")]
            #expect(try a.fetch(request).map(\.name) == ["n1", "n2", "n0"])
            request.fetchLimit = 1
            let first = try a.fetch(request)
            #expect(first.map(\.name) == ["n1"])
            let stale = try #require(a.registeredObject(for: firstID) as? PredicateNode)
            #expect(stale.rank == 0)
        }
    }

    /// `entityName` of a request made from a class is the class's name, made on first read;
    /// a name set by hand (nil included) is kept.
    @Test func entityNameOfAClassRequest() {
        #expect(Book.fetchRequest().entityName == "Book")
        let request = Book.fetchRequest()
        request.entityName = nil
        #expect(request.entityName == nil)
        request.entityName = "Shelf"
        #expect(request.entityName == "Shelf")
        #expect(NSFetchRequest<NSManagedObject>().entityName == nil)
        #expect(NSFetchRequest<NSManagedObject>(entityName: "Author").entityName == "Author")
    }

    /// `shouldRefreshRefetchedObjects`: a loaded object fetched again takes the values another
    /// context saved since, keeping its own unsaved changes; without it, it keeps its values.
    @Test(arguments: [false, true])
    func refetchedObjectsRefreshOnlyWhenAsked(refresh: Bool) throws {
        let container = try Fixtures.container()
        let reader = container.newBackgroundContext()
        let writer = container.newBackgroundContext()
        let id = try writer.performAndWait {
            let b = Book(context: writer)
            b.title = "old"
            b.pages = 1
            try writer.save()
            return b.objectID
        }
        reader.performAndWait {
            let b = reader.object(with: id) as? Book
            #expect(b?.title == "old")
            b?.pages = 2  // an unsaved change of the reader's
        }
        try writer.performAndWait {
            (writer.object(with: id) as? Book)?.title = "new"
            try writer.save()
        }
        let (title, pages) = try reader.performAndWait {
            let request = Book.fetchRequest()
            request.shouldRefreshRefetchedObjects = refresh
            let b = try #require(try reader.fetch(request).first)
            return (b.title, b.pages)
        }
        #expect(title == (refresh ? "new" : "old"))
        #expect(pages == 2, "the unsaved change is kept either way")
    }

    @Test func predicateFiltersObjects() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let titles: [String] = try await ctx.perform {
            let r = Book.fetchRequest()
            r.predicate = #Predicate<Book> { $0.pages > 400 && $0.title != "Ulysses" }
            return try ctx.fetch(r).map(\.title).sorted()
        }
        #expect(titles == ["Dune", "Emma"])
    }

    @Test func nsSortDescriptorKeyPath() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let (asc, desc): ([String], [Int64]) = try await ctx.perform {
            let r = Book.fetchRequest()
            r.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: true)]
            let asc = try ctx.fetch(r).map(\.title)
            let r2 = Book.fetchRequest()
            r2.sortDescriptors = [NSSortDescriptor(keyPath: \Book.pages, ascending: false)]
            return (asc, try ctx.fetch(r2).map(\.pages))
        }
        #expect(asc == ["Beloved", "Carrie", "Dune", "Emma", "Ulysses"])
        #expect(desc == [730, 474, 412, 324, 199])
    }

    @Test func sortKeysDescending() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let titles: [String] = try await ctx.perform {
            let r = Book.fetchRequest()
            r.sortKeys = [SortKey("title", ascending: false)]
            #expect(r.sortKeys == [SortKey("title", ascending: false)])
            return try ctx.fetch(r).map(\.title)
        }
        #expect(titles == ["Ulysses", "Emma", "Dune", "Carrie", "Beloved"])
    }

    /// Core Data's SQLite store sorts strings with `caseInsensitiveCompare:`,
    /// `localizedStandardCompare:` and the other string selectors; `SortKey` offers them.
    @Test func sortKeysCompareStringsAsAsked() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, [("item10", 1), ("Item1", 2), ("item2", 3), ("b", 4), ("A", 5), ("f", 6), ("\u{E9}", 7)])
        let ctx = container.newBackgroundContext()
        let sorted: [SortKey.StringComparison: [String]] = try await ctx.perform {
            var result: [SortKey.StringComparison: [String]] = [:]
            for comparison in [SortKey.StringComparison.plain, .caseInsensitive, .localized, .localizedCaseInsensitive, .localizedStandard] {
                let r = Book.fetchRequest()
                r.sortKeys = [SortKey("title", comparison: comparison)]
                result[comparison] = try ctx.fetch(r).map(\.title)
            }
            return result
        }
        // Swift's String order: capitals first, digits by character, "é" after every ASCII letter.
        #expect(sorted[.plain] == ["A", "Item1", "b", "f", "item10", "item2", "\u{E9}"])
        #expect(sorted[.caseInsensitive]?.prefix(2) == ["A", "b"])
        #expect(sorted[.caseInsensitive]?.firstIndex(of: "Item1") ?? 0 < sorted[.caseInsensitive]?.firstIndex(of: "item10") ?? 0)
        // Localized: "é" sorts with "e", before "f".
        for comparison in [SortKey.StringComparison.localized, .localizedCaseInsensitive, .localizedStandard] {
            let titles = try #require(sorted[comparison])
            #expect(try #require(titles.firstIndex(of: "\u{E9}")) < (try #require(titles.firstIndex(of: "f"))), "\(comparison)")
        }
        // Numbers by value.
        #expect(sorted[.localizedStandard] == ["A", "b", "\u{E9}", "f", "Item1", "item2", "item10"])
    }

    @Test func sortKeysWithTieBreaker() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, [("b", 2), ("a", 1), ("c", 2), ("d", 1)])
        let ctx = container.newBackgroundContext()
        let titles: [String] = try await ctx.perform {
            let r = Book.fetchRequest()
            r.sortKeys = [SortKey("pages", ascending: false), SortKey("title")]
            return try ctx.fetch(r).map(\.title)
        }
        #expect(titles == ["b", "c", "a", "d"])
    }

    @Test func foundationSortDescriptor() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let (asc, desc): ([String], [String]) = try await ctx.perform {
            let r = Book.fetchRequest()
            r.sortBy([SortDescriptor(\Book.title)])
            let asc = try ctx.fetch(r).map(\.title)
            let r2 = Book.fetchRequest()
            r2.sortBy([SortDescriptor(\Book.pages, order: .reverse)])
            return (asc, try ctx.fetch(r2).map(\.title))
        }
        #expect(asc == ["Beloved", "Carrie", "Dune", "Emma", "Ulysses"])
        #expect(desc == ["Ulysses", "Emma", "Dune", "Beloved", "Carrie"])
    }

    @Test func fetchLimitAndOffset() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let (limited, page, pastEnd, countLimited): ([String], [String], [String], Int) = try await ctx.perform {
            let r = Book.fetchRequest()
            r.sortKeys = [SortKey("title")]
            r.fetchLimit = 2
            let limited = try ctx.fetch(r).map(\.title)
            r.fetchOffset = 2
            let page = try ctx.fetch(r).map(\.title)
            let r3 = Book.fetchRequest()
            r3.sortKeys = [SortKey("title")]
            r3.fetchOffset = 4
            let pastEnd = try ctx.fetch(r3).map(\.title)
            let countReq = Book.fetchRequest()
            countReq.fetchOffset = 1
            countReq.fetchLimit = 3
            return (limited, page, pastEnd, try ctx.count(for: countReq))
        }
        #expect(limited == ["Beloved", "Carrie"])
        #expect(page == ["Dune", "Emma"])
        #expect(pastEnd == ["Ulysses"])
        #expect(countLimited == 3)
    }

    @Test func objectIDResultType() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let ids: [NSManagedObjectID] = try await ctx.perform {
            let r = NSFetchRequest<NSManagedObjectID>(entityName: "Book")
            r.resultType = .managedObjectIDResultType
            r.setPredicate(#Predicate<Book> { $0.pages < 400 })
            return try ctx.fetch(r)
        }
        #expect(ids.count == 2)
        #expect(ids.allSatisfy { !$0.isTemporaryID && $0.entity.name == "Book" })
        let other = container.newBackgroundContext()
        let titles: [String] = try await other.perform {
            try ids.map { try #require(try other.existingObject(with: $0) as? Book).title }.sorted()
        }
        #expect(titles == ["Beloved", "Carrie"])
    }

    @Test func countResultType() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let (all, filtered): (Int, Int) = try await ctx.perform {
            let r = NSFetchRequest<NSNumber>(entityName: "Book")
            r.resultType = .countResultType
            let all = try ctx.fetch(r)
            #expect(all.count == 1)
            r.setPredicate(#Predicate<Book> { $0.pages >= 412 })
            let filtered = try ctx.fetch(r)
            return (all.first?.intValue ?? -1, filtered.first?.intValue ?? -1)
        }
        #expect(all == 5)
        #expect(filtered == 3)
    }

    /// The classic untyped form: `NSFetchRequest<NSFetchRequestResult>(entityName:)`, its
    /// results cast to the class, counted, or asked for as object IDs.
    @Test func untypedRequestsOfNSFetchRequestResult() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let request: NSFetchRequest<NSFetchRequestResult> = NSFetchRequest(entityName: "Book")
            request.setPredicate(#Predicate<Book> { $0.pages > 400 })
            request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.pages, ascending: true)]
            let books = try #require(try ctx.fetch(request) as? [Book])
            #expect(books.map(\.title) == ["Dune", "Emma", "Ulysses"])
            #expect(try ctx.count(for: request) == 3)
            request.resultType = .managedObjectIDResultType
            let ids = try #require(try ctx.fetch(request) as? [NSManagedObjectID])
            #expect(ids == books.map(\.objectID))
            request.resultType = .countResultType
            #expect((try ctx.fetch(request).first as? NSNumber)?.intValue == 3)
        }
    }

    /// Without entity inheritance, leaving out sub-entities leaves out nothing.
    @Test func includesSubentitiesChangesNothingWithoutInheritance() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        try await ctx.perform { () throws in
            let request = Book.fetchRequest()
            #expect(request.includesSubentities)
            request.includesSubentities = false
            #expect(try ctx.fetch(request).count == 5)
            #expect(try ctx.count(for: request) == 5)
        }
    }

    @Test func countForRequest() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        let (all, filtered, shelves): (Int, Int, Int) = try await ctx.perform {
            let r = Book.fetchRequest()
            r.predicate = #Predicate<Book> { $0.title.starts(with: "E") || $0.pages < 200 }
            return (
                try ctx.count(for: Book.fetchRequest()), try ctx.count(for: r),
                try ctx.count(for: Shelf.fetchRequest())
            )
        }
        #expect(all == 5)
        #expect(filtered == 2)  // Emma, Carrie
        #expect(shelves == 0)
    }

    @Test func unknownEntityNameThrows() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        await ctx.perform {
            let r = NSFetchRequest<NSManagedObject>(entityName: "Magazine")
            let error = #expect(throws: CoreDataError.self) { try ctx.fetch(r) }
            #expect(error?.code == .coreData)
            #expect(error?.description.contains("Magazine") == true)
            let countError = #expect(throws: CoreDataError.self) { try ctx.count(for: r) }
            #expect(countError?.code == .coreData)
        }
    }

    @Test func fetchByEntityNameReturnsSubclassInstances() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, [("One", 1)])
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let r = NSFetchRequest<NSManagedObject>(entityName: "Book")
            let objects = try ctx.fetch(r)
            #expect(objects.count == 1)
            #expect(objects.first is Book)
            #expect(objects.first?.value(forKey: "title") as? String == "One")
        }
    }

    @Test func fetchedObjectsAreFaultsUntilAccessed() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let books = try ctx.fetch(Book.fetchRequest())
            #expect(books.count == 5)
            let allFaults = books.allSatisfy { $0.isFault }
            #expect(allFaults)
            let first = try #require(books.first)
            _ = first.title
            #expect(!first.isFault)
            let restFaults = books.dropFirst().allSatisfy { $0.isFault }
            #expect(restFaults)
        }
    }

    @Test func returnsObjectsAsFaultsFalseLoadsValues() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, standardBooks)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let r = Book.fetchRequest()
            r.returnsObjectsAsFaults = false
            let books = try ctx.fetch(r)
            #expect(books.count == 5)
            #expect(books.allSatisfy { !$0.isFault })
            #expect(Set(books.map(\.title)) == ["Emma", "Beloved", "Dune", "Ulysses", "Carrie"])
        }
    }

    @Test func sortingPutsNilFirstAscendingAndLastDescending() async throws {
        let container = try Fixtures.container()
        let seed = container.newBackgroundContext()
        try await seed.perform {
            for (title, day) in [("late", 3.0), ("none", nil), ("early", 1.0)] as [(String, Double?)] {
                let b = Book(context: seed)
                b.title = title
                b.published = day.map { Date(timeIntervalSince1970: $0 * 86_400) }
            }
            try seed.save()
        }
        let ctx = container.newBackgroundContext()
        let (bySortDescriptor, bySortDescriptorDesc, byKey, byKeyDesc): ([String], [String], [String], [String]) = try await ctx.perform {
            let r = Book.fetchRequest()
            r.sortBy([SortDescriptor(\Book.published)])
            let a = try ctx.fetch(r).map(\.title)
            r.sortBy([SortDescriptor(\Book.published, order: .reverse)])
            let b = try ctx.fetch(r).map(\.title)
            r.sortKeys = [SortKey("published")]
            let c = try ctx.fetch(r).map(\.title)
            r.sortKeys = [SortKey("published", ascending: false)]
            let d = try ctx.fetch(r).map(\.title)
            return (a, b, c, d)
        }
        #expect(byKey == ["none", "early", "late"])
        #expect(byKeyDesc == ["late", "early", "none"])
        #expect(bySortDescriptor == byKey)
        #expect(bySortDescriptorDesc == byKeyDesc)
    }

    @Test func predicateThroughToOneRelationship() async throws {
        let container = try Fixtures.container()
        let seed = container.newBackgroundContext()
        try await seed.perform {
            let fiction = Shelf(context: seed)
            fiction.name = "Fiction"
            let other = Shelf(context: seed)
            other.name = "Other"
            for (title, shelf) in [("F1", fiction), ("F2", fiction), ("O1", other)] {
                let b = Book(context: seed)
                b.title = title
                b.shelf = shelf
            }
            _ = Book(context: seed)  // no shelf
            try seed.save()
        }
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let r = Book.fetchRequest()
            r.predicate = #Predicate<Book> { $0.shelf?.name == "Fiction" }
            #expect(try ctx.fetch(r).map(\.title).sorted() == ["F1", "F2"])
            // A changed book is matched by its stored relationship when pending changes are excluded.
            let f1 = try #require(try ctx.fetch(r).first { $0.title == "F1" })
            f1.pages = 42
            r.includesPendingChanges = false
            #expect(try ctx.fetch(r).map(\.title).sorted() == ["F1", "F2"])
        }
    }

    // MARK: includesPendingChanges

    @Test func pendingInsertsMatchByDefault() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, [("Saved", 500)])
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let fresh = Book(context: ctx)
            fresh.title = "Unsaved"
            fresh.pages = 600
            let small = Book(context: ctx)
            small.title = "Small"
            small.pages = 10
            let r = Book.fetchRequest()
            r.predicate = #Predicate<Book> { $0.pages > 100 }
            r.sortKeys = [SortKey("title")]
            let found = try ctx.fetch(r)
            #expect(found.map(\.title) == ["Saved", "Unsaved"])
            #expect(found.last === fresh)
            #expect(try ctx.count(for: r) == 2)
            #expect(try ctx.count(for: Book.fetchRequest()) == 3)
        }
    }

    @Test func pendingDeletesAreExcludedByDefault() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, [("Keep", 1), ("Drop", 2)])
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let all = try ctx.fetch(Book.fetchRequest())
            let drop = try #require(all.first { $0.title == "Drop" })
            ctx.delete(drop)
            let after = try ctx.fetch(Book.fetchRequest())
            #expect(after.map(\.title) == ["Keep"])
            #expect(try ctx.count(for: Book.fetchRequest()) == 1)
        }
    }

    @Test func inMemoryChangesAreMatchedByDefault() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, [("Short", 50), ("Long", 900)])
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let all = try ctx.fetch(Book.fetchRequest())
            let short = try #require(all.first { $0.title == "Short" })
            let long = try #require(all.first { $0.title == "Long" })
            short.pages = 1000
            long.pages = 1
            let r = Book.fetchRequest()
            r.predicate = #Predicate<Book> { $0.pages > 100 }
            let found = try ctx.fetch(r)
            #expect(found.count == 1)
            #expect(found.first === short)
        }
    }

    @Test func includesPendingChangesFalseSeesStoreStateOnly() async throws {
        let container = try Fixtures.container()
        try await seedBooks(container, [("Short", 50), ("Long", 900), ("Gone", 700)])
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let all = try ctx.fetch(Book.fetchRequest())
            let short = try #require(all.first { $0.title == "Short" })
            let long = try #require(all.first { $0.title == "Long" })
            let gone = try #require(all.first { $0.title == "Gone" })
            short.pages = 1000
            long.pages = 1
            ctx.delete(gone)
            let fresh = Book(context: ctx)
            fresh.title = "Fresh"
            fresh.pages = 5000

            let r = Book.fetchRequest()
            r.includesPendingChanges = false
            r.predicate = #Predicate<Book> { $0.pages > 100 }
            let found = Set(try ctx.fetch(r).map(ObjectIdentifier.init))
            // Store state: Long (900) and Gone (700) match; Short (50) does not; Fresh is not saved.
            #expect(found == Set([long, gone].map(ObjectIdentifier.init)))
            let everything = NSFetchRequest<NSManagedObject>(entityName: "Book")
            everything.includesPendingChanges = false
            #expect(try ctx.fetch(everything).count == 3)
            #expect(try ctx.count(for: everything) == 3)
            // The in-memory values are untouched by such a fetch.
            #expect(short.pages == 1000)
            #expect(long.pages == 1)
            #expect(fresh.isInserted)
            #expect(gone.isDeleted)
        }
    }

    /// With `includesPendingChanges = false` the sort (and so a limit) uses saved values, as
    /// the predicate does, not unsaved ones.
    @Test func withoutPendingChangesSortingUsesSavedValues() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (title, pages) in [("a", 10), ("b", 20), ("c", 25)] as [(String, Int64)] {
                let book = Book(context: context)
                book.title = title
                book.pages = pages
            }
            try context.save()
            let a = try #require(try context.fetch(Book.fetchRequest()).first { $0.title == "a" })
            a.pages = 30  // unsaved
            let request = Book.fetchRequest()
            request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.pages, ascending: true)]
            request.includesPendingChanges = false
            #expect(try context.fetch(request).map(\.title) == ["a", "b", "c"])
            request.fetchLimit = 1
            #expect(try context.fetch(request).map(\.title) == ["a"])
            request.includesPendingChanges = true
            #expect(try context.fetch(request).map(\.title) == ["b"])
            #expect(a.pages == 30, "the unsaved value is kept")
        }
    }

    /// An object changed here but deleted by another context (not merged yet) matches no
    /// fetch: not a predicate the store runs, nor an unfiltered fetch or one run in memory.
    @Test func aChangedObjectWhoseRowIsGoneMatchesNoFetch() throws {
        let container = try Fixtures.container()
        let mine = container.newBackgroundContext()
        let id = try mine.performAndWait {
            let book = Book(context: mine)
            book.pages = 1
            try mine.save()
            book.title = "changed here"  // unsaved
            return book.objectID
        }
        let theirs = container.newBackgroundContext()
        try theirs.performAndWait {
            theirs.delete(theirs.object(with: id))
            try theirs.save()
        }
        try mine.performAndWait { () throws in
            let request = Book.fetchRequest()
            #expect(try mine.fetch(request).isEmpty)
            request.predicate = #Predicate<Book> { $0.pages == 1 }  // run by the store
            #expect(try mine.fetch(request).isEmpty)
            request.predicate = #Predicate<Book> { $0.pages == 1 || $0.pages == -1 }  // run in memory
            #expect(try mine.fetch(request).isEmpty)
        }
    }

    // MARK: An unknown sort key

    /// An unknown sort key traps only when two objects are compared: with zero or one
    /// matching row the same request succeeds, so the bug surfaces only once data grows.
    @Test func anUnknownSortKeyTrapsWhateverTheNumberOfRows() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).title = "only one"
                try context.save()
                let request = Book.fetchRequest()
                request.sortKeys = [SortKey("rating")]
                _ = try context.fetch(request)
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("rating"), "stderr: \(text)")
    }

    /// A predicate over a class the entity's objects are not could match nothing: the fetch
    /// and the count say so instead of answering "none".
    @Test func aPredicateOverAnotherClassIsATypedError() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            Book(context: context).title = "kept"
            try context.save()
            let request = NSFetchRequest<NSManagedObject>(entityName: "Book")
            request.setPredicate(#Predicate<Author> { $0.name == "x" })
            let fetchError = #expect(throws: CoreDataError.self) { _ = try context.fetch(request) }
            #expect(fetchError?.message.contains("Author") == true)
            #expect(fetchError?.message.contains("'Book'") == true)
            #expect(throws: CoreDataError.self) { _ = try context.count(for: request) }
            request.setPredicate(#Predicate<Book> { $0.title == "kept" })
            #expect(try context.fetch(request).count == 1)
        }
    }
}

/// `NSManagedObjectContext.typed(_:as:)`: the fetch result cast that skips per-element casts
/// must give exactly what `as? [T]` gives.
@Suite("Typed fetch result cast") struct FetchResultCastTests {
    @Test func typedMatchesConditionalCast() throws {
        let model = try Fixtures.model()
        let bookEntity = try #require(model.entitiesByName["Book"])
        let books: [NSManagedObject] = [Book(entity: bookEntity, insertInto: nil), Book(entity: bookEntity, insertInto: nil)]
        let mixed: [NSManagedObject] = books + [NSManagedObject(entity: bookEntity, insertInto: nil)]
        // Class types through the fast path, and a protocol type through the plain cast.
        #expect(NSManagedObjectContext.typed(books, as: Book.self)?.map(ObjectIdentifier.init) == books.map(ObjectIdentifier.init))
        #expect(NSManagedObjectContext.typed(books, as: NSManagedObject.self)?.count == 2)
        let existentials = try #require(NSManagedObjectContext.typed(books, as: (any NSFetchRequestResult).self))
        #expect(existentials.map { ObjectIdentifier($0) } == books.map(ObjectIdentifier.init))
        #expect(NSManagedObjectContext.typed(books, as: Shelf.self) == nil)
        // One object of another class: no reinterpretation, the cast decides.
        #expect(NSManagedObjectContext.typed(mixed, as: Book.self) == nil)
        #expect(NSManagedObjectContext.typed(mixed, as: NSManagedObject.self)?.count == 3)
        #expect(NSManagedObjectContext.typed([], as: Book.self)?.isEmpty == true)
    }
}
