import Foundation

/// One key of the order a store returns rows in: an attribute of the fetched entity, its
/// direction, and how strings compare. Values compare as ``StoreValue/compare(_:_:)`` orders
/// them (`.null` first when ascending), strings as ``comparison`` says; rows equal on every
/// key come in ascending primary-key order.
public struct StoreSortKey: Sendable, Hashable {
    /// The attribute's index in the entity's properties.
    public var property: Int
    /// Whether smaller values come first.
    public var ascending: Bool
    /// How strings compare.
    public var comparison: SortKey.StringComparison

    /// Creates a sort key.
    public init(property: Int, ascending: Bool = true, comparison: SortKey.StringComparison = .plain) {
        self.property = property
        self.ascending = ascending
        self.comparison = comparison
    }

    /// The order of two values of the key's attribute, in the key's direction.
    func compare(_ a: StoreValue, _ b: StoreValue) -> ComparisonResult {
        let r = SortKey(String(), ascending: true, comparison: comparison).compare(a, b)
        return ascending ? r : r.reversed
    }

    /// The order of two rows' key values (`a` and `b` hold one value per key, in order).
    static func compare(_ keys: [StoreSortKey], _ a: [StoreValue], _ b: [StoreValue]) -> ComparisonResult {
        for (i, key) in keys.enumerated() {
            let r = key.compare(a[i], b[i])
            if r != .orderedSame { return r }
        }
        return .orderedSame
    }
}

extension PersistentStore {
    /// The rows of `entity` that pass `filter`, in `order`, the first `offset` left out, at
    /// most `limit` of them (0: no limit): by fetching every match, sorting and cutting.
    /// A store implements it to do better — the file store keeps only the best
    /// `offset + limit` rows while it scans, and decodes only those.
    public func fetchRows(entity: Int32, filter: StoreFilter?, order: [StoreSortKey], offset: Int, limit: Int) throws -> [StoreRow] {
        Self.sortAndCut(try fetchRows(entity: entity, filter: filter), order: order, offset: offset, limit: limit)
    }

    /// `rows` (in primary-key order) in `order`, cut to the window.
    static func sortAndCut(_ rows: [StoreRow], order: [StoreSortKey], offset: Int, limit: Int) -> [StoreRow] {
        let keyed = rows.map { row in (row, order.map { row.value(at: $0.property) }) }
        let sorted = keyed.enumerated().sorted { x, y in
            let r = StoreSortKey.compare(order, x.element.1, y.element.1)
            return r == .orderedSame ? x.offset < y.offset : r == .orderedAscending
        }
        let window = sorted.dropFirst(max(0, offset))
        return (limit > 0 ? Array(window.prefix(limit)) : Array(window)).map(\.element.0)
    }
}
