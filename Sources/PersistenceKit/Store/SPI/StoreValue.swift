import Foundation

/// One persisted value as stores see it: an attribute value of one of the supported types,
/// or the target(s) of a relationship.
///
/// `StoreValue` is the currency between contexts and stores. Attribute values arrive
/// already checked against their ``NSAttributeType``; a store does not need to re-check them.
public enum StoreValue: Hashable, Sendable {
    /// No value (`nil`).
    case null
    /// Any integer attribute (16, 32 or 64 bit), widened to 64 bits.
    case integer(Int64)
    /// A `Double` attribute.
    case double(Double)
    /// A `Float` attribute.
    case float(Float)
    /// A `Bool` attribute.
    case bool(Bool)
    /// A `String` attribute.
    case string(String)
    /// A `Date` attribute.
    case date(Date)
    /// A binary data attribute.
    case data(Data)
    /// A `UUID` attribute.
    case uuid(UUID)
    /// A URI (`URL`) attribute.
    case uri(URL)
    /// A `Decimal` attribute.
    case decimal(Decimal)
    /// The target of a to-one relationship (`.null` when the relationship is empty).
    case reference(StoreRowID)
    /// The targets of a to-many relationship, in ascending row order.
    case references([StoreRowID])

    /// Whether the value is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Whether the value is a floating-point NaN. A NaN is unordered: a condition on it holds
    /// only for "not equal", as Swift's comparisons do (``compare(_:_:)`` still places it,
    /// for sorting).
    var isNaN: Bool {
        switch self {
        case let .double(d): d.isNaN
        case let .float(f): f.isNaN
        case let .date(d): d.timeIntervalSinceReferenceDate.isNaN
        default: false
        }
    }
}

extension StoreValue {
    /// Whether two values are the same stored value, for change tracking: `==`, except that
    /// a NaN is the same as a NaN (an untouched NaN is not a change) and strings must have
    /// the same scalars (Swift's `==` equates canonically equivalent strings, so "\u{E9}"
    /// written over "e\u{301}" was never saved).
    func isSame(as other: StoreValue) -> Bool {
        if case var .string(a) = self, case var .string(b) = other {
            return a.withUTF8 { x in b.withUTF8 { y in x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0) } }
        }
        return self == other || (isNaN && other.isNaN)
    }
}

extension StoreValue {
    /// A total order used by sorting: `null` sorts first; values of the same kind compare
    /// naturally; values of different kinds compare by kind. Strings compare by their
    /// Unicode scalar order (the same order as Swift's `<` on `String`).
    public static func compare(_ lhs: StoreValue, _ rhs: StoreValue) -> ComparisonResult {
        func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : (b < a ? .orderedDescending : .orderedSame)
        }
        // NaN is unordered under `<`; calling it "the same" as every number is no order at
        // all (a sort then left numbers out of order), so it sorts before every number.
        func floating<T: FloatingPoint>(_ a: T, _ b: T) -> ComparisonResult {
            if a.isNaN || b.isNaN { return order(a.isNaN ? 0 : 1, b.isNaN ? 0 : 1) }
            return order(a, b)
        }
        switch (lhs, rhs) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        case let (.integer(a), .integer(b)): return order(a, b)
        case let (.double(a), .double(b)): return floating(a, b)
        case let (.float(a), .float(b)): return floating(a, b)
        case let (.integer(a), .double(b)): return floating(Double(a), b)
        case let (.double(a), .integer(b)): return floating(a, Double(b))
        case let (.bool(a), .bool(b)): return order(a ? 1 : 0, b ? 1 : 0)
        case let (.string(a), .string(b)): return order(a, b)
        case let (.date(a), .date(b)): return floating(a.timeIntervalSinceReferenceDate, b.timeIntervalSinceReferenceDate)
        case let (.decimal(a), .decimal(b)): return order(a, b)
        case let (.uuid(a), .uuid(b)): return order(a.uuidString, b.uuidString)
        case let (.uri(a), .uri(b)): return order(a.absoluteString, b.absoluteString)
        case let (.data(a), .data(b)):
            if a == b { return .orderedSame }
            return a.lexicographicallyPrecedes(b) ? .orderedAscending : .orderedDescending
        case let (.reference(a), .reference(b)): return order(a, b)
        default: return order(lhs.kindRank, rhs.kindRank)
        }
    }

    private var kindRank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .integer: 2
        case .float: 3
        case .double: 4
        case .decimal: 5
        case .string: 6
        case .date: 7
        case .data: 8
        case .uuid: 9
        case .uri: 10
        case .reference: 11
        case .references: 12
        }
    }
}

extension StoreValue {
    /// The hash that `Set` and `Dictionary` use. Numbers and dates (what indexes and
    /// in-memory filters mostly key by) are mixed directly (see `identityHash`); the other
    /// kinds go through `hash(into:)` as usual. Consistent with `==`: equal doubles hash
    /// alike (`-0.0` as `0.0`), and values of different kinds are never equal, so their
    /// hashes may collide without harm. (Measured: SipHash over the indexed value was a
    /// third of indexing a row.)
    public func _rawHashValue(seed: Int) -> Int {
        switch self {
        case let .integer(x):
            return identityHash(UInt(bitPattern: Int(x)), seed: seed)
        case let .double(x):
            return identityHash(UInt(x == 0 ? 0 : x.bitPattern) ^ 0xD0, seed: seed)
        case let .date(d):
            let t = d.timeIntervalSinceReferenceDate
            return identityHash(UInt(t == 0 ? 0 : t.bitPattern) ^ 0xDA, seed: seed)
        default:
            var hasher = Hasher()
            hash(into: &hasher)
            return identityHash(UInt(bitPattern: hasher.finalize()), seed: seed)
        }
    }
}

extension [StoreValue] {
    /// Whether both arrays use the same buffer (a copy not yet written to).
    @inline(__always)
    func sharesBuffer(with other: [StoreValue]) -> Bool {
        withUnsafeBufferPointer { a in other.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }

    /// A copy in a buffer of its own, made by appending concrete `StoreValue`s. (Built with
    /// `Array(repeating:count:)` or `Array(unsafeUninitializedCapacity:)`, the array's
    /// allocation went through unspecialized code that looked up generic metadata on each
    /// call, costing more than it saved; measured with callgrind.)
    func ownCopy() -> [StoreValue] {
        var copy: [StoreValue] = []
        copy.reserveCapacity(count)
        for v in self { copy.append(v) }
        return copy
    }
}
