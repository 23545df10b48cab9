import Foundation

/// A filter a store applies to rows: every condition must hold, and the predicate too when
/// there is one.
///
/// The conditions are the part a store can answer from an attribute index (comparisons of
/// the row's own attributes with constants); the predicate holds everything else a fetch
/// could translate (see ``StorePredicate``).
public struct StoreFilter: Sendable, Hashable {
    /// A comparison of one property with a constant.
    public struct Condition: Sendable, Hashable {
        /// The comparison.
        public enum Operator: Sendable, Hashable {
            /// `==`, `!=`, `<`, `<=`, `>`, `>=` (value compared with the constant, as
            /// ``StoreValue/compare(_:_:)`` orders them).
            case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual

            /// Whether a value that compares to the constant as `c` passes this comparison.
            @inline(__always)
            func holds(_ c: ComparisonResult) -> Bool {
                switch self {
                case .equal: return c == .orderedSame
                case .notEqual: return c != .orderedSame
                case .less: return c == .orderedAscending
                case .lessOrEqual: return c != .orderedDescending
                case .greater: return c == .orderedDescending
                case .greaterOrEqual: return c != .orderedAscending
                }
            }
        }
        /// The property's index in its entity.
        public var property: Int
        /// The comparison.
        public var op: Operator
        /// The constant compared with (order as in ``StoreValue/compare(_:_:)``).
        public var value: StoreValue

        /// Creates a condition.
        public init(property: Int, _ op: Operator, _ value: StoreValue) {
            self.property = property
            self.op = op
            self.value = value
        }

        /// Whether `row` satisfies the condition.
        public func matches(_ row: StoreRow) -> Bool {
            matches(value: row.value(at: property))
        }

        /// Whether a value of the condition's property satisfies it.
        public func matches(value v: StoreValue) -> Bool {
            // NaN is unordered: only "not equal" holds, as for Swift's own comparisons.
            // `compare` places NaN before every number (for sorting); left to it, a store
            // filter would match NaN with `<` and `<=`, unlike the same predicate in memory.
            if v.isNaN || value.isNaN { return op == .notEqual }
            // So is nil: no ordering holds for it (as an index's ranges leave nil out, and a
            // format predicate on objects says), while it equals nil and differs from the rest.
            // `compare` puts nil first for sorting; left to it, `published < date` held for
            // every row without a date when the store scanned, and for none when an index
            // answered.
            if (v.isNull || value.isNull) && op != .equal && op != .notEqual { return false }
            return holds(StoreValue.compare(v, value))
        }

        /// Whether the condition holds for a value that compares to the constant as `c`.
        @inline(__always)
        func holds(_ c: ComparisonResult) -> Bool { op.holds(c) }
    }

    /// The conditions, all of which must hold.
    public var conditions: [Condition]
    /// A further condition that must hold, or nil.
    public var predicate: StorePredicate?

    /// Creates a filter from conditions and, optionally, a predicate.
    public init(_ conditions: [Condition], predicate: StorePredicate? = nil) {
        self.conditions = conditions
        self.predicate = predicate
    }

    /// Whether `row` satisfies every condition (the predicate, which may need other rows,
    /// is not tested here).
    public func matches(_ row: StoreRow) -> Bool {
        conditions.allSatisfy { $0.matches(row) }
    }
}
