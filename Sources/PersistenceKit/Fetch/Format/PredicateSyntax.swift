import Foundation

/// A parsed predicate format string, independent of any model: what the string says, with
/// its format arguments already in place. Evaluated on objects by
/// `evaluate(_:on:variables:)`, checked against an entity by `validate(_:for:format:)`.
indirect enum PredicateSyntax: Sendable, Hashable {
    /// `TRUEPREDICATE` (`true`) or `FALSEPREDICATE` (`false`).
    case constant(Bool)
    /// Holds when every part holds (`AND`, `&&`); an empty list holds.
    case and([PredicateSyntax])
    /// Holds when some part holds (`OR`, `||`); an empty list does not hold.
    case or([PredicateSyntax])
    /// `NOT`, `!`.
    case not(PredicateSyntax)
    /// `left <operator>[options] right`, with an optional `ANY`/`ALL`/`NONE` before it.
    case comparison(PredicateComparison)
}

/// One comparison of a predicate.
struct PredicateComparison: Sendable, Hashable {
    /// The comparison operators of the predicate grammar.
    enum Operator: String, Sendable, Hashable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case between = "BETWEEN"
        case `in` = "IN"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case contains = "CONTAINS"
        case like = "LIKE"
        case matches = "MATCHES"
    }

    /// `[c]`, `[d]`, `[cd]`: how strings compare.
    struct Options: OptionSet, Sendable, Hashable {
        let rawValue: UInt8
        /// `[c]`: letters compare without their case.
        static let caseInsensitive = Options(rawValue: 1)
        /// `[d]`: letters compare without their accents.
        static let diacriticInsensitive = Options(rawValue: 2)
    }

    /// How the left side, when it is a collection, is compared.
    enum Modifier: Sendable, Hashable {
        /// No modifier: the left side is compared as one value.
        case direct
        /// `ANY`/`SOME`: some element satisfies the comparison (none do of an empty collection).
        case any
        /// `ALL`: every element does (true of an empty collection).
        case all
        /// `NONE`: no element does (true of an empty collection).
        case none
    }

    var modifier: Modifier
    var left: PredicateTerm
    var op: Operator
    var options: Options
    var right: PredicateTerm
    /// Where the operator is written.
    var location: PredicateLocation
}

/// A value in a comparison.
indirect enum PredicateTerm: Sendable, Hashable {
    /// A constant: a literal or a `%@`-style argument. A collection constant (`{1, 2}` of
    /// constants, or an array passed as `%@`) is `.constant(.collection(...))`.
    case constant(PredicateValue)
    /// `{a, b, ...}` whose elements are not all constants (variables, key paths).
    case aggregate([PredicateTerm])
    /// A key path, `%K` substitution included.
    case keyPath(PredicateKeyPath)
}

/// `SELF`, `$var` or `SUBQUERY(...)`, followed by keys and collection operators:
/// `author.name`, `books.@count`, `books.@avg.pages`, `$b.title`, `SUBQUERY(...).@count`.
struct PredicateKeyPath: Sendable, Hashable {
    /// Where a key path starts from.
    indirect enum Root: Sendable, Hashable {
        /// The object evaluated (`SELF`, or implied before a bare key).
        case evaluatedObject
        /// `$name`: a substitution variable, or a `SUBQUERY`'s element.
        case variable(String)
        /// `SUBQUERY(collection, $variable, predicate)`: the elements of `collection` for
        /// which `predicate` holds with `$variable` set to the element.
        case subquery(collection: PredicateTerm, variable: String, predicate: PredicateSyntax)
    }

    /// A step of a key path.
    enum Step: Sendable, Hashable {
        /// A property name.
        case key(String)
        /// `@count`: the number of elements.
        case count
        /// `@sum`, `@avg`, `@min`, `@max`: the steps after it are read of each element,
        /// then combined.
        case sum, avg, min, max
    }

    var root: Root
    var steps: [Step]
    /// Where each step is written (same count as `steps`).
    var stepLocations: [PredicateLocation]
    /// Where the key path is written.
    var location: PredicateLocation

    /// `SELF` followed by `keys`.
    static func keys(_ keys: [String], at location: PredicateLocation = PredicateLocation(column: 0)) -> PredicateKeyPath {
        PredicateKeyPath(
            root: .evaluatedObject, steps: keys.map { .key($0) }, stepLocations: keys.map { _ in location }, location: location)
    }
}

/// A 1-based column of the format string. Locations take no part in equality or hashing:
/// the same predicate written with other spacing gives an equal tree.
struct PredicateLocation: Sendable, Hashable {
    let column: Int
    static func == (lhs: PredicateLocation, rhs: PredicateLocation) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
