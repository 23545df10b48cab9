import Foundation
import Testing
@testable import PersistenceKit

/// Format strings parse into the syntax tree the grammar describes.
@Suite("Predicate format parser") struct PredicateParserTests {
    private func parse(_ format: String, _ args: Any?...) throws -> PredicateSyntax {
        try PredicateParser.parse(format, arguments: args)
    }

    private func key(_ keys: String...) -> PredicateTerm { .keyPath(.keys(keys)) }

    private func comparison(
        _ left: PredicateTerm, _ op: PredicateComparison.Operator, _ right: PredicateTerm,
        _ options: PredicateComparison.Options = [], _ modifier: PredicateComparison.Modifier = .direct
    ) -> PredicateSyntax {
        .comparison(PredicateComparison(modifier: modifier, left: left, op: op, options: options, right: right, location: PredicateLocation(column: 0)))
    }

    @Test func everyOperatorSpelling() throws {
        let spellings: [(String, PredicateComparison.Operator)] = [
            ("==", .equal), ("=", .equal), ("!=", .notEqual), ("<>", .notEqual), ("<", .less), ("<=", .lessOrEqual),
            ("=<", .lessOrEqual), (">", .greater), (">=", .greaterOrEqual), ("=>", .greaterOrEqual), ("IN", .in),
            ("in", .in), ("BEGINSWITH", .beginsWith), ("endswith", .endsWith), ("Contains", .contains), ("LIKE", .like),
            ("matches", .matches),
        ]
        for (spelling, op) in spellings {
            #expect(try parse("pages \(spelling) 3") == comparison(key("pages"), op, .constant(.integer(3))), "\(spelling)")
        }
        #expect(try parse("pages BETWEEN {1, 5}") == comparison(key("pages"), .between, .constant(.collection([.integer(1), .integer(5)]))))
    }

    @Test func optionsAndModifiers() throws {
        #expect(try parse("title ==[c] 'a'") == comparison(key("title"), .equal, .constant(.string("a")), .caseInsensitive))
        #expect(try parse("title LIKE[d] 'a'") == comparison(key("title"), .like, .constant(.string("a")), .diacriticInsensitive))
        #expect(try parse("title CONTAINS[cd] 'a'") == comparison(key("title"), .contains, .constant(.string("a")), [.caseInsensitive, .diacriticInsensitive]))
        #expect(try parse("ANY authors.name == 'x'") == comparison(key("authors", "name"), .equal, .constant(.string("x")), [], .any))
        #expect(try parse("some authors.name == 'x'") == comparison(key("authors", "name"), .equal, .constant(.string("x")), [], .any))
        #expect(try parse("ALL authors.name == 'x'") == comparison(key("authors", "name"), .equal, .constant(.string("x")), [], .all))
        #expect(try parse("NONE authors.name == 'x'") == comparison(key("authors", "name"), .equal, .constant(.string("x")), [], .none))
    }

    @Test func logicalOperatorsAndPrecedence() throws {
        let a = comparison(key("a"), .equal, .constant(.integer(1)))
        let b = comparison(key("b"), .equal, .constant(.integer(2)))
        let c = comparison(key("c"), .equal, .constant(.integer(3)))
        #expect(try parse("a == 1 OR b == 2 AND c == 3") == .or([a, .and([b, c])]))
        #expect(try parse("(a == 1 || b == 2) && c == 3") == .and([.or([a, b]), c]))
        #expect(try parse("NOT a == 1") == .not(a))
        #expect(try parse("!(a == 1) and not b == 2") == .and([.not(a), .not(b)]))
        #expect(try parse("TRUEPREDICATE") == .constant(true))
        #expect(try parse("falsepredicate OR a == 1") == .or([.constant(false), a]))
    }

    @Test func literals() throws {
        let cases: [(String, PredicateValue)] = [
            ("\"say \\\"hi\\\"\"", .string("say \"hi\"")), ("'a\\nb'", .string("a\nb")),
            ("'\\u00e9'", .string("é")), ("42", .integer(42)), ("-7", .integer(-7)), ("2.5", .double(2.5)), ("1e3", .double(1000)),
            ("0x1F", .integer(31)), ("YES", .bool(true)), ("no", .bool(false)), ("TRUE", .bool(true)), ("false", .bool(false)),
            ("nil", .null), ("NULL", .null), ("{1, 'a', 2.5}", .collection([.integer(1), .string("a"), .double(2.5)])),
            ("{}", .collection([])),
        ]
        for (text, value) in cases {
            #expect(try parse("x == \(text)") == comparison(key("x"), .equal, .constant(value)), "\(text)")
        }
        // Two adjacent strings are two values, not an escaped quote.
        #expect(throws: PredicateFormatError.self) { try parse("x == 'it''s'") }
    }

    @Test func keyPathsAndCollectionOperators() throws {
        #expect(try parse("author.country == 'FR'") == comparison(key("author", "country"), .equal, .constant(.string("FR"))))
        #expect(try parse("SELF == 1") == comparison(.keyPath(.keys([])), .equal, .constant(.integer(1))))
        #expect(try parse("self.title == 1") == comparison(key("title"), .equal, .constant(.integer(1))))
        #expect(try parse("#in == 1") == comparison(key("in"), .equal, .constant(.integer(1))))
        let count = PredicateKeyPath(root: .evaluatedObject, steps: [.key("books"), .count], stepLocations: [PredicateLocation(column: 0), PredicateLocation(column: 0)], location: PredicateLocation(column: 0))
        #expect(try parse("books.@count > 2") == comparison(.keyPath(count), .greater, .constant(.integer(2))))
        guard case let .comparison(avg) = try parse("books.@avg.pages > 2"), case let .keyPath(path) = avg.left else {
            Issue.record("not a comparison of a key path")
            return
        }
        #expect(path.steps == [.key("books"), .avg, .key("pages")])
        guard case let .comparison(sum) = try parse("@sum.pages > 2"), case let .keyPath(sumPath) = sum.left else {
            Issue.record("not a comparison of a key path")
            return
        }
        #expect(sumPath.steps == [.sum, .key("pages")])
        for (text, step) in [("@min", PredicateKeyPath.Step.min), ("@max", .max), ("@SUM", .sum)] {
            guard case let .comparison(c) = try parse("books.\(text).pages > 2"), case let .keyPath(p) = c.left else {
                Issue.record("not a comparison of a key path")
                continue
            }
            #expect(p.steps[1] == step)
        }
    }

    @Test func variablesAggregatesAndSubqueries() throws {
        let variable = PredicateTerm.keyPath(PredicateKeyPath(root: .variable("MIN"), steps: [], stepLocations: [], location: PredicateLocation(column: 0)))
        #expect(try parse("pages > $MIN") == comparison(key("pages"), .greater, variable))
        #expect(try parse("pages IN {1, $MIN}") == comparison(key("pages"), .in, .aggregate([.constant(.integer(1)), variable])))
        guard case let .comparison(c) = try parse("SUBQUERY(books, $b, $b.pages > 100).@count >= 1"), case let .keyPath(p) = c.left,
            case let .subquery(collection, name, predicate) = p.root
        else {
            Issue.record("not a subquery")
            return
        }
        #expect(collection == key("books"))
        #expect(name == "b")
        #expect(p.steps == [.count])
        let bPages = PredicateTerm.keyPath(PredicateKeyPath(root: .variable("b"), steps: [.key("pages")], stepLocations: [PredicateLocation(column: 0)], location: PredicateLocation(column: 0)))
        #expect(predicate == comparison(bPages, .greater, .constant(.integer(100))))
    }

    @Test func columnsAreKept() throws {
        guard case let .and(parts) = try parse("a == 1 AND author.name  BEGINSWITH 'x'"), case let .comparison(second) = parts[1],
            case let .keyPath(path) = second.left
        else {
            Issue.record("not an AND of comparisons")
            return
        }
        #expect(path.location.column == 12)
        #expect(path.stepLocations.map(\.column) == [12, 19])
        #expect(second.location.column == 25)
    }
}
