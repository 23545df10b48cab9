import Foundation

/// Why a store could not be migrated to a model: names the entity and property involved
/// and what to change. Migration is all or nothing: after this error the store is as it
/// was, at its old version.
public struct MigrationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What stands in the way.
    public enum Kind: Sendable, Equatable {
        /// None of the models the migration could use (the model file's versions, the
        /// staged migration manager's stages) is the one the store was written with.
        case missingSourceModel(storeHash: String)
        /// An attribute's type changed in a way a lightweight migration does not convert
        /// (the types are named).
        case incompatibleType(from: NSAttributeType, to: NSAttributeType)
        /// A stored value does not fit the new type (a narrower integer).
        case valueDoesNotFit(primaryKey: Int64)
        /// A required attribute has no value in a stored object and no default value.
        case requiredWithoutDefault(primaryKey: Int64)
        /// A to-many that became to-one holds more than one object in a stored object.
        case toManyHoldsSeveral(primaryKey: Int64)
        /// A relationship now leads to an entity that is not the old destination (or its
        /// renamed successor).
        case destinationChanged(from: String, to: String)
        /// An attribute became a relationship or the reverse.
        case kindChanged
        /// A staged migration's stages do not lead from the store's model to the current one.
        case invalidStages(String)
        /// A custom stage's handler threw (its error is in ``underlying``).
        case handlerFailed
        /// The store could not be read or written (its error is in ``underlying``).
        case store
    }

    /// What stands in the way.
    public let kind: Kind
    /// The entity involved, if any.
    public let entity: String?
    /// The property involved, if any.
    public let property: String?
    /// A sentence saying what is wrong and what to do.
    public let message: String
    /// The error behind this one, if any (a handler's, the store's).
    public let underlyingDescription: String?

    init(_ kind: Kind, entity: String? = nil, property: String? = nil, _ message: String, underlying: (any Error)? = nil) {
        self.kind = kind
        self.entity = entity
        self.property = property
        self.message = message
        self.underlyingDescription = underlying.map { String(describing: $0) }
    }

    /// A readable summary for logs and messages.
    public var description: String {
        var place = ""
        if let entity { place = " (entity '\(entity)'" + (property.map { ", property '\($0)'" } ?? "") + ")" }
        return "PersistenceKit: migration failed\(place): \(message)" + (underlyingDescription.map { " [\($0)]" } ?? "")
    }
}
