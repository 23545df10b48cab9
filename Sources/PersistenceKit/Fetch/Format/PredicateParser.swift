import Foundation

/// Parses a predicate format string, with its arguments, into a ``PredicateSyntax``.
///
/// Grammar (keywords in any case):
///
///     predicate   := or
///     or          := and (("OR" | "||") and)*
///     and         := not (("AND" | "&&") not)*
///     not         := ("NOT" | "!") not | "(" predicate ")" | TRUEPREDICATE | FALSEPREDICATE | comparison
///     comparison  := [ANY | SOME | ALL | NONE] expression operator ["[c]" | "[d]" | "[cd]"] expression
///     expression  := ["-"] number | string | YES | NO | TRUE | FALSE | NIL | NULL | %@ | %d ... | "{" list "}"
///                  | (key | SELF | %K | $variable | @operator | SUBQUERY(expression, $variable, predicate))
///                    ("." (key | @operator))*
struct PredicateParser {
    private let format: String
    private let tokens: [PredicateToken]
    private var position = 0
    private var arguments: PredicateArguments

    /// The syntax of `format`, with `arguments` in place of its format specifiers.
    static func parse(_ format: String, arguments: [Any?]) throws(PredicateFormatError) -> PredicateSyntax {
        var parser = PredicateParser(
            format: format, tokens: try PredicateLexer.tokens(of: format), arguments: PredicateArguments(arguments, format: format))
        let syntax = try parser.parseOr()
        let last = parser.peek
        guard last.kind == .end else {
            throw parser.error("unexpected '\(last.text)' after a complete predicate; join predicates with AND or OR", at: last)
        }
        return syntax
    }

    private init(format: String, tokens: [PredicateToken], arguments: PredicateArguments) {
        self.format = format
        self.tokens = tokens
        self.arguments = arguments
    }

    // MARK: Tokens

    private var peek: PredicateToken { tokens[position] }

    private mutating func advance() -> PredicateToken {
        let t = tokens[position]
        if t.kind != .end { position += 1 }
        return t
    }

    /// The token before the current one, for "after ..." in messages.
    private var previousText: String { position > 0 ? tokens[position - 1].text : "" }

    private func error(_ problem: String, at token: PredicateToken) -> PredicateFormatError {
        PredicateFormatError(.syntax, problem, format: format, column: token.column)
    }

    /// The keyword `token` is (upper-cased), or `nil` when it is not an unescaped keyword.
    private static func keyword(_ token: PredicateToken) -> String? {
        guard case let .identifier(name, escaped: false) = token.kind else { return nil }
        let upper = name.uppercased()
        return keywords.contains(upper) ? upper : nil
    }

    private static let keywords: Set<String> = [
        "AND", "OR", "NOT", "TRUEPREDICATE", "FALSEPREDICATE", "ANY", "SOME", "ALL", "NONE", "BETWEEN", "IN", "BEGINSWITH",
        "ENDSWITH", "CONTAINS", "LIKE", "MATCHES", "SELF", "YES", "NO", "TRUE", "FALSE", "NIL", "NULL", "SUBQUERY",
    ]

    private func isSymbol(_ s: String) -> Bool { peek.kind == .symbol(s) }

    private mutating func expectSymbol(_ s: String, _ what: String) throws(PredicateFormatError) {
        guard isSymbol(s) else {
            throw error("expected '\(s)' \(what), found \(Self.describe(peek))", at: peek)
        }
        _ = advance()
    }

    private static func describe(_ token: PredicateToken) -> String {
        token.kind == .end ? "the end of the format" : "'\(token.text)'"
    }

    // MARK: Predicates

    private mutating func parseOr() throws(PredicateFormatError) -> PredicateSyntax {
        var parts = [try parseAnd()]
        while Self.keyword(peek) == "OR" || isSymbol("||") {
            _ = advance()
            parts.append(try parseAnd())
        }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func parseAnd() throws(PredicateFormatError) -> PredicateSyntax {
        var parts = [try parseNot()]
        while Self.keyword(peek) == "AND" || isSymbol("&&") {
            _ = advance()
            parts.append(try parseNot())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func parseNot() throws(PredicateFormatError) -> PredicateSyntax {
        if Self.keyword(peek) == "NOT" || isSymbol("!") {
            _ = advance()
            return .not(try parseNot())
        }
        if isSymbol("(") {
            let open = advance()
            if peek.kind == .end || isSymbol(")") {
                throw error("expected a predicate after '('", at: peek)
            }
            let inner = try parseOr()
            guard isSymbol(")") else {
                throw error("the '(' at column \(open.column) is not closed: expected ')', found \(Self.describe(peek))", at: peek)
            }
            _ = advance()
            return inner
        }
        switch Self.keyword(peek) {
        case "TRUEPREDICATE":
            _ = advance()
            return .constant(true)
        case "FALSEPREDICATE":
            _ = advance()
            return .constant(false)
        default:
            return .comparison(try parseComparison())
        }
    }

    private static let symbolOperators: [String: PredicateComparison.Operator] = [
        "==": .equal, "=": .equal, "!=": .notEqual, "<>": .notEqual, "<": .less, "<=": .lessOrEqual, "=<": .lessOrEqual,
        ">": .greater, ">=": .greaterOrEqual, "=>": .greaterOrEqual,
    ]

    private static let wordOperators: [String: PredicateComparison.Operator] = [
        "BETWEEN": .between, "IN": .in, "BEGINSWITH": .beginsWith, "ENDSWITH": .endsWith, "CONTAINS": .contains,
        "LIKE": .like, "MATCHES": .matches,
    ]

    private mutating func parseComparison() throws(PredicateFormatError) -> PredicateComparison {
        var modifier = PredicateComparison.Modifier.direct
        switch Self.keyword(peek) {
        case "ANY", "SOME": modifier = .any
        case "ALL": modifier = .all
        case "NONE": modifier = .none
        default: break
        }
        if modifier != .direct { _ = advance() }
        if peek.kind == .end {
            throw error(position == 0 ? "the format is empty; write a predicate such as \"name == 'x'\"" : "expected a predicate after '\(previousText)'", at: peek)
        }
        let left = try parseExpression()
        let opToken = peek
        let op: PredicateComparison.Operator
        if case let .symbol(s) = opToken.kind, let o = Self.symbolOperators[s] {
            op = o
        } else if let word = Self.keyword(opToken), let o = Self.wordOperators[word] {
            op = o
        } else {
            throw error("expected a comparison operator (==, !=, <, >, IN, CONTAINS, ...) after '\(previousText)', found \(Self.describe(opToken))", at: opToken)
        }
        _ = advance()
        var options: PredicateComparison.Options = []
        if case let .options(letters) = peek.kind {
            for letter in letters.lowercased() {
                switch letter {
                case "c": options.insert(.caseInsensitive)
                case "d": options.insert(.diacriticInsensitive)
                default:
                    throw error("unknown comparison option '\(letter)' in '\(peek.text)'; use [c], [d] or [cd]", at: peek)
                }
            }
            if letters.isEmpty { throw error("empty comparison options '[]'; use [c], [d] or [cd]", at: peek) }
            _ = advance()
        }
        if peek.kind == .end || Self.keyword(peek).map({ ["AND", "OR"].contains($0) }) == true || isSymbol(")") {
            throw error("expected a value after '\(previousText)'", at: peek)
        }
        let rightToken = peek
        let right = try parseExpression()
        if op == .between, case let .constant(.collection(bounds)) = right, bounds.count != 2 {
            throw error("BETWEEN takes two bounds, as in {1, 10}; found \(bounds.count)", at: rightToken)
        }
        return PredicateComparison(
            modifier: modifier, left: left, op: op, options: options, right: right,
            location: PredicateLocation(column: opToken.column))
    }

    // MARK: Expressions

    private mutating func parseExpression() throws(PredicateFormatError) -> PredicateTerm {
        let token = advance()
        let location = PredicateLocation(column: token.column)
        switch token.kind {
        case let .string(s): return .constant(.string(s))
        case let .integer(v): return .constant(.integer(v))
        case let .double(v): return .constant(.double(v))
        case .symbol("-"):
            let number = advance()
            switch number.kind {
            case let .integer(v): return .constant(.integer(-v))
            case let .double(v): return .constant(.double(-v))
            default: throw error("expected a number after '-'", at: number)
            }
        case .symbol("{"):
            return try parseAggregate()
        case let .format(conversion, _):
            if conversion == "K" {
                let keys = try arguments.keyPath(for: token)
                let path = PredicateKeyPath(
                    root: .evaluatedObject, steps: keys.map { .key($0) }, stepLocations: keys.map { _ in location },
                    location: location)
                return .keyPath(try parseSteps(after: path))
            }
            return .constant(try arguments.constant(for: token, conversion: conversion))
        case let .variable(name):
            return .keyPath(try parseSteps(after: PredicateKeyPath(root: .variable(name), steps: [], stepLocations: [], location: location)))
        case let .collectionOperator(name):
            let start = PredicateKeyPath(
                root: .evaluatedObject, steps: [try collectionStep(name, token)], stepLocations: [location], location: location)
            return .keyPath(try parseSteps(after: start))
        case let .identifier(name, _):
            switch Self.keyword(token) {
            case nil:
                let start = PredicateKeyPath(root: .evaluatedObject, steps: [.key(name)], stepLocations: [location], location: location)
                return .keyPath(try parseSteps(after: start))
            case "SELF":
                return .keyPath(try parseSteps(after: PredicateKeyPath(root: .evaluatedObject, steps: [], stepLocations: [], location: location)))
            case "YES", "TRUE": return .constant(.bool(true))
            case "NO", "FALSE": return .constant(.bool(false))
            case "NIL", "NULL": return .constant(.null)
            case "SUBQUERY":
                return .keyPath(try parseSteps(after: try parseSubquery(at: location)))
            default:
                throw error("expected a value, found the keyword '\(name)'; to use it as a key, write #\(name)", at: token)
            }
        case .end:
            throw error("expected a value after '\(previousText)'", at: token)
        default:
            throw error("expected a value, found '\(token.text)'", at: token)
        }
    }

    /// `{a, b, ...}`, after its `{`: a collection constant when every element is constant.
    private mutating func parseAggregate() throws(PredicateFormatError) -> PredicateTerm {
        var elements: [PredicateTerm] = []
        if !isSymbol("}") {
            while true {
                elements.append(try parseExpression())
                if isSymbol("}") { break }
                try expectSymbol(",", "or '}' in a {…} list")
            }
        }
        _ = advance()
        var constants: [PredicateValue] = []
        for e in elements {
            guard case let .constant(v) = e else { return .aggregate(elements) }
            constants.append(v)
        }
        return .constant(.collection(constants))
    }

    /// `SUBQUERY(collection, $variable, predicate)`, after the keyword.
    private mutating func parseSubquery(at location: PredicateLocation) throws(PredicateFormatError) -> PredicateKeyPath {
        try expectSymbol("(", "after SUBQUERY")
        let collection = try parseExpression()
        try expectSymbol(",", "after the collection of SUBQUERY")
        let variableToken = advance()
        guard case let .variable(variable) = variableToken.kind else {
            throw error("expected a variable such as $x as the second part of SUBQUERY, found \(Self.describe(variableToken))", at: variableToken)
        }
        try expectSymbol(",", "after the variable of SUBQUERY")
        let predicate = try parseOr()
        try expectSymbol(")", "to close SUBQUERY")
        return PredicateKeyPath(
            root: .subquery(collection: collection, variable: variable, predicate: predicate), steps: [], stepLocations: [],
            location: location)
    }

    /// `path` followed by the `.key` and `.@operator` steps written after it.
    private mutating func parseSteps(after path: PredicateKeyPath) throws(PredicateFormatError) -> PredicateKeyPath {
        var path = path
        while isSymbol(".") {
            _ = advance()
            let token = advance()
            switch token.kind {
            case let .identifier(name, _): path.steps.append(.key(name))
            case let .collectionOperator(name): path.steps.append(try collectionStep(name, token))
            default: throw error("expected a key after '.', found \(Self.describe(token))", at: token)
            }
            path.stepLocations.append(PredicateLocation(column: token.column))
        }
        return path
    }

    private func collectionStep(_ name: String, _ token: PredicateToken) throws(PredicateFormatError) -> PredicateKeyPath.Step {
        switch name.lowercased() {
        case "count": return .count
        case "sum": return .sum
        case "avg": return .avg
        case "min": return .min
        case "max": return .max
        default: throw error("unknown collection operator '@\(name)'; use @count, @sum, @avg, @min or @max", at: token)
        }
    }
}
