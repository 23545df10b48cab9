import Foundation

/// Declares a relationship on an `NSManagedObject` subclass.
///
/// ```swift
/// final class Shelf: NSManagedObject {
///     @Relationship(inverse: "shelf", deleteRule: .cascadeDeleteRule) var books: Set<Book>
/// }
/// final class Book: NSManagedObject {
///     @Relationship(inverse: "books") var shelf: Shelf?
/// }
/// ```
///
/// `Destination?` declares a to-one relationship, `Set<Destination>` a to-many one, and
/// `[Destination]` an ordered to-many one (``NSRelationshipDescription/isOrdered``; its
/// projected value adds `insert(_:at:)`, `move(fromOffsets:toOffset:)` and `remove(at:)`). The
/// inverse is named by its property name on the destination class; inverses are kept on
/// both sides automatically. Use the projected value (`$books`) to add and remove single
/// objects without copying the set.
@propertyWrapper
public struct Relationship<Value: RelationshipValue>: ManagedPropertyWrapper {
    /// The wrapper's only storage: the declaration is recorded while the model is built (see
    /// `PropertyDeclarations`; stored here it was 40 bytes per relationship per object).
    @usableFromInline var mark: UInt8

    /// Declares a relationship.
    ///
    /// - Parameters:
    ///   - inverse: The name of the inverse relationship on the destination class.
    ///   - deleteRule: What deleting this object does to the destination objects.
    ///   - isOptional: Whether a save may leave the relationship empty.
    ///   - minCount: For to-many relationships, the fewest objects a save allows.
    ///   - maxCount: For to-many relationships, the most objects a save allows (0: no limit).
    ///
    /// @inlinable for the reason given on `Attribute`'s initializers.
    @inlinable
    public init(
        inverse: String, deleteRule: NSDeleteRule = .nullifyDeleteRule, isOptional: Bool = true,
        minCount: Int = 0, maxCount: Int = 0
    ) {
        mark =
            PropertyDeclarations.isRecording
            ? PropertyDeclarations.recordRelationship(
                inverse: inverse, deleteRule: deleteRule, isOptional: isOptional, minCount: minCount,
                maxCount: Value.isToMany ? maxCount : 1)
            : PropertyDeclarations.unmarked
    }

    /// Declares a relationship with an initial value (which must be empty: `nil` or `[]`).
    @inlinable
    public init(
        wrappedValue: Value, inverse: String, deleteRule: NSDeleteRule = .nullifyDeleteRule,
        isOptional: Bool = true, minCount: Int = 0, maxCount: Int = 0
    ) {
        self.init(inverse: inverse, deleteRule: deleteRule, isOptional: isOptional, minCount: minCount, maxCount: maxCount)
    }

    /// Unavailable: `@Relationship` only works on properties of `NSManagedObject` subclasses.
    @available(*, unavailable, message: "@Relationship can only be used on properties of NSManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("@Relationship can only be used on properties of NSManagedObject subclasses") }
        set { preconditionFailure("@Relationship can only be used on properties of NSManagedObject subclasses") }
    }

    /// Reads and writes the relationship through the enclosing object.
    @inlinable
    public static subscript<Object: NSManagedObject>(
        _enclosingInstance object: Object,
        wrapped _: ReferenceWritableKeyPath<Object, Value>,
        storage storage: ReferenceWritableKeyPath<Object, Self>
    ) -> Value {
        get { Value.read(from: object, slot: NSManagedObject.slot(of: object, storage: storage)) }
        set { newValue.write(to: object, slot: NSManagedObject.slot(of: object, storage: storage)) }
    }

    /// Unavailable outside `NSManagedObject` subclasses; see the enclosing-instance subscript.
    @available(*, unavailable, message: "$ access works only on properties of NSManagedObject subclasses")
    public var projectedValue: RelationshipSet<Value.Destination> {
        programmerError("$ access works only on properties of NSManagedObject subclasses")
    }

    /// The projected value (`$books`): a live view of a to-many relationship for adding,
    /// removing and counting without copying the set. Traps on a to-one relationship.
    public static subscript<Object: NSManagedObject>(
        _enclosingInstance object: Object,
        projected _: KeyPath<Object, RelationshipSet<Value.Destination>>,
        storage storage: ReferenceWritableKeyPath<Object, Self>
    ) -> RelationshipSet<Value.Destination> {
        let i = NSManagedObject.slot(of: object, storage: storage)
        guard Value.isToMany else {
            programmerError(
                "PersistenceKit: '$\(object.entity.properties[i].name)' — only to-many relationships have a projected set.")
        }
        return RelationshipSet(owner: object, index: i)
    }

    @usableFromInline
    func makeDescription(name: String, declaration: PropertyDeclaration) -> NSPropertyDescription {
        guard case let .relationship(inverse, deleteRule, isOptional, minCount, maxCount) = declaration else {
            programmerError("PersistenceKit internal error: @Relationship '\(name)' recorded an attribute's declaration")
        }
        let r = NSRelationshipDescription(name: name)
        r.destinationEntityName = String(describing: Value.Destination.self)
        r.inverseName = inverse
        r.deleteRule = deleteRule
        r.isOptional = isOptional
        r.minCount = minCount
        r.maxCount = maxCount
        r.declaredAsSet = Value.isToMany
        r.isOrdered = Value.isOrdered
        return r
    }
}

/// A live view of one object's to-many relationship: changes go straight to the object,
/// with change tracking and inverse upkeep. Get one from a `@Relationship` property's
/// projected value (`book.$authors`) or from `mutableSetValue(forKey:)`.
///
/// Not `Sendable`: use it on the owner's context queue only.
public struct RelationshipSet<Element: NSManagedObject> {
    let owner: NSManagedObject
    let index: Int

    /// The number of objects in the relationship. Does not load the objects themselves.
    public var count: Int {
        owner.prepareForAccess("counting '\(owner.entity.properties[index].name)'")
        owner.noteRead(slot: index)
        return owner.toManyCount(at: index)
    }

    /// Whether the relationship is empty.
    public var isEmpty: Bool { count == 0 }

    /// The objects in the relationship.
    public var objects: Set<Element> {
        owner.prepareForAccess("reading '\(owner.entity.properties[index].name)'")
        owner.noteRead(slot: index)
        return Set(owner.resolvedToManyLoadingTargets(at: index).lazy.map { downcast($0, to: Element.self, in: owner, slot: index) })
    }

    /// Whether `object` is in the relationship.
    public func contains(_ object: Element) -> Bool {
        owner.prepareForAccess("reading '\(owner.entity.properties[index].name)'")
        owner.noteRead(slot: index)
        return owner.resolvedToMany(at: index).contains(object)
    }

    /// Adds one object (and sets its inverse).
    public func insert(_ object: Element) {
        owner.addToMany(CollectionOfOne(object as NSManagedObject), at: index)
    }

    /// Adds several objects (and sets their inverses).
    public func insert(contentsOf objects: some Sequence<Element>) {
        owner.addToMany(objects.lazy.map { $0 as NSManagedObject }, at: index)
    }

    /// Removes one object (and clears its inverse).
    public func remove(_ object: Element) {
        owner.removeFromToMany(CollectionOfOne(object as NSManagedObject), at: index)
    }

    /// Removes several objects (and clears their inverses).
    public func remove(contentsOf objects: some Sequence<Element>) {
        owner.removeFromToMany(objects.lazy.map { $0 as NSManagedObject }, at: index)
    }

    /// Removes every object.
    public func removeAll() {
        owner.prepareForAccess("clearing '\(owner.entity.properties[index].name)'")
        owner.removeFromToMany(owner.resolvedToMany(at: index), at: index)
    }
}
