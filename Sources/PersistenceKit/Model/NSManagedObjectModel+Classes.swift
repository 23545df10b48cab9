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
        let listed = Set(managedObjectClasses.map { ObjectIdentifier($0) })
        var built: [NSEntityDescription] = []
        var entityOfClass: [ObjectIdentifier: NSEntityDescription] = [:]
        var parents: [(entity: NSEntityDescription, parentClass: ObjectIdentifier)] = []
        for cls in managedObjectClasses {
            let name = String(describing: cls)
            guard cls != NSManagedObject.self else {
                throw ModelError(
                    .unsupportedClass, entity: name,
                    "NSManagedObject itself cannot describe an entity; pass subclasses that declare @Attribute and "
                        + "@Relationship properties.")
            }
            // The nearest listed superclass is the super-entity: the properties it and its
            // own superclasses declare are inherited from it, not declared again.
            let ancestors = Self.superclasses(of: cls)
            let parentIndex = ancestors.firstIndex { listed.contains($0) }
            let inheritedFrom = parentIndex.map { Set(ancestors[$0...]) } ?? []
            let own = PropertyDeclarations.declaredProperties(of: cls).filter { !inheritedFrom.contains($0.declaringClass) }
            let entity = NSEntityDescription(
                name: name, managedObjectClass: cls,
                properties: Self.applyingDerivations(
                    of: cls, to: own.map { $0.wrapper.makeDescription(name: $0.name, declaration: $0.declaration) }))
            entity.isAbstract = Self.declaresAbstract(cls)
            Self.applyVersioning(of: cls, to: entity)
            entity.uniquenessConstraints = Self.uniquenessConstraints(
                of: cls, properties: entity.properties, inheritsConstraints: parentIndex != nil)
            if let parentIndex { parents.append((entity, ancestors[parentIndex])) }
            entityOfClass[ObjectIdentifier(cls)] = entity
            built.append(entity)
        }
        for (entity, parentClass) in parents {
            entityOfClass[parentClass]?.subentities.append(entity)
        }
        self.entities = built
        try validate()
    }

    /// The superclasses of `cls` below `NSManagedObject`, nearest first.
    static func superclasses(of cls: NSManagedObject.Type) -> [ObjectIdentifier] {
        var result: [ObjectIdentifier] = []
        var next: AnyClass? = _getSuperclass(cls)
        while let c = next, c != NSManagedObject.self {
            result.append(ObjectIdentifier(c))
            next = _getSuperclass(c)
        }
        return result
    }

    /// Whether `cls` itself adopts ``AbstractEntity`` (its subclasses inherit the
    /// conformance, and are concrete).
    private static func declaresAbstract(_ cls: NSManagedObject.Type) -> Bool {
        guard cls is any AbstractEntity.Type else { return false }
        guard let parent = _getSuperclass(cls) else { return true }
        return !(parent is any AbstractEntity.Type)
    }
}

/// Marks the class of an abstract entity, when a model is built from classes
/// (``NSManagedObjectModel/init(managedObjectClasses:)``): the entity has no objects of its
/// own, only those of its sub-entities (the listed subclasses), as an entity with
/// ``NSEntityDescription/isAbstract`` set.
///
/// ```swift
/// class Shape: NSManagedObject, AbstractEntity {
///     @Attribute var name: String = ""
/// }
/// final class Circle: Shape {
///     @Attribute var radius: Double = 0
/// }
/// ```
///
/// Only the class that adopts the protocol is abstract; its subclasses, which inherit the
/// conformance, are concrete. A save that would store an object of an abstract entity
/// throws a ``CoreDataError``.
public protocol AbstractEntity: NSManagedObject {}
