import Foundation

/// A string-keyed sort order for fetch requests: PersistenceKit's stand-in for
/// `NSSortDescriptor(key:ascending:)`, which needs key-value coding that Linux lacks.
public struct SortKey: Sendable, Hashable {
    /// The attribute to sort by.
    public var key: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// Creates a sort key.
    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }
}

/// One sort rule of a fetch request.
enum FetchSortRule {
    case descriptor(NSSortDescriptor)
    case key(SortKey)
    case comparator((NSManagedObject, NSManagedObject) -> ComparisonResult)

    /// Compares two objects of the fetched entity.
    func compare(_ a: NSManagedObject, _ b: NSManagedObject) -> ComparisonResult {
        switch self {
        case let .descriptor(d):
            let kp = d.keyPath
            let r = StoreValue.compare(Self.sortValue(a, kp), Self.sortValue(b, kp))
            return d.ascending ? r : r.reversed
        case let .key(k):
            let r = StoreValue.compare(Self.sortValue(a, k.key), Self.sortValue(b, k.key))
            return k.ascending ? r : r.reversed
        case let .comparator(f):
            return f(a, b)
        }
    }

    private static func sortValue(_ o: NSManagedObject, _ kp: AnyKeyPath) -> StoreValue {
        guard let value = o[keyPath: kp] else { return .null }
        if let v = value as? any AttributeValue { return v.storeValue }
        if let n = value as? NSNumber { return .double(n.doubleValue) }
        return .string(String(describing: value))
    }

    private static func sortValue(_ o: NSManagedObject, _ key: String) -> StoreValue {
        o.attributeValue(at: checkKey(key, of: o.entity))
    }

    /// The index of attribute `key` of `entity`, or a trap naming both.
    @discardableResult
    static func checkKey(_ key: String, of entity: NSEntityDescription) -> Int {
        guard let i = entity.propertyIndex(named: key), entity.properties[i] is NSAttributeDescription else {
            preconditionFailure(
                "PersistenceKit: sort key '\(key)' is not an attribute of entity '\(entity.name)'. Known attributes: "
                    + "\(entity.attributesByName.keys.sorted().joined(separator: ", ")).")
        }
        return i
    }
}

extension ComparisonResult {
    var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: .orderedDescending
        case .orderedDescending: .orderedAscending
        case .orderedSame: .orderedSame
        }
    }
}
