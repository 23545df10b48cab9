import Foundation

/// A Swift struct that is the value of a composite attribute in a model built from classes
/// (``NSManagedObjectModel/init(managedObjectClasses:)``): its stored properties are the
/// composite's elements.
///
/// ```swift
/// struct Location: CompositeAttribute {
///     var latitude: Double
///     var longitude: Double
///     var label: String?   // an optional element
/// }
/// final class Place: NSManagedObject {
///     @Attribute var location: Location = Location(latitude: 0, longitude: 0, label: nil)
/// }
/// ```
///
/// The model gets an ``NSCompositeAttributeDescription`` whose elements are named after
/// the coding keys, in the order the synthesized `init(from:)` decodes them, typed after the
/// properties' types (any ``AttributeValue`` type but a composite; an `Optional` property
/// makes an optional element). Conformance needs only the synthesized `Codable`: the
/// protocol's default implementations store the value through it. A struct with another
/// kind of property (a nested struct, an array, an `Int8`) makes model validation fail
/// with ``ModelError/Kind/invalidCompositeElement(_:)``.
public protocol CompositeAttribute: AttributeValue, Codable {}

extension CompositeAttribute {
    /// Always ``NSAttributeType/compositeAttributeType``.
    public static var attributeType: NSAttributeType { .compositeAttributeType }

    /// Reads the value from its stored form (see ``CompositeAttribute``); `nil` when the
    /// stored value is not a composite's, or lacks a required element.
    public init?(storeValue: StoreValue) {
        guard case let .data(d) = storeValue, let entries = CompositeValueCoding.decode(d),
            let value = try? Self(from: CompositeDecoder(entries: entries))
        else { return nil }
        self = value
    }

    /// The stored form of the value: its elements' values encoded as one `.data` value; `.null`
    /// when the type has elements a composite cannot hold (its model fails validation).
    public var storeValue: StoreValue {
        let encoder = CompositeEncoder(storage: CompositeEncoder.Storage())
        guard (try? encode(to: encoder)) != nil, !encoder.storage.failed else { return .null }
        return .data(CompositeValueCoding.encode(encoder.storage.entries))
    }

    /// The elements the type declares, found by decoding a value with sample element values
    /// and recording each key decoded and its type. A key of a type a composite cannot hold
    /// becomes an element that fails validation.
    static var compositeElements: [NSAttributeDescription] {
        let probe = CompositeDecoder(entries: [:], probe: CompositeDecoder.Probe())
        _ = try? Self(from: probe)
        return probe.probe?.elements ?? []
    }
}

/// The composite type an `@Attribute` value type is, seen through `Optional`; `nil` for
/// other types.
func compositeAttributeType(_ type: Any.Type) -> (any CompositeAttribute.Type)? {
    if let c = type as? any CompositeAttribute.Type { return c }
    if let o = type as? any _OptionalWrappedType.Type { return compositeAttributeType(o.wrappedType) }
    return nil
}

/// Elements of the composite type `type` (opens the existential).
func compositeElements<C: CompositeAttribute>(of type: C.Type) -> [NSAttributeDescription] {
    C.compositeElements
}

/// Lets the model builder see the type inside an `Optional`.
protocol _OptionalWrappedType {
    static var wrappedType: Any.Type { get }
}

extension Optional: _OptionalWrappedType {
    static var wrappedType: Any.Type { Wrapped.self }
}

// MARK: - Encoding

/// Encodes a composite struct's stored properties to element values by key.
final class CompositeEncoder: Encoder {
    /// What the containers write into.
    final class Storage {
        var entries: [String: StoreValue] = [:]
        /// Set when the value has something a composite cannot hold.
        var failed = false
    }

    let storage: Storage
    let codingPath: [any CodingKey] = []
    let userInfo: [CodingUserInfoKey: Any] = [:]

    init(storage: Storage) {
        self.storage = storage
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(CompositeKeyedEncoding<Key>(storage: storage, discarding: false))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        storage.failed = true
        return CompositeRejectingEncoding()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        storage.failed = true
        return CompositeRejectingEncoding()
    }
}

/// The keyed container of ``CompositeEncoder``: each key an element.
private struct CompositeKeyedEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let storage: CompositeEncoder.Storage
    /// A nested container's: its values are not elements, only a failure.
    let discarding: Bool
    var codingPath: [any CodingKey] { [] }

    private func put(_ value: StoreValue, _ key: Key) {
        if discarding { return }
        storage.entries[key.stringValue] = value
    }

    private func reject() throws {
        storage.failed = true
        throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "not a composite element type"))
    }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try reject() }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(value.storeValue, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try reject() }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try reject() }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try reject() }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try reject() }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try reject() }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        guard !(value is any CompositeAttribute), let attribute = value as? any AttributeValue else { return try reject() }
        put(attribute.storeValue, key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        storage.failed = true
        return KeyedEncodingContainer(CompositeKeyedEncoding<NestedKey>(storage: storage, discarding: true))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        storage.failed = true
        return CompositeRejectingEncoding()
    }

    mutating func superEncoder() -> any Encoder {
        storage.failed = true
        return CompositeEncoder(storage: CompositeEncoder.Storage())
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder() }
}

/// A container for what a composite cannot hold: every write throws.
private struct CompositeRejectingEncoding: UnkeyedEncodingContainer, SingleValueEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }

    private func reject() throws {
        throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "not a composite element"))
    }

    mutating func encodeNil() throws { try reject() }
    mutating func encode(_ value: Bool) throws { try reject() }
    mutating func encode(_ value: String) throws { try reject() }
    mutating func encode(_ value: Double) throws { try reject() }
    mutating func encode(_ value: Float) throws { try reject() }
    mutating func encode(_ value: Int) throws { try reject() }
    mutating func encode(_ value: Int8) throws { try reject() }
    mutating func encode(_ value: Int16) throws { try reject() }
    mutating func encode(_ value: Int32) throws { try reject() }
    mutating func encode(_ value: Int64) throws { try reject() }
    mutating func encode(_ value: UInt) throws { try reject() }
    mutating func encode(_ value: UInt8) throws { try reject() }
    mutating func encode(_ value: UInt16) throws { try reject() }
    mutating func encode(_ value: UInt32) throws { try reject() }
    mutating func encode(_ value: UInt64) throws { try reject() }
    mutating func encode<T: Encodable>(_ value: T) throws { try reject() }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let storage = CompositeEncoder.Storage()
        storage.failed = true
        return KeyedEncodingContainer(CompositeKeyedEncoding<NestedKey>(storage: storage, discarding: true))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { CompositeRejectingEncoding() }

    mutating func superEncoder() -> any Encoder {
        let storage = CompositeEncoder.Storage()
        storage.failed = true
        return CompositeEncoder(storage: storage)
    }
}

// MARK: - Decoding

/// Decodes a composite struct from element values by key; as a probe, records the keys
/// decoded and their types, answering with sample values.
final class CompositeDecoder: Decoder {
    /// What a probe records.
    final class Probe {
        var elements: [NSAttributeDescription] = []
        /// Keys asked about with `decodeNil` (an `Optional` property's) and not yet decoded.
        var optionalKeys: Set<String> = []

        func record(_ key: String, _ type: NSAttributeType) {
            guard !elements.contains(where: { $0.name == key }) else { return }
            let element: NSAttributeDescription =
                type == .compositeAttributeType
                ? NSCompositeAttributeDescription(name: key, elements: []) : NSAttributeDescription(name: key, type: type)
            element.isOptional = optionalKeys.remove(key) != nil
            elements.append(element)
        }
    }

    let entries: [String: StoreValue]
    let probe: Probe?
    let codingPath: [any CodingKey] = []
    let userInfo: [CodingUserInfoKey: Any] = [:]

    init(entries: [String: StoreValue], probe: Probe? = nil) {
        self.entries = entries
        self.probe = probe
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(CompositeKeyedDecoding<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "a composite is keyed"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: [], debugDescription: "a composite is keyed"))
    }
}

/// The keyed container of ``CompositeDecoder``.
private struct CompositeKeyedDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: CompositeDecoder
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { decoder.entries.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool {
        decoder.probe != nil || decoder.entries[key.stringValue] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if let probe = decoder.probe {
            probe.optionalKeys.insert(key.stringValue)
            return false  // the probe goes on to learn the type
        }
        return decoder.entries[key.stringValue]?.isNull ?? true
    }

    private func reject(_ key: Key) -> any Error {
        decoder.probe?.record(key.stringValue, .undefinedAttributeType)
        return DecodingError.typeMismatch(Any.self, .init(codingPath: [key], debugDescription: "not a composite element type"))
    }

    /// The value of `key` as `T`, or (probing) a sample of `T`, recorded.
    private func value<T: AttributeValue>(_ type: T.Type, _ key: Key) throws -> T {
        if let probe = decoder.probe {
            probe.record(key.stringValue, T.attributeType)
            guard let sample = T.attributeType.sampleValues?.first, let value = T(storeValue: sample) else { throw reject(key) }
            return value
        }
        guard let stored = decoder.entries[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "no value for the element"))
        }
        guard let value = T(storeValue: stored) else {
            throw DecodingError.typeMismatch(T.self, .init(codingPath: [key], debugDescription: "the element holds \(stored)"))
        }
        return value
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try value(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { throw reject(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try value(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try value(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try value(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { throw reject(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { throw reject(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { throw reject(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { throw reject(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { throw reject(key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if T.self is any CompositeAttribute.Type {
            decoder.probe?.record(key.stringValue, .compositeAttributeType)
            throw DecodingError.typeMismatch(T.self, .init(codingPath: [key], debugDescription: "composites do not nest"))
        }
        guard let attribute = T.self as? any AttributeValue.Type, let result = try value(attribute, key) as? T else {
            throw reject(key)
        }
        return result
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw reject(key)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw reject(key) }
    func superDecoder() throws -> any Decoder { throw DecodingError.typeMismatch(Any.self, .init(codingPath: [], debugDescription: "no superclass")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw reject(key) }
}
