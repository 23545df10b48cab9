import Foundation

/// The type of an attribute, with Core Data's case names.
///
/// Supported: the integer, floating-point, decimal, string, Boolean, date, binary data,
/// UUID and URI types, composites of them (``NSCompositeAttributeDescription``), and
/// transformable values stored as bytes through a registered ``ValueTransformer``
/// (``NSAttributeDescription/valueTransformerName``). `undefinedAttributeType` and
/// `objectIDAttributeType` exist so that code naming them compiles; a model that uses them
/// fails validation with ``ModelError``.
public enum NSAttributeType: UInt, Sendable, Hashable, CustomStringConvertible {
    /// No type; a model using it fails validation.
    case undefinedAttributeType = 0
    /// A 16-bit integer (`Int16`).
    case integer16AttributeType = 100
    /// A 32-bit integer (`Int32`).
    case integer32AttributeType = 200
    /// A 64-bit integer (`Int64`, `Int`).
    case integer64AttributeType = 300
    /// A `Decimal`.
    case decimalAttributeType = 400
    /// A `Double`.
    case doubleAttributeType = 500
    /// A `Float`.
    case floatAttributeType = 600
    /// A `String`.
    case stringAttributeType = 700
    /// A `Bool`.
    case booleanAttributeType = 800
    /// A `Date`.
    case dateAttributeType = 900
    /// Binary data (`Data`).
    case binaryDataAttributeType = 1000
    /// A `UUID`.
    case UUIDAttributeType = 1100
    /// A URI (`URL`), stored by its absolute string.
    case URIAttributeType = 1200
    /// Core Data's transformable type: any value, stored as the bytes the attribute's
    /// ``NSAttributeDescription/valueTransformerName`` transformer makes of it (validation
    /// refuses one without a transformer name).
    case transformableAttributeType = 1800
    /// Core Data's object ID type: not supported (validation refuses it).
    case objectIDAttributeType = 2000
    /// A composite of element attributes (``NSCompositeAttributeDescription``), stored as
    /// one value and read as a `[String: Any]` dictionary keyed by element name.
    case compositeAttributeType = 2100

    /// Whether PersistenceKit can store values of this type.
    public var isSupported: Bool {
        switch self {
        case .undefinedAttributeType, .objectIDAttributeType: false
        default: true
        }
    }

    /// A readable summary for logs and messages.
    public var description: String {
        switch self {
        case .undefinedAttributeType: "Undefined"
        case .integer16AttributeType: "Integer 16"
        case .integer32AttributeType: "Integer 32"
        case .integer64AttributeType: "Integer 64"
        case .decimalAttributeType: "Decimal"
        case .doubleAttributeType: "Double"
        case .floatAttributeType: "Float"
        case .stringAttributeType: "String"
        case .booleanAttributeType: "Boolean"
        case .dateAttributeType: "Date"
        case .binaryDataAttributeType: "Binary Data"
        case .UUIDAttributeType: "UUID"
        case .URIAttributeType: "URI"
        case .transformableAttributeType: "Transformable"
        case .objectIDAttributeType: "Object ID"
        case .compositeAttributeType: "Composite"
        }
    }

    /// Whether `value` is a valid stored value for this type (`.null` always is; optionality
    /// is checked by validation, not here).
    func accepts(_ value: StoreValue) -> Bool {
        switch (self, value) {
        case (_, .null): true
        case let (.integer16AttributeType, .integer(v)): Int16(exactly: v) != nil
        case let (.integer32AttributeType, .integer(v)): Int32(exactly: v) != nil
        case (.integer64AttributeType, .integer): true
        case (.decimalAttributeType, .decimal): true
        case (.doubleAttributeType, .double): true
        case (.floatAttributeType, .float): true
        case (.stringAttributeType, .string): true
        case (.booleanAttributeType, .bool): true
        case (.dateAttributeType, .date): true
        case (.binaryDataAttributeType, .data): true
        case (.UUIDAttributeType, .uuid): true
        case (.URIAttributeType, .uri): true
        case (.compositeAttributeType, .data): true
        case (.transformableAttributeType, .data): true
        default: false
        }
    }

    /// A few values of this type, as stored, chosen to expose common computed properties
    /// (a sign, a case change, an empty-string default, rounding, clamping, trimming,
    /// normalization); `nil` for unsupported
    /// types. Used to check what a key path reads
    /// (`NSEntityDescription.attributeIndex(forKeyPath:)`).
    var sampleValues: [StoreValue]? {
        func date(_ t: Double) -> StoreValue { .date(Date(timeIntervalSinceReferenceDate: t)) }
        func uuid(_ last: UInt8) -> StoreValue { .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last))) }
        return switch self {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            [.integer(-3), .integer(0), .integer(5), .integer(32_001), .integer(-32_002)]
        case .decimalAttributeType: [.decimal(-3), .decimal(0), .decimal(Decimal(string: "5.5")!)]
        case .doubleAttributeType: [.double(-2.5), .double(0), .double(7.25), .double(123_456.5)]
        case .floatAttributeType: [.float(-2.5), .float(0), .float(7.25), .float(12_345.5)]
        case .stringAttributeType: [.string(""), .string("Ab"), .string("b"), .string(" Ébc "), .string("a\u{301}")]
        case .booleanAttributeType: [.bool(false), .bool(true), .bool(false)]
        case .dateAttributeType: [date(-1.5), date(0), date(5), date(1e9 + 0.5)]
        case .binaryDataAttributeType: [.data(Data()), .data(Data([3])), .data(Data([5, 0]))]
        case .UUIDAttributeType: [uuid(0), uuid(3), uuid(5)]
        case .URIAttributeType: [.uri(URL(string: "x-sample:a")!), .uri(URL(string: "x-sample:B")!), .uri(URL(string: "http://x.invalid/c")!)]
        case .undefinedAttributeType, .transformableAttributeType, .objectIDAttributeType, .compositeAttributeType: nil
        }
    }

    /// Converts an untyped Swift value (as passed to `setValue(_:forKey:)`) into a stored
    /// value of this type. Returns `nil` when the value cannot represent this type exactly.
    func storeValue(from any: Any?) -> StoreValue? {
        guard let any else { return .null }
        if let optional = any as? any _OptionalProtocol {
            guard let wrapped = optional._wrappedAny else { return .null }
            return storeValue(from: wrapped)
        }
        func integer(_ v: Any) -> Int64? {
            switch v {
            case let i as Int: Int64(i)
            case let i as Int16: Int64(i)
            case let i as Int32: Int64(i)
            case let i as Int64: i
            case let i as Int8: Int64(i)
            case let i as UInt8: Int64(i)
            case let i as UInt16: Int64(i)
            case let i as UInt32: Int64(i)
            case let i as UInt: Int64(exactly: i)
            case let i as UInt64: Int64(exactly: i)
            case let n as NSNumber:
                // Exactly, or not at all: `int64Value` alone cuts 3.7 to 3 without a word.
                n.compare(NSNumber(value: n.int64Value)) == .orderedSame ? n.int64Value : nil
            default: nil
            }
        }
        let candidate: StoreValue?
        switch self {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            candidate = integer(any).map(StoreValue.integer)
        case .doubleAttributeType:
            switch any {
            case let d as Double: candidate = .double(d)
            case let f as Float: candidate = .double(Double(f))
            case let n as NSNumber: candidate = .double(n.doubleValue)
            default: candidate = integer(any).map { .double(Double($0)) }
            }
        case .floatAttributeType:
            switch any {
            case let f as Float: candidate = .float(f)
            case let d as Double: candidate = .float(Float(d))
            case let n as NSNumber: candidate = .float(n.floatValue)
            default: candidate = integer(any).map { .float(Float($0)) }
            }
        case .decimalAttributeType:
            switch any {
            case let d as Decimal: candidate = .decimal(d)
            default: candidate = integer(any).map { .decimal(Decimal($0)) }
            }
        case .booleanAttributeType:
            switch any {
            case let b as Bool: candidate = .bool(b)
            default: candidate = nil
            }
        case .stringAttributeType: candidate = (any as? String).map(StoreValue.string)
        case .dateAttributeType: candidate = (any as? Date).map(StoreValue.date)
        case .binaryDataAttributeType: candidate = (any as? Data).map(StoreValue.data)
        case .UUIDAttributeType: candidate = (any as? UUID).map(StoreValue.uuid)
        case .URIAttributeType: candidate = (any as? URL)?.storeValue  // absolute, as the typed property stores it
        case .undefinedAttributeType, .transformableAttributeType, .objectIDAttributeType, .compositeAttributeType:
            candidate = nil  // a composite converts through its description's elements
        }
        guard let candidate, accepts(candidate) else { return nil }
        return candidate
    }

    /// Converts a stored value to the Swift value `value(forKey:)` returns for this type.
    func anyValue(from value: StoreValue) -> (any Sendable)? {
        switch value {
        case .null: return nil
        case let .integer(v):
            switch self {
            case .integer16AttributeType: return Int16(truncatingIfNeeded: v)
            case .integer32AttributeType: return Int32(truncatingIfNeeded: v)
            default: return v
            }
        case let .double(v): return v
        case let .float(v): return v
        case let .bool(v): return v
        case let .string(v): return v
        case let .date(v): return v
        case let .data(v): return v
        case let .uuid(v): return v
        case let .uri(v): return v
        case let .decimal(v): return v
        case .reference, .references: return nil
        }
    }
}

/// Lets untyped code see through `Optional` values boxed in `Any`.
protocol _OptionalProtocol {
    var _wrappedAny: Any? { get }
}

extension Optional: _OptionalProtocol {
    var _wrappedAny: Any? {
        switch self {
        case let .some(v): v
        case .none: nil
        }
    }
}
