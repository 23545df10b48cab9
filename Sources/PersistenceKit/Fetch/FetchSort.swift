import Foundation

/// A string-keyed sort order for fetch requests: PersistenceKit's stand-in for
/// `NSSortDescriptor(key:ascending:selector:)`, which needs key-value coding that Linux
/// lacks.
public struct SortKey: Sendable, Hashable {
    /// How string values compare: the selectors Core Data's SQLite store sorts strings with.
    /// Values of other types, and `nil` (first when ascending), sort as with ``plain``.
    public enum StringComparison: Sendable, Hashable {
        /// Swift's `String` order: by Unicode scalars of the canonical form, so `"B"`
        /// before `"b"` and canonically equivalent strings equal (Core Data's `compare:`).
        case plain
        /// Ignoring case (`caseInsensitiveCompare:`).
        case caseInsensitive
        /// By the rules of the current locale (`localizedCompare:`).
        case localized
        /// By the rules of the current locale, ignoring case
        /// (`localizedCaseInsensitiveCompare:`).
        case localizedCaseInsensitive
        /// As a file browser lists names: by locale, ignoring case, numbers by value, so
        /// `"item2"` before `"item10"` (`localizedStandardCompare:`).
        case localizedStandard
    }

    /// The attribute to sort by.
    public var key: String
    /// Whether smaller values come first.
    public var ascending: Bool
    /// How string values compare.
    public var comparison: StringComparison

    /// Creates a sort key on attribute `key` of the fetched entity.
    public init(_ key: String, ascending: Bool = true, comparison: StringComparison = .plain) {
        self.key = key
        self.ascending = ascending
        self.comparison = comparison
    }

    /// The order of two values of the key's attribute, ascending.
    func compare(_ a: StoreValue, _ b: StoreValue) -> ComparisonResult {
        guard comparison != .plain, case let .string(x) = a, case let .string(y) = b else { return StoreValue.compare(a, b) }
        switch comparison {
        case .plain: return StoreValue.compare(a, b)
        case .caseInsensitive: return x.caseInsensitiveCompare(y)
        case .localized: return x.localizedCompare(y)
        case .localizedCaseInsensitive: return x.localizedCaseInsensitiveCompare(y)
        case .localizedStandard: return x.localizedStandardCompare(y)
        }
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
            let r = k.compare(Self.sortValue(a, k.key), Self.sortValue(b, k.key))
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

    /// The value `key` names on `o`: an attribute of its own, or one reached through to-one
    /// relationships (`author.name`; `.null` past an empty one).
    private static func sortValue(_ o: NSManagedObject, _ key: String) -> StoreValue {
        guard key.contains(".") else { return o.attributeValue(at: checkKey(key, of: o.entity)) }
        checkKey(key, of: o.entity)
        var current = o
        var parts = key.split(separator: ".").map(String.init)
        let element = compositeElement(of: parts, in: o.entity)
        if element != nil { parts.removeLast() }
        for part in parts.dropLast() {
            guard let next = current.value(forKey: part) as? NSManagedObject else { return .null }
            current = next
        }
        let value = current.attributeValue(at: checkKey(parts.last!, of: current.entity))
        guard let element else { return value }
        return element.composite.elementValue(element.name, in: value) ?? .null
    }

    /// The composite attribute and element name a key's last two parts name (`location.latitude`,
    /// `place.location.latitude` through to-ones), or `nil`.
    private static func compositeElement(of parts: [String], in entity: NSEntityDescription)
        -> (composite: NSCompositeAttributeDescription, name: String)?
    {
        guard parts.count >= 2 else { return nil }
        var current = entity
        for part in parts.dropLast(2) {
            guard let i = current.propertyIndex(named: part), let r = current.properties[i] as? NSRelationshipDescription,
                let d = r.destinationEntity
            else { return nil }
            current = d
        }
        guard let i = current.propertyIndex(named: parts[parts.count - 2]),
            let c = current.properties[i] as? NSCompositeAttributeDescription, c.elements.contains(where: { $0.name == parts.last! })
        else { return nil }
        return (c, parts.last!)
    }

    /// The index of attribute `key` of `entity` (for a key through to-one relationships,
    /// `author.name`, the index of the first relationship), or a trap naming both.
    @discardableResult
    static func checkKey(_ key: String, of entity: NSEntityDescription) -> Int {
        var parts = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if compositeElement(of: parts, in: entity) != nil { parts.removeLast() }  // the composite's index
        var current = entity
        var first: Int?
        for (n, part) in parts.enumerated() {
            let last = n == parts.count - 1
            guard let i = current.propertyIndex(named: part) else { badKey(key, entity) }
            if first == nil { first = i }
            if last {
                guard current.properties[i] is NSAttributeDescription else { badKey(key, entity) }
            } else {
                guard let r = current.properties[i] as? NSRelationshipDescription, !r.isToMany, let d = r.destinationEntity else {
                    badKey(key, entity)
                }
                current = d
            }
        }
        return first!
    }

    private static func badKey(_ key: String, _ entity: NSEntityDescription) -> Never {
        programmerError(
            "PersistenceKit: sort key '\(key)' is not an attribute of entity '\(entity.name)' or of one reached through "
                + "to-one relationships. Known attributes: \(entity.attributesByName.keys.sorted().joined(separator: ", ")).")
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
