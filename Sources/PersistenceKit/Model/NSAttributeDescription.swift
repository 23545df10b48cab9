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
        return attributeType.storeValue(from: any)
    }

    /// The Swift value `value(forKey:)` returns for a stored value of this attribute (a
    /// composite's is a `[String: Any]` dictionary).
    func anyValue(from value: StoreValue) -> Any? {
        if attributeType == .compositeAttributeType, let c = self as? NSCompositeAttributeDescription {
            return c.compositeAnyValue(from: value)
        }
        return attributeType.anyValue(from: value)
    }

    override var canonicalDescription: String {
        var s = "attr \(name) \(attributeType.rawValue)"
        if isOptional { s += " opt" }
        if isTransient { s += " transient" }
        if isIndexed { s += " indexed" }
        if let d = defaultStoreValue, !d.isNull { s += " default=\(d)" }
        return s + versioningDescription
    }
}
