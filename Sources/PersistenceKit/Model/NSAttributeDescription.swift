import Foundation

/// Describes one attribute of an entity: its name, type, optionality, default value, and
/// whether it is transient or indexed.
public class NSAttributeDescription: NSPropertyDescription, @unchecked Sendable {
    // @unchecked Sendable: same proof as NSPropertyDescription (immutable once sealed).

    /// The attribute's storage type.
    @exclusivity(unchecked) public var attributeType: NSAttributeType = .undefinedAttributeType {
        // A default set before the type converts again under the type, so that the order of
        // the two setters does not change the model.
        didSet {
            checkMutable()
            resolveDefault()
        }
    }

    /// Whether fetches may use an index on this attribute. The in-memory store scans; the
    /// file store keeps an index for attributes marked indexed.
    @exclusivity(unchecked) public var isIndexed: Bool = false {
        didSet { checkMutable() }
    }

    /// Whether a deleted object's value of this attribute stays in persistent history, in
    /// the tombstone of the delete's ``NSPersistentHistoryChange`` (as Core Data's property of
    /// this name). Default `false`. Only stores that track history (see
    /// ``NSPersistentHistoryTrackingKey``) record it.
    @exclusivity(unchecked) public var preservesValueInHistoryOnDeletion: Bool = false {
        didSet { checkMutable() }
    }

    /// Whether `@Attribute(.unique)` declared the attribute: the model builder turns it into
    /// a single-attribute constraint of the entity. Not part of the description's content
    /// (the entity's ``NSEntityDescription/uniquenessConstraints`` are).
    @exclusivity(unchecked) var isDeclaredUnique = false

    /// The value a newly inserted object starts with, or `nil`. Must be of a Swift type
    /// that converts to ``attributeType`` (for example `Int`, `Int64` or `Int16` for an
    /// integer type); a value that does not convert makes model validation fail.
    public var defaultValue: Any? {
        get { defaultStoreValue.flatMap { anyValue(from: $0) } ?? rawDefault }
        set {
            checkMutable()
            rawDefault = newValue
            defaultStoreValue = storeValue(from: newValue)
        }
    }

    /// For a transformable attribute: the name under which its ``ValueTransformer`` is
    /// registered (``ValueTransformer/setValueTransformer(_:forName:)``). The transformer's
    /// `transformedValue(_:)` makes the stored bytes of a value, and
    /// `reverseTransformedValue(_:)` the value again. Part of the model's equality.
    @exclusivity(unchecked) public var valueTransformerName: String? {
        didSet { checkMutable() }
    }

    /// The name of the Swift type of the attribute's values, for attributes whose values are
    /// not of the attribute type itself: a transformable attribute's, or a Codable value
    /// stored as binary data (``CodableAttribute``). `nil` otherwise. Part of the model's
    /// equality.
    @exclusivity(unchecked) public var attributeValueClassName: String? {
        didSet { checkMutable() }
    }

    /// For an attribute declared with a ``CodableAttribute`` type: that type, so that
    /// `value(forKey:)` and `setValue(_:forKey:)` take and give its values. Not part of the
    /// description's content (``attributeValueClassName`` names it).
    var codableType: (any CodableAttribute.Type)?

    /// The default value as given, kept to report it when it does not convert.
    private var rawDefault: Any?

    /// The default value in stored form (`.null` when there is none); `nil` when the given
    /// default does not convert to the attribute type.
    @exclusivity(unchecked) var defaultStoreValue: StoreValue? = .null

    /// Creates an attribute description with the given name; set its type and options
    /// before adding it to an entity.
    public init(name: String = "", type: NSAttributeType = .undefinedAttributeType) {
        super.init(name: name)
        self.attributeType = type
    }

    /// Creates an empty attribute description, as Core Data's `NSAttributeDescription()`.
    public convenience init() {
        self.init(name: "")
    }

    /// Re-derives the stored default after the type changed (the default may have been set
    /// before the type).
    func resolveDefault() {
        defaultStoreValue = storeValue(from: rawDefault)
    }

    /// Converts an untyped Swift value to this attribute's stored form; `nil` when it does
    /// not convert (a composite converts a dictionary through its elements).
    func storeValue(from any: Any?) -> StoreValue? {
        if attributeType == .compositeAttributeType, let c = self as? NSCompositeAttributeDescription {
            return c.compositeStoreValue(from: any)
        }
        if attributeType == .transformableAttributeType { return transformedStoreValue(from: any) }
        if let codableType, let any, !(any is Data) {
            if let optional = any as? any _OptionalProtocol {
                guard let wrapped = optional._wrappedAny else { return .null }
                return storeValue(from: wrapped)
            }
            return codableType.storeValue(ofAny: any)
        }
        return attributeType.storeValue(from: any)
    }

    /// The Swift value `value(forKey:)` returns for a stored value of this attribute (a
    /// composite's is a `[String: Any]` dictionary).
    func anyValue(from value: StoreValue) -> Any? {
        if attributeType == .compositeAttributeType, let c = self as? NSCompositeAttributeDescription {
            return c.compositeAnyValue(from: value)
        }
        if attributeType == .transformableAttributeType { return transformedAnyValue(from: value) }
        if let codableType, case let .data(bytes) = value { return try? codableType.decodeStored(bytes) }
        return attributeType.anyValue(from: value)
    }

    override func describe(renaming: Bool) -> String {
        var s = "attr \(name) \(attributeType.rawValue)"
        if isOptional { s += " opt" }
        if isTransient { s += " transient" }
        if isIndexed { s += " indexed" }
        if let d = defaultStoreValue, !d.isNull { s += " default=\(d)" }
        if let valueTransformerName { s += " transformer=\(valueTransformerName)" }
        if let attributeValueClassName { s += " class=\(attributeValueClassName)" }
        return s + versioningDescription(renaming: renaming)
    }
}
