import Foundation

/// Options for an `@Attribute` property.
public enum AttributeOption: Sendable, Hashable {
    /// Keep an index so fetches filtering on the attribute need not scan.
    case indexed
    /// Keep the value in memory only; never save it.
    case transient
    /// No two saved objects of the entity may share the value: declares a single-attribute
    /// uniqueness constraint on the entity (see ``NSEntityDescription/uniquenessConstraints``;
    /// compound constraints are declared with ``UniquenessConstrained``).
    case unique
    /// Keep a deleted object's value in persistent history, in the tombstone of its delete
    /// (``NSAttributeDescription/preservesValueInHistoryOnDeletion``).
    case preservesValueInHistoryOnDeletion
}

/// Declares a persisted attribute on an `NSManagedObject` subclass.
///
/// ```swift
/// final class Note: NSManagedObject {
///     @Attribute var title: String = ""          // required, default ""
///     @Attribute(.indexed) var rank: Int64 = 0   // indexed
///     @Attribute(.unique) var slug: String = ""   // no two notes share a slug
///     @Attribute var due: Date?                  // optional
/// }
/// ```
///
/// The initial value is the attribute's default value in the model; optionality comes from
/// the Swift type. Values live in the object's storage, not in the wrapper: reading and
/// writing go through the object (faulting, change tracking, queue checks).
@propertyWrapper
public struct Attribute<Value: AttributeValue>: ManagedPropertyWrapper {
    /// The wrapper's only storage, as every object holds its wrappers: the declaration (the
    /// default value, the options) is recorded elsewhere while the model is built (see
    /// `PropertyDeclarations`, which also says why; a default value stored here was 16 bytes
    /// and more per attribute per object).
    @usableFromInline var mark: UInt8

    /// The mark of a new wrapper: records the declaration while a prototype is being made
    /// (see `PropertyDeclarations`), else ``PropertyDeclarations/unmarked`` at the cost of
    /// one relaxed load. Option bits: bit 0 indexed, bit 1 transient, bit 2 unique, bit 3 preserved in history,
    /// bit 4 codable storage, bit 5 transformed storage.
    @inlinable @inline(__always)
    static func mark(declaring defaultValue: Value, optionBits: UInt8) -> UInt8 {
        PropertyDeclarations.isRecording
            ? PropertyDeclarations.recordAttribute(defaultValue, optionBits: optionBits) : PropertyDeclarations.unmarked
    }

    // The initializers are @inlinable: they run for every wrapper of every object created
    // or fetched, and called across the module boundary each call looked up the generic
    // metadata of `Attribute<Value>` at run time (measured: a tenth of a 25,000-object fetch).

    /// Declares an attribute whose default value is `wrappedValue`.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOption...) {
        mark = Self.mark(declaring: wrappedValue, optionBits: Self.bits(options))
    }

    /// Declares an attribute whose default value is `wrappedValue`, without options.
    /// (Not variadic: the property initializer runs for every object, and a variadic call
    /// builds an array each time.)
    @inlinable
    public init(wrappedValue: Value) {
        mark = Self.mark(declaring: wrappedValue, optionBits: 0)
    }

    /// Declares an attribute with one option.
    @inlinable
    public init(wrappedValue: Value, _ option: AttributeOption) {
        mark = Self.mark(declaring: wrappedValue, optionBits: Self.bit(option))
    }

    /// Declares an optional attribute with no default value (`@Attribute var due: Date?`).
    @inlinable
    public init() where Value: ExpressibleByNilLiteral {
        mark = Self.mark(declaring: Value(nilLiteral: ()), optionBits: 0)
    }

    /// Unavailable: a non-optional attribute needs an initial value, which becomes its
    /// default value in the model. (Core Data's generated `@NSManaged var count: Int64` has
    /// none; without this the compiler's message was "class has no initializers".)
    @available(
        *, unavailable,
        message: "a non-optional @Attribute needs an initial value, its default value in the model: write `= 0`, `= \"\"`, … or make the type optional"
    )
    public init() {
        preconditionFailure("unavailable")
    }

    /// Unavailable: as ``init()``, with options.
    @available(
        *, unavailable,
        message: "a non-optional @Attribute needs an initial value, its default value in the model: write `= 0`, `= \"\"`, … or make the type optional"
    )
    public init(_ options: AttributeOption...) {
        preconditionFailure("unavailable")
    }

    /// Declares an optional attribute with options and no default value.
    @inlinable
    public init(_ options: AttributeOption...) where Value: ExpressibleByNilLiteral {
        mark = Self.mark(declaring: Value(nilLiteral: ()), optionBits: Self.bits(options))
    }

    /// Declares an optional attribute stored as `storageMethod` says, as CoreDataEvolution's
    /// `@Attribute(storageMethod:)`: `.codable` for a ``CodableAttribute`` type,
    /// `.transformed(name:)` for a ``TransformableAttribute`` one (whose transformer name it
    /// repeats). As there, such attributes are optional and their only default is `nil`.
    /// Building the model traps when the value's type does not adopt the protocol the
    /// storage method needs.
    @inlinable
    public init(wrappedValue: Value = nil, storageMethod: AttributeStorageMethod, _ options: AttributeOption...)
    where Value: ExpressibleByNilLiteral {
        mark = Self.mark(declaring: Value(nilLiteral: ()), optionBits: Self.bits(options) | Self.bits(storageMethod))
    }

    /// Unavailable: `@Attribute` only works on properties of `NSManagedObject` subclasses.
    @available(*, unavailable, message: "@Attribute can only be used on properties of NSManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("@Attribute can only be used on properties of NSManagedObject subclasses") }
        // swiftlint:disable:next unused_setter_value
        set { preconditionFailure("@Attribute can only be used on properties of NSManagedObject subclasses") }
    }

    /// Reads and writes the attribute through the enclosing object.
    @inlinable
    public static subscript<Object: NSManagedObject>(
        _enclosingInstance object: Object,
        wrapped _: ReferenceWritableKeyPath<Object, Value>,
        storage storage: ReferenceWritableKeyPath<Object, Self>
    ) -> Value {
        get {
            let i = NSManagedObject.slot(of: object, storage: storage)
            let stored = object.attributeValue(at: i)
            // A required attribute that is nil (set through setValue) reads as its default.
            return Value(storeValue: stored) ?? declaredDefault(of: object, slot: i)
        }
        set {
            let i = NSManagedObject.slot(of: object, storage: storage)
            object.setAttribute(newValue.storeValue, at: i)
        }
    }

    @usableFromInline
    static func bit(_ option: AttributeOption) -> UInt8 {
        switch option {
        case .indexed: 1
        case .transient: 2
        case .unique: 4
        case .preservesValueInHistoryOnDeletion: 8
        }
    }

    @usableFromInline
    static func bits(_ options: [AttributeOption]) -> UInt8 {
        options.reduce(0) { $0 | bit($1) }
    }

    /// The option bits of a storage method: bit 4 codable, bit 5 transformed (bit 3 is
    /// "preserved in history").
    @usableFromInline
    static func bits(_ method: AttributeStorageMethod) -> UInt8 {
        switch method {
        case .default: 0
        case .codable: 16
        case .transformed: 32
        }
    }

    /// The value a required attribute holding `nil` reads as: the model's default value,
    /// else the default its class declared when a model was built from it in this process.
    /// Never instantiates the class. Traps when neither exists (a hand-built model without a
    /// default for a required attribute that was set to `nil`).
    @usableFromInline @inline(never)
    static func declaredDefault(of object: NSManagedObject, slot i: Int) -> Value {
        let property = object.entity.properties[i]
        // The model's default first: for a model built from the class it is what the class
        // declared, evaluated once when the model was built (a `Date()` default reads the
        // same each time). Not a prototype made here to read the class's declaration: that
        // runs the user's initializer with a blank entity, which can trap.
        if let d = (property as? NSAttributeDescription)?.defaultStoreValue, let value = Value(storeValue: d) { return value }
        if case let .attribute(d, _)? = PropertyDeclarations.recordedDeclarations(of: type(of: object))?[property.name],
            let value = Value(storeValue: d)
        {
            return value
        }
        programmerError(
            "PersistenceKit: '\(object.entity.name).\(property.name)' holds nil, and its model gives it no default of type "
                + "\(Value.self). Rule: a required attribute set to nil must get a value before it is read.")
    }

    @usableFromInline
    func makeDescription(name: String, declaration: PropertyDeclaration) -> NSPropertyDescription {
        let a =
            compositeAttributeType(Value.self).map { NSCompositeAttributeDescription(name: name, elements: compositeElements(of: $0)) }
            ?? NSAttributeDescription(name: name, type: Value.attributeType)
        a.isOptional = Value.isOptionalAttributeValue
        guard case let .attribute(d, optionBits) = declaration else {
            programmerError("PersistenceKit internal error: @Attribute '\(name)' recorded a relationship's declaration")
        }
        a.isIndexed = optionBits & 1 != 0
        a.isTransient = optionBits & 2 != 0
        a.isDeclaredUnique = optionBits & 4 != 0
        a.preservesValueInHistoryOnDeletion = optionBits & 8 != 0
        a.attributeValueClassName = Value.attributeValueClassName
        a.valueTransformerName = Value.valueTransformerName
        a.codableType = Value.codableAttributeType
        if optionBits & 16 != 0 && Value.codableAttributeType == nil {
            programmerError(
                "PersistenceKit: '\(name)' is declared with storageMethod .codable, but \(Value.self) does not adopt "
                    + "CodableAttribute. Rule: a .codable attribute's type adopts CodableAttribute (one line: "
                    + "`extension MyType: CodableAttribute {}`).")
        }
        if optionBits & 32 != 0 && Value.valueTransformerName == nil {
            programmerError(
                "PersistenceKit: '\(name)' is declared with storageMethod .transformed, but \(Value.self) does not adopt "
                    + "TransformableAttribute. Rule: a .transformed attribute's type adopts TransformableAttribute and names "
                    + "its transformer.")
        }
        if !d.isNull { a.defaultValue = a.anyValue(from: d) }
        return a
    }
}
