import Foundation

/// A Swift type that can be the value of an `@Attribute` property.
///
/// PersistenceKit provides conformances for every supported ``NSAttributeType``:
/// `Int16`, `Int32`, `Int64`, `Int` (stored as Integer 64), `Double`, `Float`, `Bool`,
/// `String`, `Date`, `Data`, `UUID`, `URL` (URI), `Decimal`, and `Optional` of each.
/// Structs conforming to ``CompositeAttribute`` are composite attributes. Conforming other
/// types is not supported: the model builder only knows these.
public protocol AttributeValue {
    /// The Core Data attribute type this Swift type is stored as.
    static var attributeType: NSAttributeType { get }
    /// Whether the type admits `nil` (only `Optional` does).
    static var isOptionalAttributeValue: Bool { get }
    /// Reads a value from its stored form; `nil` when the stored value is of another type.
    init?(storeValue: StoreValue)
    /// The stored form of the value.
    var storeValue: StoreValue { get }
    /// For a transformable value (``TransformableAttribute``): its transformer's registered
    /// name; `nil` for every other type.
    static var valueTransformerName: String? { get }
    /// For a value stored in another form than its own (Codable, transformable): the name of
    /// its Swift type; `nil` for every other type.
    static var attributeValueClassName: String? { get }
    /// For a ``CodableAttribute`` type (or an optional of one): that type; `nil` otherwise.
    static var codableAttributeType: (any CodableAttribute.Type)? { get }
}

extension AttributeValue {
    /// See ``AttributeValue``.
    public static var isOptionalAttributeValue: Bool { false }
    /// See ``AttributeValue``: none.
    public static var valueTransformerName: String? { nil }
    /// See ``AttributeValue``: none.
    public static var attributeValueClassName: String? { nil }
    /// See ``AttributeValue``: none.
    public static var codableAttributeType: (any CodableAttribute.Type)? { nil }
}

extension Optional: AttributeValue where Wrapped: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { Wrapped.attributeType }
    /// See ``AttributeValue``.
    public static var isOptionalAttributeValue: Bool { true }
    /// See ``AttributeValue``: the wrapped type's.
    public static var valueTransformerName: String? { Wrapped.valueTransformerName }
    /// See ``AttributeValue``: the wrapped type's.
    public static var attributeValueClassName: String? { Wrapped.attributeValueClassName }
    /// See ``AttributeValue``: the wrapped type's.
    public static var codableAttributeType: (any CodableAttribute.Type)? { Wrapped.codableAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        if case .null = storeValue {
            self = .none
            return
        }
        guard let wrapped = Wrapped(storeValue: storeValue) else { return nil }
        self = .some(wrapped)
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue {
        switch self {
        case let .some(v): v.storeValue
        case .none: .null
        }
    }
}

extension Int16: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .integer16AttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .integer(v) = storeValue, let x = Int16(exactly: v) else { return nil }
        self = x
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .integer(Int64(self)) }
}

extension Int32: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .integer32AttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .integer(v) = storeValue, let x = Int32(exactly: v) else { return nil }
        self = x
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .integer(Int64(self)) }
}

extension Int64: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .integer64AttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .integer(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .integer(self) }
}

extension Int: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .integer64AttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .integer(v) = storeValue, let x = Int(exactly: v) else { return nil }
        self = x
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .integer(Int64(self)) }
}

extension Double: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .doubleAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .double(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .double(self) }
}

extension Float: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .floatAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .float(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .float(self) }
}

extension Bool: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .booleanAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .bool(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .bool(self) }
}

extension String: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .stringAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .string(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .string(self) }
}

extension Date: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .dateAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .date(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .date(self) }
}

extension Data: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .binaryDataAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .data(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .data(self) }
}

extension UUID: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .UUIDAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .uuid(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .uuid(self) }
}

extension URL: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .URIAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .uri(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``. A URL with a base is stored in its absolute form (as Core
    /// Data stores a URI attribute by its absolute string), so that every store and both
    /// fetch paths compare the same value. Stored as given, the in-memory store would match
    /// a relative URL by its absolute string, an in-memory predicate by `URL`'s `==`.
    public var storeValue: StoreValue {
        if baseURL != nil, let absolute = URL(string: absoluteString) { return .uri(absolute) }
        return .uri(self)
    }
}

extension Decimal: AttributeValue {
    /// See ``AttributeValue``.
    public static var attributeType: NSAttributeType { .decimalAttributeType }
    /// See ``AttributeValue``.
    public init?(storeValue: StoreValue) {
        guard case let .decimal(v) = storeValue else { return nil }
        self = v
    }
    /// See ``AttributeValue``.
    public var storeValue: StoreValue { .decimal(self) }
}
