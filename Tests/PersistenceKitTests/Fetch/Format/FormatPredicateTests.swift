import Foundation
import Testing
@testable import PersistenceKit

/// The public surface of format predicates: the syntax a predicate gives back, compound
/// predicates of format predicates, and substitution variables.
@Suite("Format predicates") struct FormatPredicateTests {
    private func syntax(_ p: NSPredicate) throws -> PredicateSyntax {
        try #require(p.formatSyntax).get()
    }

    @Test func predicatesGiveBackTheirSyntax() throws {
        let p = NSPredicate(format: "pages > %d", 100)
        #expect(try syntax(p) == PredicateParser.parse("pages > 100", arguments: []))
        #expect(NSPredicate(value: true).formatSyntax == nil)
        #expect(NSPredicate { _, _ in true }.formatSyntax == nil)
    }

    @Test func compoundsOfFormatPredicatesCombineTheirSyntax() throws {
        let a = NSPredicate(format: "pages > 1")
        let b = NSPredicate(format: "title == 'x'")
        let sa = try syntax(a), sb = try syntax(b)
        #expect(try syntax(NSCompoundPredicate(andPredicateWithSubpredicates: [a, b])) == .and([sa, sb]))
        #expect(try syntax(NSCompoundPredicate(orPredicateWithSubpredicates: [a, b])) == .or([sa, sb]))
        #expect(try syntax(NSCompoundPredicate(notPredicateWithSubpredicate: a)) == .not(sa))
        let nested = NSCompoundPredicate(andPredicateWithSubpredicates: [a, NSCompoundPredicate(notPredicateWithSubpredicate: b)])
        #expect(try syntax(nested) == .and([sa, .not(sb)]))
        #expect(NSCompoundPredicate(andPredicateWithSubpredicates: [a, NSPredicate(value: true)]).formatSyntax == nil)
        let broken = NSCompoundPredicate(orPredicateWithSubpredicates: [a, NSPredicate(format: "pages >")])
        guard case .failure? = broken.formatSyntax else {
            Issue.record("a compound with a broken part gives that part's error")
            return
        }
    }

    @Test func compoundsEvaluate() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            book.title = "x"
            book.pages = 10
            let big = NSPredicate(format: "pages > 5"), named = NSPredicate(format: "title == 'y'")
            #expect(!NSCompoundPredicate(andPredicateWithSubpredicates: [big, named]).evaluate(with: book))
            #expect(NSCompoundPredicate(orPredicateWithSubpredicates: [big, named]).evaluate(with: book))
            #expect(NSCompoundPredicate(notPredicateWithSubpredicate: named).evaluate(with: book))
        }
    }

    @Test func substitutionVariables() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            let book = Book(context: context)
            book.title = "Dune"
            book.pages = 412
            let template = NSPredicate(format: "pages > $MIN AND title IN $TITLES")
            #expect(!template.evaluate(with: book), "unbound variables match nothing")
            let bound = template.withSubstitutionVariables(["MIN": 400, "TITLES": ["Dune", "Emma"]])
            #expect(bound.evaluate(with: book))
            #expect(!template.withSubstitutionVariables(["MIN": 500, "TITLES": ["Dune"]]).evaluate(with: book))
            #expect(try syntax(bound) == PredicateParser.parse("pages > 400 AND title IN {'Dune', 'Emma'}", arguments: []))
            #expect(template.evaluate(with: book, substitutionVariables: ["MIN": 1, "TITLES": ["Dune"]]))
            let partly = template.withSubstitutionVariables(["MIN": 400])
            #expect(partly.evaluate(with: book, substitutionVariables: ["TITLES": ["Dune"]]))
            let compound = NSCompoundPredicate(andPredicateWithSubpredicates: [template, NSPredicate(format: "title != $T")])
            let boundCompound = compound.withSubstitutionVariables(["MIN": 1, "TITLES": ["Dune"], "T": "Emma"])
            #expect(boundCompound is NSCompoundPredicate)
            #expect(boundCompound.evaluate(with: book))
            // A subquery's own variable is not substituted.
            let sub = NSPredicate(format: "SUBQUERY(authors, $a, $a.name == $NAME).@count == 0").withSubstitutionVariables(["a": 1, "NAME": "x"])
            #expect(try syntax(sub) == PredicateParser.parse("SUBQUERY(authors, $a, $a.name == 'x').@count == 0", arguments: []))
            #expect(sub.evaluate(with: book))
        }
    }
}
