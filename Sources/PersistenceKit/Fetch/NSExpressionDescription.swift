import Foundation
import Synchronization

/// A computed column of a dictionary fetch: an ``FetchExpression`` (usually an aggregate
/// such as `sum:` of an attribute) and the key, ``NSPropertyDescription/name``, its value
/// has in each result dictionary.
///
/// ```swift
/// let total = NSExpressionDescription()
/// total.name = "total"
/// total.expression = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "price")])
/// total.expressionResultType = .doubleAttributeType
/// request.propertiesToFetch = ["genre", total]
/// ```
///
/// It belongs to no entity: put it in a request's `propertiesToFetch`, never in an entity's
/// properties.
///
/// # Thread safety
/// ``expression`` and ``expressionResultType`` are kept under a lock, so reading them from
/// any thread is safe; ``NSPropertyDescription/name`` follows the rules of its superclass
/// (set it before sharing the description).
public final class NSExpressionDescription: NSPropertyDescription, @unchecked Sendable {
    // @unchecked Sendable: the only state this class adds is `state`, a `Mutex` of Sendable
    // values, read and written only through the lock; what it inherits is covered by
    // NSPropertyDescription's own argument.
    private struct State {
        var expression: FetchExpression?
        var resultType: NSAttributeType = .undefinedAttributeType
    }

    private let state = Mutex(State())

    /// Creates a description with an empty name, no expression and an undefined result type.
    public init() {
        super.init(name: "")
    }

    /// Creates a description named `name` computing `expression`, converted to `resultType`.
    public convenience init(name: String, expression: FetchExpression, resultType: NSAttributeType = .undefinedAttributeType) {
        self.init()
        self.name = name
        self.expression = expression
        self.expressionResultType = resultType
    }

    /// The expression computed for each result; a dictionary fetch throws when it is nil.
    public var expression: FetchExpression? {
        get { state.withLock { $0.expression } }
        set { state.withLock { $0.expression = newValue } }
    }

    /// The type the computed value is converted to: an integer type (the value truncated
    /// toward zero), `.doubleAttributeType` / `.floatAttributeType` (a `Double`) or
    /// `.decimalAttributeType` (a `Decimal`). `.undefinedAttributeType` (the default), and
    /// every other type, keep the value as computed (see `NSFetchRequestResultType.dictionaryResultType`).
    public var expressionResultType: NSAttributeType {
        get { state.withLock { $0.resultType } }
        set { state.withLock { $0.resultType = newValue } }
    }

    override func describe(renaming: Bool) -> String { "\(name) = \(expression?.description ?? "nil")" }
}
