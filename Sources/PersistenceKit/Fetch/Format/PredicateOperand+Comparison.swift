import Foundation

// The comparison operators on evaluated values, as Core Data compares in memory: numbers
// compare by value whatever their type (`Bool` as 0 or 1), strings with the `[c]`/`[d]`
// options, objects by identity or object ID, and anything compared with `nil` by order is
// false.

/// A number of a predicate, of the widest type needed so far.
enum PredicateNumber {
    case integer(Int64)
    case double(Double)
    case decimal(Decimal)

    init?(_ operand: PredicateOperand) {
        guard case let .value(v) = operand else { return nil }
        switch v {
        case let .integer(i): self = .integer(i)
        case let .double(d): self = .double(d)
        case let .decimal(d): self = .decimal(d)
        case let .bool(b): self = .integer(b ? 1 : 0)
        default: return nil
        }
    }

    var double: Double {
        switch self {
        case let .integer(i): return Double(i)
        case let .double(d): return d
        case let .decimal(d): return NSDecimalNumber(decimal: d).doubleValue
        }
    }

    var decimal: Decimal {
        switch self {
        case let .integer(i): return Decimal(i)
        case let .double(d): return Decimal(d)
        case let .decimal(d): return d
        }
    }

    var constant: PredicateValue {
        switch self {
        case let .integer(i): return .integer(i)
        case let .double(d): return .double(d)
        case let .decimal(d): return .decimal(d)
        }
    }

    static func + (a: PredicateNumber, b: PredicateNumber) -> PredicateNumber {
        switch (a, b) {
        case let (.integer(x), .integer(y)):
            let (sum, overflow) = x.addingReportingOverflow(y)
            return overflow ? .double(Double(x) + Double(y)) : .integer(sum)
        case (.decimal, _), (_, .decimal): return .decimal(a.decimal + b.decimal)
        default: return .double(a.double + b.double)
        }
    }

    /// The mean of a sum of `count` numbers: a `Decimal` for decimals, a `Double` otherwise.
    static func / (sum: PredicateNumber, count: Int) -> PredicateNumber {
        if case let .decimal(d) = sum { return .decimal(d / Decimal(count)) }
        return .double(sum.double / Double(count))
    }

    static func order(_ a: PredicateNumber, _ b: PredicateNumber) -> ComparisonResult {
        switch (a, b) {
        case let (.integer(x), .integer(y)): return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        case (.decimal, _), (_, .decimal):
            let (x, y) = (a.decimal, b.decimal)
            return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        default:
            let (x, y) = (a.double, b.double)
            return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        }
    }
}

extension PredicateComparison.Options {
    var stringOptions: String.CompareOptions {
        var o: String.CompareOptions = []
        if contains(.caseInsensitive) { o.insert(.caseInsensitive) }
        if contains(.diacriticInsensitive) { o.insert(.diacriticInsensitive) }
        return o
    }
}

extension PredicateOperand {
    /// Whether `left op right` holds.
    static func compare(
        _ left: PredicateOperand, _ op: PredicateComparison.Operator, _ right: PredicateOperand,
        _ options: PredicateComparison.Options
    ) throws -> Bool {
        switch op {
        case .equal: return equal(left, right, options)
        case .notEqual: return !equal(left, right, options)
        case .less: return order(left, right, options) == .orderedAscending
        case .lessOrEqual: return [.orderedAscending, .orderedSame].contains(order(left, right, options))
        case .greater: return order(left, right, options) == .orderedDescending
        case .greaterOrEqual: return [.orderedDescending, .orderedSame].contains(order(left, right, options))
        case .between:
            guard case let .many(bounds) = right, bounds.count == 2 else {
                throw PredicateEvaluationError(description: "BETWEEN needs two bounds, as in {1, 10}")
            }
            guard let low = order(left, bounds[0], options), let high = order(left, bounds[1], options) else { return false }
            return low != .orderedAscending && high != .orderedDescending
        case .in:
            switch right {
            case let .many(xs): return xs.contains { equal(left, $0, options) }
            case .value(.string): return try stringTest(right, left, options) { $0.range(of: $1, options: $2) != nil }
            case .null: return false
            default: return equal(left, right, options)
            }
        case .contains:
            switch left {
            case let .many(xs): return xs.contains { equal($0, right, options) }
            default: return try stringTest(left, right, options) { $0.range(of: $1, options: $2) != nil }
            }
        case .beginsWith:
            return try stringTest(left, right, options) { $0.range(of: $1, options: $2.union(.anchored)) != nil }
        case .endsWith:
            return try stringTest(left, right, options) { $0.range(of: $1, options: $2.union([.anchored, .backwards])) != nil }
        case .like:
            return try stringTest(left, right, options) { try fullMatch($0, pattern: likePattern($1), $2) }
        case .matches:
            return try stringTest(left, right, options) { try fullMatch($0, pattern: $1, $2) }
        }
    }

    /// `test(left, right, options)` when both are strings; false otherwise.
    private static func stringTest(
        _ left: PredicateOperand, _ right: PredicateOperand, _ options: PredicateComparison.Options,
        _ test: (String, String, String.CompareOptions) throws -> Bool
    ) throws -> Bool {
        guard case let .value(.string(l)) = left, case let .value(.string(r)) = right else { return false }
        return try test(l, r, options.stringOptions)
    }

    /// Whether the regular expression `pattern` matches all of `string`.
    private static func fullMatch(_ string: String, pattern: String, _ options: String.CompareOptions) throws -> Bool {
        var subject = string
        var regexOptions: NSRegularExpression.Options = [.dotMatchesLineSeparators]
        if options.contains(.caseInsensitive) { regexOptions.insert(.caseInsensitive) }
        var p = pattern
        if options.contains(.diacriticInsensitive) {
            subject = subject.folding(options: .diacriticInsensitive, locale: nil)
            p = p.folding(options: .diacriticInsensitive, locale: nil)
        }
        let regex: NSRegularExpression
        do {
            regex = try NSRegularExpression(pattern: "\\A(?:\(p))\\z", options: regexOptions)
        } catch {
            throw PredicateEvaluationError(description: "'\(pattern)' is not a valid regular expression")
        }
        let range = NSRange(subject.startIndex..<subject.endIndex, in: subject)
        return regex.firstMatch(in: subject, options: [], range: range) != nil
    }

    /// The regular expression for a LIKE pattern: `*` any characters, `?` one, `\` makes the
    /// next character literal.
    private static func likePattern(_ like: String) -> String {
        var result = ""
        var escaped = false
        for c in like {
            if escaped {
                result += NSRegularExpression.escapedPattern(for: String(c))
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "*" {
                result += ".*"
            } else if c == "?" {
                result += "."
            } else {
                result += NSRegularExpression.escapedPattern(for: String(c))
            }
        }
        return result
    }

    /// `==`: `nil` equals only `nil`; objects by identity or ID; numbers by value; strings
    /// with the options; collections as sets of elements.
    static func equal(_ left: PredicateOperand, _ right: PredicateOperand, _ options: PredicateComparison.Options) -> Bool {
        switch (left, right) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case let (.object(a), .object(b)): return a === b || a.objectID == b.objectID
        case let (.object(a), .value(.object(id))), let (.value(.object(id)), .object(a)): return a.objectID == id
        case let (.many(a), .many(b)):
            return a.allSatisfy { x in b.contains { equal(x, $0, options) } } && b.allSatisfy { y in a.contains { equal(y, $0, options) } }
        case let (.value(.string(a)), .value(.string(b))):
            return options.isEmpty ? a == b : a.compare(b, options: options.stringOptions) == .orderedSame
        case let (.value(a), .value(b)):
            if let x = PredicateNumber(left), let y = PredicateNumber(right) { return PredicateNumber.order(x, y) == .orderedSame }
            return a == b
        default: return false
        }
    }

    /// The order of two values of one kind (numbers, strings, dates); `nil` when they have
    /// none (`nil`, objects, mixed kinds).
    static func order(_ left: PredicateOperand, _ right: PredicateOperand, _ options: PredicateComparison.Options) -> ComparisonResult? {
        if let x = PredicateNumber(left), let y = PredicateNumber(right) { return PredicateNumber.order(x, y) }
        switch (left, right) {
        case let (.value(.string(a)), .value(.string(b))): return a.compare(b, options: options.stringOptions)
        case let (.value(.date(a)), .value(.date(b))): return a.compare(b)
        case let (.value(.uuid(a)), .value(.uuid(b))): return a.uuidString.compare(b.uuidString)
        default: return nil
        }
    }
}
