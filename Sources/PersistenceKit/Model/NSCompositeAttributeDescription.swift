import Foundation

/// Describes a composite attribute (Core Data's, iOS 17 / macOS 14): one attribute made of
/// named element attributes, stored as one value.
///
/// Its ``NSAttributeDescription/attributeType`` is ``NSAttributeType/compositeAttributeType``.
/// `value(forKey:)` reads it as a `[String: Any]` dictionary keyed by element name, each
/// entry of the element's Swift type (an optional element without a value has no entry);
/// `setValue(_:forKey:)` takes such a dictionary (`NSNull` counts as no entry). A required
/// element missing from a dictionary takes the element's default value; without one the
/// dictionary has the wrong shape. Format predicates and sort keys address an element by
/// key path: `location.latitude`.
///
/// Elements are attribute descriptions of the supported scalar types: model validation
/// refuses a composite element, an unsupported type, or an empty or repeated element name
/// with ``ModelError/Kind/invalidCompositeElement(_:)``.
public final class NSCompositeAttributeDescription: NSAttributeDescription, @unchecked Sendable {
    // @unchecked Sendable: same proof as NSPropertyDescription — `elements` is written only
    // before the owning model is sealed (its setter calls `checkMutable()`), and only read
    // afterwards.

    /// The element attributes, in declaration order. Each element's name is its key in the
    /// composite's dictionary; its type, optionality and default value apply to that entry.
    @exclusivity(unchecked) public var elements: [NSAttributeDescription] = [] {
        didSet {
            checkMutable()
            resolveDefault()
        }
    }

    /// Creates a composite attribute description with the given name and elements.
    public init(name: String, elements: [NSAttributeDescription]) {
        super.init(name: name, type: .compositeAttributeType)
        self.elements = elements
    }

    /// Creates an empty composite attribute description, as Core Data's
    /// `NSCompositeAttributeDescription()`; set its name and elements before use.
    public convenience init() {
        self.init(name: "", elements: [])
    }

    override func describe(renaming: Bool) -> String {
        super.describe(renaming: renaming) + " elements[" + elements.map { $0.describe(renaming: renaming) }.joined(separator: ", ") + "]"
    }

    /// The stored form of a dictionary (or `nil`) for this composite; `nil` when the value
    /// is not a dictionary of element values (an unknown key, a value that does not convert
    /// to its element, a required element without a value or default).
    func compositeStoreValue(from any: Any?) -> StoreValue? {
        guard let any, !(any is NSNull) else { return .null }
        if let optional = any as? any _OptionalProtocol {
            guard let wrapped = optional._wrappedAny else { return .null }
            return compositeStoreValue(from: wrapped)
        }
        if let value = any as? any CompositeAttribute {
            // A typed value: its stored form, if it has this composite's shape.
            let stored = value.storeValue
            guard case let .data(d) = stored, let entries = CompositeValueCoding.decode(d) else { return nil }
            return compositeStoreValue(from: entries.mapValues { $0 as Any })
        }
        guard let dictionary = any as? [String: Any] else { return nil }
        var entries: [String: StoreValue] = [:]
        var known = 0
        for element in elements {
            var given = dictionary[element.name]
            if given != nil { known += 1 }
            if given is NSNull { given = nil }
            let converted: StoreValue?
            if let stored = given as? StoreValue {
                converted = element.attributeType.accepts(stored) ? stored : nil
            } else {
                converted = element.storeValue(from: given)
            }
            guard var value = converted else { return nil }
            if value.isNull && !element.isOptional {
                guard let d = element.defaultStoreValue, !d.isNull else { return nil }
                value = d
            }
            if !value.isNull { entries[element.name] = value }
        }
        guard known == dictionary.count else { return nil }  // a key that names no element
        return .data(CompositeValueCoding.encode(entries))
    }

    /// The dictionary `value(forKey:)` returns for a stored value of this composite; `nil`
    /// for `.null` (and for a value that is not a composite's encoding).
    func compositeAnyValue(from value: StoreValue) -> [String: Any]? {
        guard case let .data(d) = value, let entries = CompositeValueCoding.decode(d) else { return nil }
        var result: [String: Any] = [:]
        for element in elements {
            if let v = entries[element.name], let any = element.anyValue(from: v) { result[element.name] = any }
        }
        return result
    }

    /// The stored value of element `name` in the stored composite `value`; `.null` when
    /// absent. `nil` when the composite has no such element.
    func elementValue(_ name: String, in value: StoreValue) -> StoreValue? {
        guard elements.contains(where: { $0.name == name }) else { return nil }
        guard case let .data(d) = value, let entries = CompositeValueCoding.decode(d) else { return .null }
        return entries[name] ?? .null
    }

    /// Checks the elements (see the type's documentation).
    func validateElements(in entity: NSEntityDescription) throws(ModelError) {
        func refuse(_ element: String, _ problem: String) -> ModelError {
            ModelError(
                .invalidCompositeElement(element), entity: entity.name, property: name,
                "element '\(element)' of the composite attribute \(problem)")
        }
        guard !elements.isEmpty else {
            throw ModelError(
                .invalidCompositeElement(""), entity: entity.name, property: name,
                "the composite attribute has no elements; give it at least one element attribute.")
        }
        var names: Set<String> = []
        for e in elements {
            guard !e.name.isEmpty else { throw refuse(e.name, "has an empty name; name every element.") }
            guard names.insert(e.name).inserted else { throw refuse(e.name, "is named twice; element names must be unique.") }
            guard !(e is NSCompositeAttributeDescription), e.attributeType != .compositeAttributeType else {
                throw refuse(e.name, "is itself a composite; composites do not nest.")
            }
            guard e.attributeType.isSupported, e.attributeType != .transformableAttributeType else {
                throw refuse(
                    e.name,
                    "has the type '\(e.attributeType)', which cannot be stored; use one of Integer 16/32/64, Double, "
                        + "Float, Boolean, String, Date, Binary Data, UUID, URI or Decimal.")
            }
            e.resolveDefault()
            guard e.defaultStoreValue != nil else {
                throw refuse(e.name, "has a default value that is not a valid \(e.attributeType) value.")
            }
        }
    }
}
