import Foundation

/// A constant of a predicate, keeping the Swift type it was written or passed as.
enum PredicateValue: Sendable, Hashable {
    /// `nil`, `NULL`, or `nil`/`NSNull()` passed as `%@`.
    case null
    case string(String)
    /// Integer literals and integers passed as `%d`, `%@`, ... (unsigned values above
    /// `Int64.max` become ``decimal(_:)``).
    case integer(Int64)
    /// Decimal literals (`2.5`, `1e3`) and `Double`/`Float` arguments.
    case double(Double)
    /// `YES`, `NO`, `TRUE`, `FALSE`, or a `Bool` argument.
    case bool(Bool)
    case date(Date)
    case uuid(UUID)
    case url(URL)
    case data(Data)
    case decimal(Decimal)
    /// A managed object or object ID passed as `%@`, held by the object's ID when the
    /// predicate was made (`Sendable`, and what a store compares).
    case object(NSManagedObjectID)
    /// An array or set passed as `%@`, or a `{...}` literal of constants.
    case collection([PredicateValue])

    /// The constant a format argument or a substitution variable's value stands for; `nil`
    /// for a type a predicate cannot hold.
    init?(argument: Any?) {
        guard let argument else {
            self = .null
            return
        }
        // Before the casts below: an `NSNumber` also casts to `Bool` and to each integer type.
        if let n = argument as? NSNumber, type(of: argument) is NSNumber.Type {
            self = Self.number(n)
            return
        }
        switch argument {
        case is NSNull: self = .null
        case let v as String: self = .string(v)
        case let v as NSString: self = .string(String(describing: v))
        case let v as Substring: self = .string(String(v))
        case let v as Bool: self = .bool(v)
        case let v as Int: self = .integer(Int64(v))
        case let v as Int64: self = .integer(v)
        case let v as Int32: self = .integer(Int64(v))
        case let v as Int16: self = .integer(Int64(v))
        case let v as Int8: self = .integer(Int64(v))
        case let v as UInt: self = Self.unsigned(UInt64(v))
        case let v as UInt64: self = Self.unsigned(v)
        case let v as UInt32: self = .integer(Int64(v))
        case let v as UInt16: self = .integer(Int64(v))
        case let v as UInt8: self = .integer(Int64(v))
        case let v as Double: self = .double(v)
        case let v as Float: self = .double(Double(v))
        case let v as Decimal: self = .decimal(v)
        case let v as Date: self = .date(v)
        case let v as UUID: self = .uuid(v)
        case let v as URL: self = .url(v)
        case let v as Data: self = .data(v)
        case let v as NSManagedObject: self = .object(v.objectID)
        case let v as NSManagedObjectID: self = .object(v)
        case let v as PredicateValue: self = v
        case let v as any _OptionalProtocol:
            guard let wrapped = v._wrappedAny else {
                self = .null
                return
            }
            guard let value = PredicateValue(argument: wrapped) else { return nil }
            self = value
        default:
            guard let elements = Self.elements(of: argument) else { return nil }
            var values: [PredicateValue] = []
            for e in elements {
                guard let v = PredicateValue(argument: e) else { return nil }
                values.append(v)
            }
            self = .collection(values)
        }
    }

    private static func unsigned(_ v: UInt64) -> PredicateValue {
        v <= UInt64(Int64.max) ? .integer(Int64(v)) : .decimal(Decimal(v))
    }

    private static func number(_ n: NSNumber) -> PredicateValue {
        if n.doubleValue == Double(n.int64Value) { return .integer(n.int64Value) }
        return .double(n.doubleValue)
    }

    /// The elements of an array or set of any element type, or `nil` for other values.
    static func elements(of value: Any) -> [Any]? {
        if let a = value as? [Any] { return a }
        if let s = value as? Set<AnyHashable> { return Array(s) }
        if let s = value as? NSSet { return s.allObjects }
        if let a = value as? NSArray { return a.map { $0 } }
        return nil
    }

    /// A name for `value`'s type in messages.
    static func typeName(of value: Any?) -> String {
        guard let value else { return "nil" }
        return String(describing: type(of: value))
    }
}
