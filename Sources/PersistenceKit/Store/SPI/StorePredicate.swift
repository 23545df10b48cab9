import Foundation

/// A condition on a row that a store evaluates on its stored values: comparisons, string
/// tests, `IN` lists, `&&`, `||`, `!`, key paths through to-one relationships, and tests over
/// to-many relationships (any, all, none, count).
///
/// Fetch requests translate the predicates they can into a `StorePredicate`, so that a
/// store decodes only the values a predicate tests and makes objects only of rows that
/// match. Values compare as ``StoreValue/compare(_:_:)`` orders them, with Swift's optional
/// semantics for a missing value: a key path through an empty to-one reads `.null`, which
/// equals `.null`, differs from every other value and is ordered before none of them
/// (`<`, `<=`, `>`, `>=` against `.null`, or of `.null`, do not hold).
public indirect enum StorePredicate: Sendable, Hashable {
    /// Always holds (`true`) or never (`false`).
    case constant(Bool)
    /// Every part holds (an empty list holds).
    case and([StorePredicate])
    /// At least one part holds (an empty list does not).
    case or([StorePredicate])
    /// The part does not hold.
    case not(StorePredicate)
    /// The value at `path` compares with the constant as `op` says.
    case compare(StorePath, StoreFilter.Condition.Operator, StoreValue)
    /// The value at `path` is one of the constants (`IN`).
    case oneOf(StorePath, [StoreValue])
    /// The string at `path` passes a text test (a value that is not a string does not).
    case text(StorePath, StoreTextTest)
    /// Of the rows the to-many relationship at `path` leads to, `quantifier` of them satisfy
    /// the predicate, which is evaluated on rows of the relationship's destination entity.
    case each(StorePath, StoreQuantifier, StorePredicate)
    /// The number of rows the to-many relationship at `path` leads to compares with the
    /// constant as `op` says.
    case count(StorePath, StoreFilter.Condition.Operator, Int64)
}

/// Where a value is read from a row: zero or more to-one relationships followed from the row,
/// then a property of the row reached.
public struct StorePath: Sendable, Hashable, CustomStringConvertible {
    /// The to-one relationship properties followed, each an index into the properties of the
    /// entity reached so far.
    public var through: [Int]
    /// The property read, an index into the properties of the entity reached.
    public var property: Int

    /// Creates a path.
    public init(through: [Int] = [], property: Int) {
        self.through = through
        self.property = property
    }

    /// A readable form: property indexes joined by dots.
    public var description: String { (through + [property]).map(String.init).joined(separator: ".") }
}

/// How many of a to-many relationship's rows must satisfy a ``StorePredicate/each(_:_:_:)``
/// test.
public enum StoreQuantifier: Sendable, Hashable {
    /// At least one (`ANY`, `SOME`, `contains(where:)`): an empty relationship does not pass.
    case any
    /// Every one (`ALL`, `allSatisfy`): an empty relationship passes.
    case all
    /// None (`NONE`): an empty relationship passes.
    case none
}

/// A test of a string value against a constant string.
public struct StoreTextTest: Sendable, Hashable {
    /// What is tested.
    public enum Kind: Sendable, Hashable {
        /// The whole string equals the pattern (under the options).
        case equals
        /// The string starts with the pattern.
        case beginsWith
        /// The string ends with the pattern.
        case endsWith
        /// The pattern occurs in the string.
        case contains
        /// The string matches a `LIKE` pattern: `*` any run of characters, `?` one character.
        case like
        /// The whole string matches a regular expression (`MATCHES`).
        case matches
    }

    /// What is tested.
    public var kind: Kind
    /// The constant string (or pattern).
    public var pattern: String
    /// Whether case is ignored (`[c]`).
    public var caseInsensitive: Bool
    /// Whether diacritics are ignored (`[d]`).
    public var diacriticInsensitive: Bool

    /// Creates a text test.
    public init(_ kind: Kind, _ pattern: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) {
        self.kind = kind
        self.pattern = pattern
        self.caseInsensitive = caseInsensitive
        self.diacriticInsensitive = diacriticInsensitive
    }
}
