import Foundation

/// A Swift type that can be the value of a `@Relationship` property: `Destination?` for a
/// to-one relationship, `Set<Destination>` for a to-many relationship, `[Destination]` for an
/// ordered to-many relationship.
public protocol RelationshipValue {
    /// The class of the objects at the other end.
    associatedtype Destination: NSManagedObject
    /// Whether the relationship is to-many.
    static var isToMany: Bool { get }
    /// Whether the relationship keeps its objects in order (an array); `false` by default.
    static var isOrdered: Bool { get }
    /// Reads the relationship at `slot` of `object`.
    static func read(from object: NSManagedObject, slot: Int) -> Self
    /// Writes the relationship at `slot` of `object`, keeping inverses.
    func write(to object: NSManagedObject, slot: Int)
}

extension RelationshipValue {
    /// Unordered, unless the type says otherwise.
    public static var isOrdered: Bool { false }
}

extension Optional: RelationshipValue where Wrapped: NSManagedObject {
    /// See ``RelationshipValue``.
    public typealias Destination = Wrapped
    /// See ``RelationshipValue``.
    public static var isToMany: Bool { false }
    /// See ``RelationshipValue``.
    public static func read(from object: NSManagedObject, slot: Int) -> Self {
        object.prepareForAccess("reading '\(object.entity.properties[slot].name)'")
        object.noteRead(slot: slot)
        if object.flags.contains(.probe) { object.probedSlot = slot }
        guard let target = object.resolvedToOne(at: slot) ?? object.blankTargetIfProbe(at: slot) else { return nil }
        return downcast(target, to: Wrapped.self, in: object, slot: slot)
    }
    /// See ``RelationshipValue``.
    public func write(to object: NSManagedObject, slot: Int) {
        object.setToOne(self, at: slot)
    }
}

extension Set: RelationshipValue where Element: NSManagedObject {
    /// See ``RelationshipValue``.
    public typealias Destination = Element
    /// See ``RelationshipValue``.
    public static var isToMany: Bool { true }
    /// See ``RelationshipValue``.
    public static func read(from object: NSManagedObject, slot: Int) -> Self {
        object.prepareForAccess("reading '\(object.entity.properties[slot].name)'")
        object.noteRead(slot: slot)
        if object.flags.contains(.probe) { object.probedSlot = slot }
        return Set(object.resolvedToManyLoadingTargets(at: slot).lazy.map { downcast($0, to: Element.self, in: object, slot: slot) })
    }
    /// See ``RelationshipValue``.
    public func write(to object: NSManagedObject, slot: Int) {
        object.replaceToMany(with: Set<NSManagedObject>(self.lazy.map { $0 }), at: slot)
    }
}

/// Casts a relationship target to the declared Swift type, with a message naming the model
/// mismatch when the entity's class is not that type.
func downcast<T: NSManagedObject>(_ o: NSManagedObject, to: T.Type, in owner: NSManagedObject, slot: Int) -> T {
    guard let t = o as? T else {
        programmerError(
            "PersistenceKit: '\(owner.entity.name).\(owner.entity.properties[slot].name)' holds a \(type(of: o)) "
                + "(entity '\(o.entity.name)') but is declared as \(T.self). Rule: the destination entity's class must "
                + "be the declared type; build the model from the classes.")
    }
    return t
}
