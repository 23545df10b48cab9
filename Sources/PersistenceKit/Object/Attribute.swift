import Foundation

/// Options for an `@Attribute` property.
public enum AttributeOption: Sendable, Hashable {
    /// Keep an index so fetches filtering on the attribute need not scan.
    case indexed
    /// Keep the value in memory only; never save it.
    case transient
}

/// Declares a persisted attribute on an `NSManagedObject` subclass.
///
/// ```swift
/// final class Note: NSManagedObject {
///     @Attribute var title: String = ""          // required, default ""
///     @Attribute(.indexed) var rank: Int64 = 0   // indexed
///     @Attribute var due: Date?                  // optional
/// }
/// ```
///
/// The initial value is the attribute's default value in the model; optionality comes from
/// the Swift type. Values live in the object's storage, not in the wrapper: reading and
/// writing go through the object (faulting, change tracking, queue checks).
@propertyWrapper
public struct Attribute<Value: AttributeValue>: ManagedPropertyWrapper {
    let defaultValue: Value
    let options: Set<AttributeOption>
    var slot: Int = -1
    var isProbe: Bool = false

    /// Declares an attribute whose default value is `wrappedValue`.
    public init(wrappedValue: Value, _ options: AttributeOption...) {
        self.defaultValue = wrappedValue
        self.options = Set(options)
    }

    /// Declares an optional attribute with no default value (`@Attribute var due: Date?`).
    public init() where Value: ExpressibleByNilLiteral {
        self.defaultValue = nil
        self.options = []
    }

    /// Declares an optional attribute with options and no default value.
    public init(_ options: AttributeOption...) where Value: ExpressibleByNilLiteral {
        self.defaultValue = nil
        self.options = Set(options)
    }

    /// Unavailable: `@Attribute` only works on properties of `NSManagedObject` subclasses.
    @available(*, unavailable, message: "@Attribute can only be used on properties of NSManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("@Attribute can only be used on properties of NSManagedObject subclasses") }
        // swiftlint:disable:next unused_setter_value
        set { preconditionFailure("@Attribute can only be used on properties of NSManagedObject subclasses") }
    }

    /// Reads and writes the attribute through the enclosing object.
    public static subscript<Object: NSManagedObject>(
        _enclosingInstance object: Object,
        wrapped _: ReferenceWritableKeyPath<Object, Value>,
        storage storage: ReferenceWritableKeyPath<Object, Self>
    ) -> Value {
        get {
            let i = NSManagedObject.slot(of: object, storage: storage)
            let stored = object.attributeValue(at: i)
            // A required attribute that is nil (set through setValue) reads as its default.
            return Value(storeValue: stored) ?? object[keyPath: storage].defaultValue
        }
        set {
            let i = NSManagedObject.slot(of: object, storage: storage)
            object.setAttribute(newValue.storeValue, at: i)
        }
    }

    func makeDescription(name: String) -> NSPropertyDescription {
        let a = NSAttributeDescription(name: name, type: Value.attributeType)
        a.isOptional = Value.isOptionalAttributeValue
        a.isIndexed = options.contains(.indexed)
        a.isTransient = options.contains(.transient)
        let d = defaultValue.storeValue
        if !d.isNull { a.defaultValue = Value.attributeType.anyValue(from: d) }
        return a
    }
}
