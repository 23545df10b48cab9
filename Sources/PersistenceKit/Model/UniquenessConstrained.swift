import Foundation

/// Declares the uniqueness constraints of an entity built from its class
/// (``NSManagedObjectModel/init(managedObjectClasses:)``), compound ones among them:
///
/// ```swift
/// final class Edition: NSManagedObject, UniquenessConstrained {
///     static let uniquenessConstraints = [["title", "year"]]   // no two editions share both
///     @Attribute var title: String = ""
///     @Attribute var year: Int64 = 0
///     @Attribute(.unique) var isbn: String = ""               // single-attribute constraint
/// }
/// ```
///
/// The entity's ``NSEntityDescription/uniquenessConstraints`` are its `@Attribute(.unique)`
/// properties (one constraint each), then these. Names that are not persistent attributes
/// of the class make the model builder throw the ``ModelError`` that validation reports.
public protocol UniquenessConstrained: NSManagedObject {
    /// The constraints, each a list of attribute names whose values together must be unique
    /// among the saved objects of the entity.
    static var uniquenessConstraints: [[String]] { get }
}

extension NSManagedObjectModel {
    /// The constraints a class declares: one per `@Attribute(.unique)` of `properties`, then
    /// those of ``UniquenessConstrained``. For the class of a sub-entity
    /// (`inheritsConstraints`), whose `properties` are its own, the protocol's constraints
    /// count only when the class adopts it itself (a subclass inherits the conformance).
    static func uniquenessConstraints(
        of cls: NSManagedObject.Type, properties: [NSPropertyDescription], inheritsConstraints: Bool = false
    ) -> [[Any]] {
        var result: [[Any]] = []
        for case let a as NSAttributeDescription in properties where a.isDeclaredUnique { result.append([a.name]) }
        let adoptsItself = !inheritsConstraints || !(_getSuperclass(cls) is any UniquenessConstrained.Type)
        if adoptsItself, let constrained = cls as? any UniquenessConstrained.Type {
            for constraint in constrained.uniquenessConstraints { result.append(constraint) }
        }
        return result
    }
}
