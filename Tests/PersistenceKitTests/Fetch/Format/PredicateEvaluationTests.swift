import Foundation
import Testing
@testable import PersistenceKit

/// Format predicates evaluated on managed objects, with Core Data's in-memory semantics.
@Suite("Predicate format evaluation") struct PredicateEvaluationTests {
    /// Objects of a library: books "Émile" (120 pages, published, two authors, a cover, on a
    /// shelf), "Dune" (412 pages, one author) and "Blank" (0 pages, nothing related).
    struct Library {
        let context: NSManagedObjectContext
        let shelf: Shelf
        let emile: Book
        let dune: Book
        let blank: Book
        let ann: Author
        let bob: Author
        let published: Date
    }

    /// Runs `body` on the queue of a new context of a new in-memory container holding a library.
    private func withLibrary(_ body: (Library) throws -> Void) throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "Classics"
            let ann = Author(context: context)
            ann.name = "Ann"
            let bob = Author(context: context)
            bob.name = "Bob"
            let published = Date(timeIntervalSince1970: 1_000_000)
            let emile = Book(context: context)
            emile.title = "Émile"
            emile.pages = 120
            emile.published = published
            emile.shelf = shelf
            emile.authors = [ann, bob]
            let cover = Cover(context: context)
            cover.color = "red"
            emile.cover = cover
            let dune = Book(context: context)
            dune.title = "Dune"
            dune.pages = 412
            dune.authors = [bob]
            dune.shelf = shelf
            let blank = Book(context: context)
            blank.title = "Blank"
            try body(Library(context: context, shelf: shelf, emile: emile, dune: dune, blank: blank, ann: ann, bob: bob, published: published))
        }
    }

    /// Whether `format` with `args` holds for `object`; records a failure when it did not parse.
    private func holds(_ format: String, _ args: [Any] = [], _ object: Any?, variables: [String: Any]? = nil) -> Bool {
        let predicate = NSPredicate(format: format, argumentArray: args)
        if case let .failure(e)? = predicate.formatSyntax { Issue.record("\(e)") }
        if let variables { return predicate.evaluate(with: object, substitutionVariables: variables) }
        return predicate.evaluate(with: object)
    }

    @Test func comparisonsOfAttributes() throws {
        try withLibrary { l in
            #expect(holds("pages == 120", [], l.emile))
            #expect(!holds("pages == 121", [], l.emile))
            #expect(holds("pages != 121", [], l.emile))
            #expect(holds("pages < 121 AND pages <= 120 AND pages > 119 AND pages >= 120", [], l.emile))
            #expect(!holds("pages > 120", [], l.emile))
            #expect(holds("pages == 120.0", [], l.emile), "Int64 equals Double by value")
            #expect(holds("pages BETWEEN {100, 120}", [], l.emile))
            #expect(!holds("pages BETWEEN {121, 500}", [], l.emile))
            #expect(holds("pages IN {1, 120}", [], l.emile))
            #expect(!holds("pages IN {1, 2}", [], l.emile))
            #expect(holds("published == %@", [l.published], l.emile))
            #expect(holds("published < %@", [l.published.addingTimeInterval(1)], l.emile))
            #expect(holds("NOT pages == 1 AND (pages == 0 OR title == 'Émile')", [], l.emile))
            #expect(holds("TRUEPREDICATE", [], l.emile))
            #expect(!holds("FALSEPREDICATE", [], l.emile))
        }
    }

    @Test func stringOperatorsAndOptions() throws {
        try withLibrary { l in
            #expect(holds("title BEGINSWITH 'Ém'", [], l.emile))
            #expect(!holds("title BEGINSWITH 'ém'", [], l.emile))
            #expect(holds("title BEGINSWITH[c] 'ém'", [], l.emile))
            #expect(!holds("title BEGINSWITH[c] 'em'", [], l.emile))
            #expect(holds("title BEGINSWITH[cd] 'em'", [], l.emile))
            #expect(holds("title ==[d] 'Emile'", [], l.emile))
            #expect(!holds("title == 'Emile'", [], l.emile))
            #expect(holds("title ENDSWITH 'ile'", [], l.emile))
            #expect(!holds("title ENDSWITH 'Ém'", [], l.emile))
            #expect(holds("title CONTAINS 'mil'", [], l.emile))
            #expect(holds("title CONTAINS[c] 'MIL'", [], l.emile))
            #expect(holds("title LIKE 'É*e'", [], l.emile))
            #expect(holds("title LIKE '?mile'", [], l.emile))
            #expect(!holds("title LIKE 'mil'", [], l.emile), "LIKE matches the whole string")
            #expect(holds("title LIKE[cd] 'E?ILE'", [], l.emile))
            #expect(holds("title MATCHES 'D[a-z]+'", [], l.dune))
            #expect(!holds("title MATCHES 'un'", [], l.dune), "MATCHES matches the whole string")
            #expect(holds("title MATCHES[c] 'd.NE'", [], l.dune))
            #expect(!holds("title MATCHES '('", [], l.dune), "an invalid pattern matches nothing")
            #expect(holds("title IN 'Dune and more'", [], l.dune), "IN a string is containment")
            #expect(holds("title < 'E'", [], l.dune))
        }
    }

    @Test func keyPathsThroughToOnes() throws {
        try withLibrary { l in
            #expect(holds("shelf.name == 'Classics'", [], l.emile))
            #expect(holds("cover.color == 'red'", [], l.emile))
            #expect(holds("shelf.name == nil", [], l.blank), "a nil to-one makes the rest of the path nil")
            #expect(!holds("shelf.name == 'Classics'", [], l.blank))
            #expect(!holds("shelf.name < 'Z'", [], l.blank), "ordering against nil is false")
            #expect(holds("shelf.name != 'Classics'", [], l.blank))
            #expect(holds("cover == nil", [], l.dune))
            #expect(!holds("cover != nil", [], l.dune))
            #expect(holds("published == NULL", [], l.dune))
            #expect(!holds("published > %@", [Date.distantPast], l.dune))
            #expect(holds("cover.book.title == 'Émile'", [], l.emile))
        }
    }

    @Test func objectsAndObjectIDs() throws {
        try withLibrary { l in
            #expect(holds("shelf == %@", [l.shelf], l.emile))
            #expect(holds("shelf == %@", [l.shelf.objectID], l.emile))
            #expect(!holds("shelf == %@", [l.shelf], l.blank))
            #expect(holds("SELF == %@", [l.dune], l.dune))
            #expect(!holds("SELF == %@", [l.dune], l.emile))
            #expect(holds("SELF IN %@", [[l.dune, l.blank]], l.blank))
            #expect(!holds("SELF IN %@", [Set([l.dune, l.blank])], l.emile))
            #expect(holds("%@ IN authors", [l.ann], l.emile))
            #expect(!holds("%@ IN authors", [l.ann], l.dune))
            #expect(holds("authors CONTAINS %@", [l.bob], l.dune))
            #expect(NSPredicate(format: "shelf == %@", l.shelf).evaluate(with: l.emile), "objects pass as CVarArg")
            #expect(NSPredicate(format: "SELF != %@", l.shelf.objectID).evaluate(with: l.shelf) == false)
        }
    }

    @Test func modifiersOnToManys() throws {
        try withLibrary { l in
            #expect(holds("ANY authors.name == 'Ann'", [], l.emile))
            #expect(!holds("ANY authors.name == 'Ann'", [], l.dune))
            #expect(!holds("ALL authors.name == 'Bob'", [], l.emile))
            #expect(holds("ALL authors.name == 'Bob'", [], l.dune))
            #expect(holds("NONE authors.name == 'Ann'", [], l.dune))
            #expect(!holds("NONE authors.name == 'Ann'", [], l.emile))
            #expect(holds("ANY authors.name BEGINSWITH[c] 'b'", [], l.emile))
            #expect(holds("ANY books.authors.name == 'Ann'", [], l.shelf), "paths through two to-manys flatten")
        }
    }

    @Test func modifiersOnEmptyToManys() throws {
        try withLibrary { l in
            #expect(!holds("ANY authors.name == 'Ann'", [], l.blank), "ANY of nothing is false")
            #expect(holds("ALL authors.name == 'Ann'", [], l.blank), "ALL of nothing is true")
            #expect(holds("NONE authors.name == 'Ann'", [], l.blank), "NONE of nothing is true")
        }
    }

    @Test func aggregates() throws {
        try withLibrary { l in
            #expect(holds("authors.@count == 2", [], l.emile))
            #expect(holds("authors.@count == 0", [], l.blank))
            #expect(holds("books.@count == 2", [], l.shelf))
            #expect(holds("books.@sum.pages == 532", [], l.shelf))
            #expect(holds("books.@avg.pages == 266", [], l.shelf))
            #expect(holds("books.@min.pages == 120", [], l.shelf))
            #expect(holds("books.@max.pages == 412", [], l.shelf))
            #expect(!holds("books.@max.pages == 120", [], l.shelf))
            #expect(holds("books.@max.title == 'Émile'", [], l.shelf))
            #expect(holds("authors.@max.name == nil", [], l.blank), "@max of nothing is nil")
            #expect(holds("books.@sum.pages > 0", [], l.shelf))
            #expect(holds("@count == 3", [], Set([1, 2, 3])), "a collection operator on SELF")
        }
    }

    @Test func subqueries() throws {
        try withLibrary { l in
            #expect(holds("SUBQUERY(books, $b, $b.pages > 200).@count == 1", [], l.shelf))
            #expect(holds("SUBQUERY(books, $b, $b.pages > 100).@count == 2", [], l.shelf))
            #expect(holds("SUBQUERY(books, $b, ANY $b.authors.name == 'Ann' AND $b.pages < 200).@count == 1", [], l.shelf))
            #expect(!holds("SUBQUERY(books, $b, $b.title BEGINSWITH 'Z').@count > 0", [], l.shelf))
        }
    }

    @Test func formatArgumentKinds() throws {
        try withLibrary { l in
            #expect(NSPredicate(format: "pages == %d", 120).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages == %i", Int32(120)).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages == %ld", 120).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages == %lld", Int64(120)).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages == %hd", Int16(120)).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages == %u", UInt32(120)).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages == %lu", UInt(120)).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages < %f", 120.5).evaluate(with: l.emile))
            #expect(NSPredicate(format: "pages < %lf", Float(120.5)).evaluate(with: l.emile))
            #expect(!NSPredicate(format: "pages < %f", 119.5).evaluate(with: l.emile))
            #expect(NSPredicate(format: "%K == %@", "title", "Dune").evaluate(with: l.dune))
            #expect(NSPredicate(format: "%K.name == %@", "shelf", "Classics").evaluate(with: l.dune))
            #expect(NSPredicate(format: "%K == %@", "shelf.name", "Classics").evaluate(with: l.dune))
            #expect(NSPredicate(format: "title BEGINSWITH[c] %@ AND pages > %d", "du", 100).evaluate(with: l.dune))
            #expect(holds("cover == %@", [NSNull()], l.dune))
            #expect(holds("pages IN %@", [[1, 412]], l.dune))
            #expect(holds("pages IN %@", [Set([Int64(412)])], l.dune))
            #expect(holds("pages == %@", [Decimal(412)], l.dune))
            #expect(holds("pages == %@", [true], l.blank) == false)
            let missing: String? = nil
            #expect(holds("cover == %@", [missing as Any], l.dune))
        }
    }

    @Test func plainValuesAsSelf() {
        #expect(NSPredicate(format: "SELF > 3").evaluate(with: 5))
        #expect(!NSPredicate(format: "SELF > 3").evaluate(with: 2))
        #expect(NSPredicate(format: "SELF BEGINSWITH[c] 'sw'").evaluate(with: "Swift"))
        #expect(NSPredicate(format: "SELF IN {'a', 'b'}").evaluate(with: "b"))
        #expect(!NSPredicate(format: "title == 'x'").evaluate(with: "x"), "a key of a plain value does not match")
    }

    @Test func internalEvaluationThrowsForUnknownKeysAndMissingVariables() throws {
        try withLibrary { l in
            let unknown = try PredicateParser.parse("titel == 'x'", arguments: [])
            #expect(throws: PredicateEvaluationError.self) { try evaluate(unknown, on: l.dune, variables: [:]) }
            let variable = try PredicateParser.parse("pages > $MIN", arguments: [])
            #expect(throws: PredicateEvaluationError.self) { try evaluate(variable, on: l.dune, variables: [:]) }
            #expect(try evaluate(variable, on: l.dune, variables: ["MIN": 400]))
            #expect(try !evaluate(variable, on: l.dune, variables: ["MIN": 500]))
        }
    }
}
