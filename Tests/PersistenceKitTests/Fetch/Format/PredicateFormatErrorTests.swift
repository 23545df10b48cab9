import Foundation
import Testing
@testable import PersistenceKit

/// Bad format strings and arguments are errors naming the column of the mistake, never traps.
@Suite("Predicate format errors") struct PredicateFormatErrorTests {
    private func error(_ format: String, _ args: [Any?] = []) -> PredicateFormatError? {
        do {
            _ = try PredicateParser.parse(format, arguments: args)
            return nil
        } catch {
            return error
        }
    }

    @Test func syntaxErrorsNameTheirColumn() throws {
        let cases: [(String, Int, String)] = [
            ("title == ", 10, "expected a value after '=='"),
            ("title ==", 9, "expected a value after '=='"),
            ("title", 6, "expected a comparison operator"),
            ("title == 'abc", 10, "no closing '"),
            ("(pages > 1", 11, "is not closed"),
            ("pages > 1 pages", 11, "after a complete predicate"),
            ("pages ==[x] 1", 9, "unknown comparison option 'x'"),
            ("pages == %y", 10, "'%y' is not a format specifier"),
            ("books.@median > 1", 7, "unknown collection operator '@median'"),
            ("pages == AND", 10, "expected a value after '=='"),
            ("IN == 1", 1, "write #IN"),
            ("pages ~ 1", 7, "unexpected character '~'"),
            ("", 1, "the format is empty"),
            ("pages BETWEEN {1, 2, 3}", 15, "BETWEEN takes two bounds"),
            ("SUBQUERY(books, b, b.pages > 1).@count > 0", 17, "expected a variable"),
            ("author. == 1", 9, "expected a key after '.'"),
        ]
        for (format, column, problem) in cases {
            let e = try #require(error(format), "\(format)")
            #expect(e.kind == .syntax, "\(format)")
            #expect(e.column == column, "\(format): \(e)")
            #expect(e.problem.contains(problem), "\(format): \(e.problem)")
            #expect(e.format == format)
        }
    }

    @Test func descriptionIsASentenceWithTheColumn() throws {
        let e = try #require(error("title == "))
        #expect(e.description == "The predicate format \"title == \" is not valid at column 10: expected a value after '=='.")
    }

    @Test func missingArgument() throws {
        let e = try #require(error("title == %@ AND pages > %d", ["a"]))
        #expect(e.kind == .argument)
        #expect(e.column == 25)
        #expect(e.problem.contains("1 argument was given"))
        let none = try #require(error("title == %@"))
        #expect(none.column == 10)
    }

    @Test func wrongArgumentTypes() throws {
        let integer = try #require(error("pages > %d", [2.5]))
        #expect(integer.kind == .argument)
        #expect(integer.column == 9)
        #expect(integer.problem.contains("takes an integer"))
        let double = try #require(error("x > %f", ["a"]))
        #expect(double.problem.contains("floating-point"))
        let key = try #require(error("%K == 1", [3]))
        #expect(key.column == 1)
        #expect(key.problem.contains("%K takes a key path"))
        let emptyKey = try #require(error("%K == 1", ["a..b"]))
        #expect(emptyKey.kind == .argument)
        struct Opaque {}
        let opaque = try #require(error("x == %@", [Opaque()]))
        #expect(opaque.problem.contains("Opaque"))
    }

    @Test func aPredicateThatFailedToParseMatchesNothingAndKeepsItsError() throws {
        let predicate = NSPredicate(format: "pages > %d", "many")
        #expect(predicate.evaluate(with: 3) == false)
        guard case let .failure(e)? = predicate.formatSyntax else {
            Issue.record("expected a parse error")
            return
        }
        #expect(e.kind == .argument)
        #expect(e.column == 9)
    }

    @Test func validatingInitializerThrows() throws {
        #expect(throws: PredicateFormatError.self) { _ = try NSPredicate(validatingFormat: "pages >", argumentArray: nil) }
        let p = try NSPredicate(validatingFormat: "pages > %@", argumentArray: [3])
        #expect(p.formatSyntax != nil)
    }
}
