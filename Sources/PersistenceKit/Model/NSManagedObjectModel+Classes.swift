import Foundation

extension NSManagedObjectModel {
    /// Builds a model from `NSManagedObject` subclasses that declare their properties with
    /// `@Attribute` and `@Relationship`. Each class becomes an entity named after the class;
    /// properties come from the class and its superclasses, in declaration order. Its
    /// uniqueness constraints are one per `@Attribute(.unique)` property, in declaration
    /// order, then the class's own when it adopts ``UniquenessConstrained``.
    ///
    /// The result equals (`==`) a model built by hand with the same entities and properties.
    ///
    /// - Throws: ``ModelError`` when a class cannot describe an entity, or the model fails
    ///   ``validate()`` (for example a relationship whose destination class is not listed).
    public convenience init(managedObjectClasses: [NSManagedObject.Type]) throws(ModelError) {
        self.init()
        var built: [NSEntityDescription] = []
        for cls in managedObjectClasses {
            let name = String(describing: cls)
            guard cls != NSManagedObject.self else {
                throw ModelError(
                    .unsupportedClass, entity: name,
                    "NSManagedObject itself cannot describe an entity; pass subclasses that declare @Attribute and "
                        + "@Relationship properties.")
            }
            let entity = NSEntityDescription(name: name, managedObjectClass: cls, properties: Self.properties(of: cls))
            entity.uniquenessConstraints = Self.uniquenessConstraints(of: cls, properties: entity.properties)
            built.append(entity)
        }
        self.entities = built
        try validate()
    }

    /// Reads the property wrappers of `cls` (and its superclasses, outermost first) from a
    /// prototype instance that belongs to no context.
    private static func properties(of cls: NSManagedObject.Type) -> [NSPropertyDescription] {
        PropertyDeclarations.declaredProperties(of: cls).map { $0.wrapper.makeDescription(name: $0.name, declaration: $0.declaration) }
    }
}
