import Foundation

/// One persisted object as a store holds it: its row ID, its optimistic-lock version, and
/// one value per property of its entity (in the entity's property order; transient
/// properties hold `.null`).
public struct StoreRow: Sendable, Hashable {
    /// The row's identity.
    public var id: StoreRowID
    /// Incremented by the store on every committed update; 1 after insert.
    public var version: Int64
    /// The values, indexed like the entity's properties.
    public var values: [StoreValue]

    /// Creates a row.
    public init(id: StoreRowID, version: Int64, values: [StoreValue]) {
        self.id = id
        self.version = version
        self.values = values
    }

    /// The value of property `i`; `.null` past the row's end (a row written before the
    /// property existed).
    @inline(__always)
    func value(at i: Int) -> StoreValue { i < values.count ? values[i] : .null }
}

/// Everything one save writes, applied by a store all at once or not at all.
///
/// Updates and deletes carry the version the saving context last saw; the store refuses
/// the whole transaction when any of them no longer matches (optimistic locking).
public struct StoreTransaction: Sendable {
    /// Rows to create (their version is ignored; the store sets 1).
    public var inserts: [StoreRow] = []
    /// Rows to replace: `row.version` is the version the writer expects to find.
    public var updates: [StoreRow] = []
    /// Rows to remove, with the version the writer expects to find.
    public var deletes: [(id: StoreRowID, expectedVersion: Int64)] = []

    /// Creates an empty transaction.
    public init() {}

    /// Whether the transaction writes nothing.
    public var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
}

/// A row whose stored version differed from the version a transaction expected.
public struct StoreConflict: Sendable, Hashable {
    /// The row in conflict.
    public var id: StoreRowID
    /// The version the writer expected.
    public var expectedVersion: Int64
    /// The row as the store holds it now; `nil` when it was deleted.
    public var current: StoreRow?

    /// Creates a conflict record.
    public init(id: StoreRowID, expectedVersion: Int64, current: StoreRow?) {
        self.id = id
        self.expectedVersion = expectedVersion
        self.current = current
    }
}

/// The outcome of committing a transaction.
public enum StoreCommitResult: Sendable {
    /// Everything was written; the committed rows with their new versions: the inserts,
    /// then the updates, each in transaction order (with the other ends of their links as
    /// the store keeps them), then the rows the store wrote besides to keep link ends in
    /// agreement (see ``PersistentStore/commit(_:)``).
    case committed([StoreRow])
    /// Nothing was written because these rows changed since the writer read them.
    case conflicts([StoreConflict])
}

/// A simple filter a store can apply while scanning: every condition must hold.
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
            // (Found in review: NaN compared as equal to everything in store filters.)
            if v.isNaN || value.isNaN { return op == .notEqual }
            return holds(StoreValue.compare(v, value))
        }

        /// Whether the condition holds for a value that compares to the constant as `c`.
        @inline(__always)
        func holds(_ c: ComparisonResult) -> Bool { op.holds(c) }
    }

    /// The conditions, all of which must hold.
    public var conditions: [Condition]

    /// Creates a filter from conditions.
    public init(_ conditions: [Condition]) {
        self.conditions = conditions
    }

    /// Whether `row` satisfies every condition.
    public func matches(_ row: StoreRow) -> Bool {
        conditions.allSatisfy { $0.matches(row) }
    }
}
