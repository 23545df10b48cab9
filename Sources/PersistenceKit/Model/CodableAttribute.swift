import Foundation

/// How an `@Attribute` stores its values, as CoreDataEvolution's `storageMethod`.
public enum AttributeStorageMethod: Sendable, Hashable {
    /// The value's own attribute type.
    case `default`
    /// Any `Codable` value, encoded as JSON bytes in a Binary Data attribute. The value's
    /// type adopts ``CodableAttribute``.
    case codable
    /// A value stored as the bytes of the ``ValueTransformer`` registered under `name`, in a
    /// Transformable attribute. The value's type adopts ``TransformableAttribute`` and names
    /// the same transformer.
    case transformed(name: String)
}

/// A `Codable` type whose values an `@Attribute` stores as encoded bytes
/// (CoreDataEvolution's `.codable` storage):
///
/// ```swift
/// struct ItemConfig: CodableAttribute {
///     var retryCount = 0
///     var tags: [String] = []
/// }
/// final class Item: NSManagedObject {
///     @Attribute(storageMethod: .codable) var config: ItemConfig? = nil
/// }
/// ```
///
/// The attribute is Binary Data with ``NSAttributeDescription/attributeValueClassName`` the
/// type's name; each value is stored as its JSON encoding (keys sorted, so equal values
/// store equal bytes). Adopting the protocol is the one line a macro would write for you:
/// without one, the attribute's accessors need the conformance to know how to store the
/// type. Predicates and sorts cannot look inside the value.
///
/// Stored bytes that no longer decode (the type changed incompatibly) read as `nil`
/// through the property, as CoreDataEvolution's default decode-failure policy does;
/// ``NSManagedObject/decodedValue(forKey:as:)`` throws ``AttributeDecodingError`` for them
/// instead.
public protocol CodableAttribute: AttributeValue, Codable {}

extension CodableAttribute {
    /// See ``AttributeValue``: Binary Data.
    public static var attributeType: NSAttributeType { .binaryDataAttributeType }
    /// See ``AttributeValue``: the type's name.
    public static var attributeValueClassName: String? { String(describing: Self.self) }
    /// See ``AttributeValue``.
    public static var codableAttributeType: (any CodableAttribute.Type)? { Self.self }

    /// See ``AttributeValue``: `nil` for bytes that do not decode as this type.
    public init?(storeValue: StoreValue) {
        guard case let .data(bytes) = storeValue, let value = try? Self.decodeStored(bytes) else { return nil }
        self = value
    }

    /// See ``AttributeValue``: the value's JSON encoding. Traps when the value does not
    /// encode (its `encode(to:)` throws): it could not be stored.
    public var storeValue: StoreValue {
        do {
            return .data(try CodableAttributeCoding.encoder.encode(self))
        } catch {
            programmerError(
                "PersistenceKit: a \(Self.self) value does not encode (\(error)), so it cannot be stored. Rule: a "
                    + "CodableAttribute value's encode(to:) must succeed.")
        }
    }

    /// Decodes stored bytes, throwing the decoder's error.
    static func decodeStored(_ bytes: Data) throws -> Self {
        try JSONDecoder().decode(Self.self, from: bytes)
    }

    /// The stored form of `any` when it is a value of this type.
    static func storeValue(ofAny any: Any) -> StoreValue? {
        (any as? Self)?.storeValue
    }
}

/// The encoder of ``CodableAttribute`` values: sorted keys, so that equal values store
/// equal bytes (a save compares bytes to tell a change).
enum CodableAttributeCoding {
    static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }
}

/// A type whose values an `@Attribute` stores through a registered ``ValueTransformer``
/// (CoreDataEvolution's `.transformed(name:)` storage, Core Data's Transformable type):
///
/// ```swift
/// struct Color: TransformableAttribute {
///     static let transformerName = "ColorTransformer"
///     var hex: String
/// }
/// final class Swatch: NSManagedObject {
///     @Attribute(storageMethod: .transformed(name: "ColorTransformer")) var color: Color? = nil
/// }
/// ```
///
/// The transformer's `transformedValue(_:)` must return `Data` for a value of the type, and
/// its `reverseTransformedValue(_:)` a value of the type for those bytes. Bytes that no
/// longer transform back read as `nil` through the property;
/// ``NSManagedObject/decodedValue(forKey:as:)`` throws ``AttributeDecodingError`` for them.
public protocol TransformableAttribute: AttributeValue {
    /// The name the value's ``ValueTransformer`` is registered under.
    static var transformerName: String { get }
}

extension TransformableAttribute {
    /// See ``AttributeValue``: Transformable.
    public static var attributeType: NSAttributeType { .transformableAttributeType }
    /// See ``AttributeValue``: ``transformerName``.
    public static var valueTransformerName: String? { transformerName }
    /// See ``AttributeValue``: the type's name.
    public static var attributeValueClassName: String? { String(describing: Self.self) }

    /// See ``AttributeValue``: `nil` for bytes the transformer does not turn into a value of
    /// this type (or when it is not registered).
    public init?(storeValue: StoreValue) {
        guard case let .data(bytes) = storeValue,
            let value = ValueTransformer.valueTransformer(forName: Self.transformerName)?.reverseTransformedValue(bytes) as? Self
        else { return nil }
        self = value
    }

    /// See ``AttributeValue``: the transformer's bytes. Traps when no transformer is
    /// registered under ``transformerName`` or it returns no `Data`.
    public var storeValue: StoreValue {
        guard let transformer = ValueTransformer.valueTransformer(forName: Self.transformerName) else {
            programmerError(
                "PersistenceKit: no ValueTransformer is registered as '\(Self.transformerName)' to store a \(Self.self). Rule: "
                    + "register it with ValueTransformer.setValueTransformer(_:forName:) before using the attribute.")
        }
        guard let bytes = transformer.transformedValue(self) as? Data else {
            programmerError(
                "PersistenceKit: ValueTransformer '\(Self.transformerName)' returned no Data for a \(Self.self) value. Rule: a "
                    + "transformable attribute's transformer turns values into Data.")
        }
        return .data(bytes)
    }
}

/// Stored bytes of a Codable or transformable attribute that no longer decode as its type:
/// thrown by ``NSManagedObject/decodedValue(forKey:as:)``.
public struct AttributeDecodingError: Error, CustomStringConvertible, Sendable {
    /// The entity of the object.
    public let entity: String
    /// The attribute.
    public let key: String
    /// The object whose value does not decode.
    public let objectID: NSManagedObjectID
    /// The Swift type the bytes were to decode as.
    public let valueType: String
    /// Why they do not: the decoder's error, or the transformer's refusal.
    public let reason: String

    /// A readable summary for logs and messages.
    public var description: String {
        "The stored value of '\(entity).\(key)' of \(objectID) does not decode as \(valueType): \(reason). The property "
            + "reads as nil; write a new value to replace the stored bytes, or read them with value(forKey:) on a model "
            + "whose attribute is plain Binary Data to recover them."
    }
}

extension NSManagedObject {
    /// The value of the Codable, transformable or plain attribute `key` as `T`, `nil` when
    /// the attribute holds none; unlike the property, this throws when stored bytes no
    /// longer decode as the type.
    ///
    /// - Throws: ``AttributeDecodingError`` naming the entity, attribute, object and reason.
    ///   Traps when `key` is not an attribute of the entity.
    public func decodedValue<T: AttributeValue>(forKey key: String, as type: T.Type = T.self) throws(AttributeDecodingError) -> T? {
        let i = index(forKey: key, "decodedValue(forKey: \"\(key)\")")
        prepareForAccess("decodedValue(forKey: \"\(key)\")")
        guard entity.properties[i] is NSAttributeDescription else {
            programmerError("PersistenceKit: decodedValue(forKey: \"\(key)\") — '\(entity.name).\(key)' is not an attribute.")
        }
        let stored = attributeValue(at: i)
        if stored.isNull { return nil }
        func failure(_ reason: String) -> AttributeDecodingError {
            AttributeDecodingError(entity: entity.name, key: key, objectID: objectID, valueType: "\(T.self)", reason: reason)
        }
        if let codable = T.codableAttributeType, case let .data(bytes) = stored {
            do {
                guard let value = try codable.decodeStored(bytes) as? T else { throw failure("the decoded value is not a \(T.self)") }
                return value
            } catch let e as AttributeDecodingError {
                throw e
            } catch {
                throw failure("\(error)")
            }
        }
        if let name = T.valueTransformerName, ValueTransformer.valueTransformer(forName: name) == nil {
            throw failure("no ValueTransformer is registered as '\(name)'")
        }
        guard let value = T(storeValue: stored) else {
            throw failure(T.valueTransformerName != nil ? "its transformer does not turn the bytes back into one" : "the stored value is of another type")
        }
        return value
    }
}

extension NSAttributeDescription {
    /// The stored bytes of `any` through the attribute's transformer; `Data` the transformer
    /// does not take, as is; `nil` otherwise (the value does not convert).
    func transformedStoreValue(from any: Any?) -> StoreValue? {
        guard let any, !(any is NSNull) else { return .null }
        if let optional = any as? any _OptionalProtocol {
            guard let wrapped = optional._wrappedAny else { return .null }
            return transformedStoreValue(from: wrapped)
        }
        if let value = any as? any TransformableAttribute { return value.storeValue }
        if let name = valueTransformerName, let transformer = ValueTransformer.valueTransformer(forName: name),
            let bytes = transformer.transformedValue(any) as? Data
        {
            return .data(bytes)
        }
        // Bytes the transformer does not take are taken as stored bytes themselves
        // (`setPrimitiveValue(data, forKey:)` restoring a stored value).
        return (any as? Data).map(StoreValue.data)
    }

    /// The value stored bytes stand for, through the attribute's transformer (`nil` when
    /// they do not transform back).
    func transformedAnyValue(from value: StoreValue) -> Any? {
        guard case let .data(bytes) = value else { return nil }
        guard let name = valueTransformerName, let transformer = ValueTransformer.valueTransformer(forName: name) else { return nil }
        return transformer.reverseTransformedValue(bytes)
    }
}
