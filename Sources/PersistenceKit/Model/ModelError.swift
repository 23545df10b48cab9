import Foundation

/// A problem found when a model is checked: names the entity, the property where there is
/// one, and what to change.
public struct ModelError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong.
    public enum Kind: Sendable, Equatable {
        /// An entity or property has an empty name.
        case emptyName
        /// Two entities share a name.
        case duplicateEntity
        /// Two properties of one entity share a name.
        case duplicateProperty
        /// The attribute type cannot be stored (undefined, object ID, transformable without a
        /// transformer name).
        case unsupportedType(NSAttributeType)
        /// The default value does not convert to the attribute type.
        case invalidDefaultValue
        /// A relationship's destination entity is not in the model (or not set).
        case unknownDestination(String)
        /// An entity's sub-entity (named) is not in the model.
        case unknownSubentity(String)
        /// A relationship has no inverse.
        case missingInverse
        /// The named inverse does not exist on the destination entity.
        case unknownInverse(String)
        /// The inverse does not point back at this relationship.
        case mismatchedInverse(String)
        /// `minCount` / `maxCount` are inconsistent, or a to-one has counts other than 0...1.
        case invalidCount
        /// A class given to the model builder cannot describe an entity.
        case unsupportedClass
        /// A uniqueness constraint names no property.
        case emptyUniquenessConstraint
        /// A uniqueness constraint names a property the entity does not have (or holds
        /// something that is neither a name nor an attribute description).
        case unknownConstraintProperty(String)
        /// A uniqueness constraint names a relationship; only attributes can be constrained.
        case relationshipInConstraint(String)
        /// A uniqueness constraint names a transient attribute, which the store never holds.
        case transientAttributeInConstraint(String)
        /// A derived attribute's expression (shown) is not one PersistenceKit computes.
        case invalidDerivation(String)
        /// An element of a composite attribute (named) cannot be stored in one: a composite,
        /// a type that is not supported, an empty or repeated name, or an invalid default.
        case invalidCompositeElement(String)
    }

    /// What is wrong.
    public let kind: Kind
    /// The entity involved.
    public let entity: String
    /// The property involved, if any.
    public let property: String?
    /// A sentence saying what is wrong and what to do.
    public let message: String

    init(_ kind: Kind, entity: String, property: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.property = property
        self.message = message
    }

    /// A readable summary for logs and messages.
    public var description: String {
        let place = property.map { "\(entity).\($0)" } ?? entity
        return "Invalid model at \(place): \(message)"
    }
}
