import Foundation

/// An attribute whose value is computed from other values of its object, as Core Data's:
/// here the number of objects in a to-many relationship (`books.@count`) or the sum of an
/// attribute over them (`books.@sum.pages`). The context computes it when the object — or,
/// for a sum, an object it sums over — is saved, so saved objects and fetches see the
/// current value, and predicates and sorts can use it as any attribute. Setting it yourself
/// has no lasting effect: the next save computes it again.
///
/// ```swift
/// let count = NSDerivedAttributeDescription(name: "bookCount", type: .integer64AttributeType)
/// count.derivationExpression = NSExpression(forKeyPath: "books.@count")
/// ```
///
/// From classes, declare the attribute as usual and name its derivation with
/// ``DerivedAttributes``. An expression other than those two forms (or `count:(books)` and
/// `sum:(books.pages)`) is a ``ModelError`` when the model is checked.
public final class NSDerivedAttributeDescription: NSAttributeDescription, @unchecked Sendable {
    // @unchecked Sendable: same proof as NSPropertyDescription (immutable once sealed).

    /// The expression the value is derived from: `relationship.@count` or
    /// `relationship.@sum.attribute` over a to-many relationship of the entity (or the
    /// function forms `count:(relationship)` and `sum:(relationship.attribute)`).
    public var derivationExpression: FetchExpression? {
        didSet { checkMutable() }
    }

    /// The resolved derivation (sealed models only; set by validation).
    var derivation: Derivation?

    /// What a derived attribute computes, resolved against its entity.
    enum Derivation {
        /// The number of objects in to-many slot `relationship`.
        case count(relationship: Int)
        /// The sum of attribute slot `attribute` of the objects in to-many slot `relationship`.
        case sum(relationship: Int, attribute: Int)

        var relationship: Int {
            switch self {
            case let .count(r), let .sum(r, _): r
            }
        }
    }

    override func describe(renaming: Bool) -> String {
        super.describe(renaming: renaming) + " derived=\(derivationExpression?.description ?? "nil")"
    }

    /// The relationship and attribute names the expression reads, and whether it sums.
    var derivationParts: (relationship: String, attribute: String?)? {
        guard let expression = derivationExpression else { return nil }
        if let keyPath = expression.keyPath {
            let parts = keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            if parts.count == 2, parts[1] == "@count" { return (parts[0], nil) }
            if parts.count == 3, parts[1] == "@sum" { return (parts[0], parts[2]) }
            return nil
        }
        guard let function = expression.function, let argument = expression.arguments?.first?.keyPath,
            expression.arguments?.count == 1
        else { return nil }
        let parts = argument.split(separator: ".").map(String.init)
        if function == "count:", parts.count == 1 { return (parts[0], nil) }
        if function == "sum:", parts.count == 2 { return (parts[0], parts[1]) }
        return nil
    }

    /// Resolves the expression against `entity`, or says why it cannot be.
    func resolveDerivation(in entity: NSEntityDescription) throws(ModelError) {
        func refuse(_ why: String) -> ModelError {
            ModelError(
                .invalidDerivation(derivationExpression?.description ?? "nil"), entity: entity.name, property: name,
                "the derivation expression \(why); write `relationship.@count` or `relationship.@sum.attribute` over a "
                    + "to-many relationship of '\(entity.name)'.")
        }
        guard let (relationshipName, attributeName) = derivationParts else { throw refuse("is not a supported form") }
        guard let r = entity.relationshipsByName[relationshipName], r.isToMany, let destination = r.destinationEntity,
            let ri = entity.propertyIndex(named: relationshipName)
        else { throw refuse("does not start with a to-many relationship") }
        guard let attributeName else {
            derivation = .count(relationship: ri)
            return
        }
        guard let a = destination.attributesByName[attributeName], let ai = destination.propertyIndex(named: attributeName),
            [.integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .doubleAttributeType, .floatAttributeType,
             .decimalAttributeType].contains(a.attributeType)
        else { throw refuse("does not sum a numeric attribute of '\(destination.name)'") }
        derivation = .sum(relationship: ri, attribute: ai)
    }

    /// The derived value for `object`, converted to the attribute's type.
    func derivedValue(of object: NSManagedObject) -> StoreValue {
        guard let derivation else { return .null }
        switch derivation {
        case let .count(r):
            return attributeType.storeValue(from: Int64(object.toManyCount(at: r))) ?? .null
        case let .sum(r, a):
            var integer: Int64 = 0, double = 0.0, decimal = Decimal(0)
            var kind = 0  // 0 integer, 1 floating point, 2 decimal
            for target in object.resolvedToManyLoadingTargets(at: r) {
                switch target.attributeValue(at: a) {
                case let .integer(v): integer &+= v
                case let .double(v): double += v; kind = max(kind, 1)
                case let .float(v): double += Double(v); kind = max(kind, 1)
                case let .decimal(v): decimal += v; kind = 2
                default: break
                }
            }
            let total: Any =
                switch kind {
                case 2: decimal + Decimal(integer) + Decimal(double)
                case 1: double + Double(integer)
                default: integer
                }
            return attributeType.storeValue(from: total) ?? .null
        }
    }
}

/// Names the derivations of an entity built from its class
/// (``NSManagedObjectModel/init(managedObjectClasses:)``): each named `@Attribute` becomes
/// an ``NSDerivedAttributeDescription`` with that expression.
///
/// ```swift
/// final class Author: NSManagedObject, DerivedAttributes {
///     static let derivedAttributes = ["bookCount": NSExpression(forKeyPath: "books.@count"),
///                                     "pageTotal": NSExpression(forKeyPath: "books.@sum.pages")]
///     @Relationship(inverse: "author") var books: Set<Book>
///     @Attribute var bookCount: Int64 = 0
///     @Attribute var pageTotal: Int64 = 0
/// }
/// ```
public protocol DerivedAttributes: NSManagedObject {
    /// The derivation expression of each derived attribute, by attribute name.
    static var derivedAttributes: [String: FetchExpression] { get }
}

extension NSManagedObjectModel {
    /// `properties` with the attributes `cls` names in ``DerivedAttributes`` made derived.
    static func applyingDerivations(of cls: NSManagedObject.Type, to properties: [NSPropertyDescription]) -> [NSPropertyDescription] {
        guard let derived = (cls as? any DerivedAttributes.Type)?.derivedAttributes, !derived.isEmpty else { return properties }
        return properties.map { p in
            guard let a = p as? NSAttributeDescription, let expression = derived[a.name] else { return p }
            let d = NSDerivedAttributeDescription(name: a.name, type: a.attributeType)
            d.isOptional = a.isOptional
            d.isIndexed = a.isIndexed
            d.isTransient = a.isTransient
            d.defaultValue = a.defaultValue
            d.derivationExpression = expression
            return d
        }
    }
}

extension NSManagedObjectContext {
    /// Computes the derived attributes of the objects this save writes, and of the objects
    /// whose sums read a changed object (through the inverse of the summed relationship).
    /// Does nothing for a model without derived attributes.
    func updateDerivedAttributes() {
        guard coordinator.managedObjectModel.hasDerivedAttributes else { return }
        var owners: [ObjectIdentifier: NSManagedObject] = [:]
        func consider(_ o: NSManagedObject) {
            if !o.entity.derivedSlots.isEmpty && !o.flags.contains(.deleted) { owners[ObjectIdentifier(o)] = o }
        }
        var changed = insertions.objects
        changed += updatedSet
        for o in changed {
            consider(o)
            for slot in o.entity.derivationSources {
                if o.relationship(at: slot).isToMany {
                    for owner in o.resolvedToMany(at: slot) { consider(owner) }
                } else if let owner = o.resolvedToOne(at: slot) {
                    consider(owner)
                }
            }
        }
        for o in owners.values {
            for (slot, description) in o.entity.derivedSlots {
                let value = description.derivedValue(of: o)
                if !o.attributeValue(at: slot).isSame(as: value) { o.setAttribute(value, at: slot) }
            }
        }
        processPendingChanges()
    }
}
