import Foundation

/// An expression a dictionary fetch computes: an attribute by key path, the fetched object
/// itself, or a function (`count:`, `sum:`, `average:`, `min:`, `max:`) of one of those.
/// Set it as an ``NSExpressionDescription``'s ``NSExpressionDescription/expression``.
///
/// swift-corelibs-foundation declares `NSExpression` but makes it unusable (the class is
/// deprecated and every initializer unavailable), so PersistenceKit brings its own. Written
/// as in Core Data it compiles unchanged wherever a value is expected, through the
/// ``NSExpression`` alias:
///
/// ```swift
/// total.expression = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "price")])
/// total.expression = .function("sum:", [.keyPath("price")])   // the same
/// ```
///
/// Where a *type* is written, write `FetchExpression` (`NSExpression` there is ambiguous
/// with Foundation's class).
public struct FetchExpression: Sendable, Hashable, CustomStringConvertible {
    enum Node: Sendable, Hashable {
        case keyPath(String)
        case evaluatedObject
        case function(String, [FetchExpression])
        /// A constant; nil when its type is none a predicate can hold.
        case constant(PredicateValue?)
    }

    let node: Node

    /// An expression reading `keyPath`: the name of an attribute (or, as the argument of
    /// `count:`, of a to-one relationship) of the fetched entity.
    public init(forKeyPath keyPath: String) {
        node = .keyPath(keyPath)
    }

    /// An expression applying the function named `name` to `arguments`. Dictionary fetches
    /// compute `count:`, `sum:`, `average:`, `min:` and `max:`, each of one argument; a
    /// fetch with another function throws.
    public init(forFunction name: String, arguments: [FetchExpression]) {
        node = .function(name, arguments)
    }

    /// An expression whose value is `value` (numbers, strings, Booleans, dates, data, UUIDs,
    /// URLs, decimals, `nil`). A batch update uses it in ``NSBatchUpdateRequest/propertiesToUpdate``
    /// and throws when the value is of another type.
    public init(forConstantValue value: Any?) {
        node = .constant(PredicateValue(argument: value))
    }

    /// The object being evaluated: as the argument of `count:`, it counts rows.
    public static func expressionForEvaluatedObject() -> FetchExpression {
        FetchExpression(node: .evaluatedObject)
    }

    /// `FetchExpression(forKeyPath: keyPath)`.
    public static func keyPath(_ keyPath: String) -> FetchExpression {
        FetchExpression(forKeyPath: keyPath)
    }

    /// `FetchExpression(forFunction: name, arguments: arguments)`.
    public static func function(_ name: String, _ arguments: [FetchExpression]) -> FetchExpression {
        FetchExpression(forFunction: name, arguments: arguments)
    }

    private init(node: Node) {
        self.node = node
    }

    /// The key path read, for a key-path expression; nil otherwise.
    public var keyPath: String? {
        if case let .keyPath(k) = node { return k }
        return nil
    }

    /// The function's name (such as `"sum:"`), for a function expression; nil otherwise.
    public var function: String? {
        if case let .function(name, _) = node { return name }
        return nil
    }

    /// The function's arguments, for a function expression; nil otherwise.
    public var arguments: [FetchExpression]? {
        if case let .function(_, arguments) = node { return arguments }
        return nil
    }

    /// The expression as Core Data prints one: `price`, `SELF`, `sum:(price)`.
    public var description: String {
        switch node {
        case let .keyPath(k): k
        case .evaluatedObject: "SELF"
        case let .function(name, arguments): "\(name)(\(arguments.map(\.description).joined(separator: ", ")))"
        case let .constant(value): value.map { "\($0)" } ?? "<unsupported constant>"
        }
    }
}

/// Core Data's spelling of ``FetchExpression``, for expressions:
/// `NSExpression(forKeyPath: "price")`, `NSExpression(forFunction: "sum:", arguments: […])`.
/// In a file that imports Foundation too, a *type* annotation naming `NSExpression` is
/// ambiguous with Foundation's unusable class: write `FetchExpression` there.
public typealias NSExpression = FetchExpression
