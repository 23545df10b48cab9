import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    /// Saves the library and, for the string operators, three more books on no shelf:
    /// "Café Society" (300 pages, published), "the cafe" (120) and "CAFÉ" (0).
    static func seedFetchLibrary(_ container: NSPersistentContainer) async throws {
        try await seedLibrary(container)
        try await inContext(container) { context in
            for (title, pages) in [("Café Society", 300), ("the cafe", 120), ("CAFÉ", 0)] {
                let book = SBBook(context: context)
                book.title = title
                book.pages = Int64(pages)
                if pages == 300 { book.published = Date(timeIntervalSinceReferenceDate: 0) }
            }
            try context.save()
        }
    }

    /// The titles of the books `predicate` selects in `context`, sorted.
    static func titles(_ context: NSManagedObjectContext, _ predicate: NSPredicate?) throws -> [String] {
        let request = NSFetchRequest<SBBook>(entityName: "SBBook")
        request.predicate = predicate
        return try context.fetch(request).map(\.title).sorted()
    }

    static func predicates(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            try await seedFetchLibrary(try await checked.open())
            let results = try await inContext(try await checked.reopen()) { context in
                // Built here: `NSPredicate` and its arguments are not sendable.
                try predicateCases().map { format, arguments, expected in
                    (format, try titles(context, NSPredicate(format: format, argumentArray: arguments)), expected)
                }
            }
            for (format, found, expected) in results {
                #expect(found == expected, "\(format)")
            }
            // An object as the argument.
            let onFiction = try await inContext(try await checked.reopen()) { context in
                let fiction = try #require(try all(SBShelf.self, in: context).first { $0.name == "Fiction" })
                return try titles(context, NSPredicate(format: "shelf == %@", fiction))
            }
            #expect(onFiction == ["Dune", "Emma"])
        }
    }

    /// Predicates (format and arguments) and the titles each selects from `seedFetchLibrary`.
    static func predicateCases() -> [(String, [Any], [String])] {
        [
            ("pages == 400", [], ["Emma"]),
            ("pages != 400", [], ["CAFÉ", "Café Society", "Dune", "Odes", "the cafe"]),
            ("pages > %d AND pages <= %d", [120, 600], ["Café Society", "Dune", "Emma"]),
            ("pages < 100", [], ["CAFÉ", "Odes"]),
            ("pages BETWEEN {90, 300}", [], ["Café Society", "Odes", "the cafe"]),
            ("title == %@", ["Dune"], ["Dune"]),
            ("title ==[c] %@", ["dune"], ["Dune"]),
            ("title BEGINSWITH %@", ["Caf"], ["Café Society"]),
            ("title BEGINSWITH[c] %@", ["caf"], ["CAFÉ", "Café Society"]),
            ("title CONTAINS[cd] %@", ["cafe"], ["CAFÉ", "Café Society", "the cafe"]),
            ("title CONTAINS %@", ["afe"], ["the cafe"]),
            ("title ENDSWITH[d] %@", ["cafe"], ["the cafe"]),
            ("title LIKE %@", ["?mma"], ["Emma"]),
            ("title LIKE[cd] %@", ["*cafe*"], ["CAFÉ", "Café Society", "the cafe"]),
            ("title IN %@", [["Dune", "Odes", "Missing"]], ["Dune", "Odes"]),
            ("pages IN %@", [[0, 90]], ["CAFÉ", "Odes"]),
            ("NOT (pages IN %@)", [[0, 90]], ["Café Society", "Dune", "Emma", "the cafe"]),
            ("published == nil AND shelf == nil", [], ["CAFÉ", "the cafe"]),
            ("published != nil", [], ["Café Society"]),
            ("shelf.name == %@", ["Fiction"], ["Dune", "Emma"]),
            ("shelf.name BEGINSWITH[c] %@", ["po"], ["Odes"]),
            ("ANY authors.name == %@", ["Bo"], ["Emma", "Odes"]),
            ("cover.color == %@ OR pages == 0", ["red"], ["CAFÉ", "Dune"]),
            ("authors.@count == 2", [], ["Emma"]),
        ]
    }

    static func sortingAndPaging(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            try await seedFetchLibrary(try await checked.open())
            try await inContext(try await checked.reopen()) { context throws in
                func fetch(_ sort: [NSSortDescriptor], offset: Int = 0, limit: Int = 0, _ format: String? = nil) throws -> [String] {
                    let request = NSFetchRequest<SBBook>(entityName: "SBBook")
                    request.sortDescriptors = sort
                    request.fetchOffset = offset
                    request.fetchLimit = limit
                    request.predicate = format.map { NSPredicate(format: $0) }
                    return try context.fetch(request).map(\.title)
                }
                let byPages = [NSSortDescriptor(key: "pages", ascending: false)]
                #expect(try fetch(byPages) == ["Dune", "Emma", "Café Society", "the cafe", "Odes", "CAFÉ"])
                #expect(try fetch(byPages, limit: 2) == ["Dune", "Emma"])
                #expect(try fetch(byPages, offset: 2, limit: 3) == ["Café Society", "the cafe", "Odes"])
                #expect(try fetch(byPages, offset: 5, limit: 3) == ["CAFÉ"])
                #expect(try fetch(byPages, offset: 9) == [])
                #expect(try fetch(byPages, offset: 1, limit: 2, "pages < 500") == ["Café Society", "the cafe"])
                // Ties broken by a second key; nil sorts first ascending.
                let byShelfThenTitle = [NSSortDescriptor(key: "shelf.name", ascending: true), NSSortDescriptor(key: "title", ascending: false)]
                #expect(try fetch(byShelfThenTitle) == ["the cafe", "Café Society", "CAFÉ", "Emma", "Dune", "Odes"])
                let byPublished = [NSSortDescriptor(key: "published", ascending: true), NSSortDescriptor(key: "title", ascending: true)]
                #expect(try fetch(byPublished, limit: 2) == ["CAFÉ", "Dune"])
                #expect(try fetch(byPublished).last == "Café Society")
                // Case-insensitive string sorting: "the cafe" between the two "Café"s and "Dune".
                let caseless = NSFetchRequest<SBBook>(entityName: "SBBook")
                caseless.sortKeys = [SortKey("title", comparison: .caseInsensitive)]
                caseless.predicate = NSPredicate(format: "pages >= 120")
                #expect(try context.fetch(caseless).map(\.title) == ["Café Society", "Dune", "Emma", "the cafe"])

                // Counts, with and without a predicate, limit and offset.
                let count = NSFetchRequest<SBBook>(entityName: "SBBook")
                #expect(try context.count(for: count) == 6)
                count.predicate = NSPredicate(format: "title CONTAINS[cd] 'cafe'")
                #expect(try context.count(for: count) == 3)
                count.fetchLimit = 2
                #expect(try context.count(for: count) == 2)
                count.fetchLimit = 0
                count.fetchOffset = 2
                #expect(try context.count(for: count) == 1)
            }
        }
    }

    static func resultTypes(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            try await seedFetchLibrary(try await checked.open())
            try await inContext(try await checked.reopen()) { context in
                let ids = NSFetchRequest<NSManagedObjectID>(entityName: "SBBook")
                ids.resultType = .managedObjectIDResultType
                ids.predicate = NSPredicate(format: "shelf.name == 'Fiction'")
                ids.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
                let found = try context.fetch(ids)
                #expect(found.count == 2)
                #expect(try found.map { try #require(try context.existingObject(with: $0) as? SBBook).title } == ["Dune", "Emma"])

                let rows = NSFetchRequest<[String: Any]>(entityName: "SBBook")
                rows.resultType = .dictionaryResultType
                rows.propertiesToFetch = ["title", "pages"]
                rows.predicate = NSPredicate(format: "pages >= 300")
                rows.sortDescriptors = [NSSortDescriptor(key: "pages", ascending: true)]
                let dictionaries = try context.fetch(rows)
                #expect(dictionaries.map { "\($0["title"] as? String ?? "?"):\(($0["pages"] as? Int64) ?? (($0["pages"] as? NSNumber)?.int64Value ?? -1))" } == ["Café Society:300", "Emma:400", "Dune:600"])
                #expect(dictionaries.allSatisfy { $0.count == 2 })

                let counted = NSFetchRequest<NSNumber>(entityName: "SBBook")
                counted.resultType = .countResultType
                counted.predicate = NSPredicate(format: "pages > 100")
                #expect(try context.fetch(counted).map(\.intValue) == [4])
            }
        }
    }

    static func inheritance(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.zoo) { checked in
            try await inContext(try await checked.open()) { context in
                let animal = SBAnimal(context: context)
                animal.name = "Generic"
                animal.age = 7
                let rex = SBDog(context: context)
                rex.name = "Rex"
                rex.age = 5
                rex.breed = "collie"
                let bit = SBPuppy(context: context)
                bit.name = "Bit"
                bit.age = 1
                bit.toy = "ball"
                let tom = SBCat(context: context)
                tom.name = "Tom"
                tom.age = 3
                try context.save()
            }
            try await inContext(try await checked.reopen()) { context in
                func names(_ entity: String, _ format: String? = nil, subentities: Bool = true) throws -> [String] {
                    let request = NSFetchRequest<SBAnimal>(entityName: entity)
                    request.includesSubentities = subentities
                    request.predicate = format.map { NSPredicate(format: $0) }
                    request.sortDescriptors = [NSSortDescriptor(key: "age", ascending: true)]
                    return try context.fetch(request).map(\.name)
                }
                #expect(try names("SBAnimal") == ["Bit", "Tom", "Rex", "Generic"])
                #expect(try names("SBAnimal", subentities: false) == ["Generic"])
                #expect(try names("SBDog") == ["Bit", "Rex"])
                #expect(try names("SBDog", subentities: false) == ["Rex"])
                #expect(try names("SBAnimal", "age >= 3 AND age < 7") == ["Tom", "Rex"])
                #expect(try names("SBDog", "breed == 'collie'") == ["Rex"])
                // Each object comes back as its own class, with its own attributes.
                let all = try context.fetch(NSFetchRequest<SBAnimal>(entityName: "SBAnimal"))
                #expect(all.compactMap { ($0 as? SBPuppy)?.toy } == ["ball"])
                #expect(all.compactMap { ($0 as? SBCat)?.lives } == [9])
                #expect(all.filter { $0 is SBDog }.count == 2)

                let count = NSFetchRequest<SBAnimal>(entityName: "SBAnimal")
                #expect(try context.count(for: count) == 4)
                count.includesSubentities = false
                #expect(try context.count(for: count) == 1)
                let paged = NSFetchRequest<SBAnimal>(entityName: "SBAnimal")
                paged.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
                paged.fetchOffset = 1
                paged.fetchLimit = 2
                #expect(try context.fetch(paged).map(\.name) == ["Generic", "Rex"])
            }
        }
    }

    static func faultingAndPrefetching(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            try await seedLibrary(try await checked.open())
            let expected = ["Dune: Fiction [\"Ann\"] red", "Emma: Fiction [\"Ann\", \"Bo\"] -", "Odes: Poetry [\"Bo\"] blue"]
            try await inContext(try await checked.reopen()) { context throws in
                func describe(_ books: [SBBook]) -> [String] {
                    books.map { "\($0.title): \($0.shelf?.name ?? "-") \($0.authors.map(\.name).sorted()) \($0.cover?.color ?? "-")" }
                }
                // Each way of reading the same objects gives the same values: faults fired
                // one by one, full objects, batches of two, and relationships prefetched.
                for (faults, batch, prefetch) in [(true, 0, false), (false, 0, false), (true, 2, false), (false, 1, true), (true, 2, true)] {
                    context.reset()
                    let request = NSFetchRequest<SBBook>(entityName: "SBBook")
                    request.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
                    request.returnsObjectsAsFaults = faults
                    request.fetchBatchSize = batch
                    if prefetch { request.relationshipKeyPathsForPrefetching = ["shelf", "authors", "cover", "shelf.books"] }
                    let books = try context.fetch(request)
                    #expect(describe(books) == expected, "faults \(faults), batch size \(batch), prefetching \(prefetch)")
                }
                // To-many faults of objects read as faults.
                context.reset()
                let shelves = try all(SBShelf.self, in: context, sortedBy: "name")
                #expect(shelves.map { "\($0.name) \($0.books.map(\.title).sorted())" } == ["Fiction [\"Dune\", \"Emma\"]", "Poetry [\"Odes\"]"])
                // An object by ID, never fetched, is a fault that reads its row when touched.
                let id = try #require(shelves.first?.books.first { $0.title == "Dune" }?.objectID)
                context.reset()
                let dune = try #require(context.object(with: id) as? SBBook)
                #expect(dune.title == "Dune")
                #expect(dune.pages == 600)
            }
        }
    }
}
