import Foundation

/// Declares the versioning identifiers of an entity built from its class
/// (``NSManagedObjectModel/init(managedObjectClasses:)``): the entity's and its properties'
/// ``NSEntityDescription/renamingIdentifier`` and ``NSEntityDescription/versionHashModifier``,
/// as the model editor sets them for Core Data.
///
/// ```swift
/// final class Article: NSManagedObject, VersionedEntity {
///     static let renamingIdentifier: String? = "Post"          // was the entity Post
///     static let renamingIdentifiers = ["headline": "title"]     // headline was title
///     static let versionHashModifiers = ["body": "markdown"]     // same type, new meaning
///     @Attribute var headline: String = ""
///     @Attribute var body: String = ""
/// }
/// ```
///
/// Every requirement has a default (none). Names in the dictionaries that are not
/// properties the class itself declares are ignored. A subclass that is a sub-entity
/// inherits the conformance: its entity takes the entity-level values only when they differ
/// from its superclass's.
public protocol VersionedEntity: NSManagedObject {
    /// The entity's name in an earlier model version, or `nil`.
    static var renamingIdentifier: String? { get }
    /// The entity's version hash modifier, or `nil`.
    static var versionHashModifier: String? { get }
    /// Earlier names of properties, by current property name.
    static var renamingIdentifiers: [String: String] { get }
    /// Version hash modifiers of properties, by property name.
    static var versionHashModifiers: [String: String] { get }
}

extension VersionedEntity {
    /// See ``VersionedEntity``: none.
    public static var renamingIdentifier: String? { nil }
    /// See ``VersionedEntity``: none.
    public static var versionHashModifier: String? { nil }
    /// See ``VersionedEntity``: none.
    public static var renamingIdentifiers: [String: String] { [:] }
    /// See ``VersionedEntity``: none.
    public static var versionHashModifiers: [String: String] { [:] }
}

extension NSManagedObjectModel {
    /// Sets what `cls` declares as a ``VersionedEntity`` on `entity` and its own properties.
    static func applyVersioning(of cls: NSManagedObject.Type, to entity: NSEntityDescription) {
        guard let versioned = cls as? any VersionedEntity.Type else { return }
        let parent = _getSuperclass(cls) as? any VersionedEntity.Type
        if versioned.renamingIdentifier != parent?.renamingIdentifier { entity.renamingIdentifier = versioned.renamingIdentifier }
        if versioned.versionHashModifier != parent?.versionHashModifier {
            entity.versionHashModifier = versioned.versionHashModifier
        }
        let renamings = versioned.renamingIdentifiers, modifiers = versioned.versionHashModifiers
        for p in entity.ownProperties {
            if let old = renamings[p.name] { p.renamingIdentifier = old }
            if let modifier = modifiers[p.name] { p.versionHashModifier = modifier }
        }
    }
}
