import Foundation

/// What happens to the objects at the other end of a relationship when an object is
/// deleted. Same cases and meaning as Core Data.
public enum NSDeleteRule: UInt, Sendable, Hashable, CustomStringConvertible {
    /// Leave the related objects alone (they keep pointing at the deleted object until you fix them).
    case noActionDeleteRule = 0
    /// Remove the deleted object from the inverse relationship of each related object.
    case nullifyDeleteRule = 1
    /// Delete the related objects too.
    case cascadeDeleteRule = 2
    /// Refuse the deletion (the save fails validation) while any related object remains.
    case denyDeleteRule = 3

    /// Short name for ``noActionDeleteRule`` (as written in DESIGN.md's examples).
    public static let noAction = NSDeleteRule.noActionDeleteRule
    /// Short name for ``nullifyDeleteRule``.
    public static let nullify = NSDeleteRule.nullifyDeleteRule
    /// Short name for ``cascadeDeleteRule``.
    public static let cascade = NSDeleteRule.cascadeDeleteRule
    /// Short name for ``denyDeleteRule``.
    public static let deny = NSDeleteRule.denyDeleteRule

    /// A readable summary for logs and messages.
    public var description: String {
        switch self {
        case .noActionDeleteRule: "no action"
        case .nullifyDeleteRule: "nullify"
        case .cascadeDeleteRule: "cascade"
        case .denyDeleteRule: "deny"
        }
    }
}

/// Describes one relationship of an entity: its destination entity, inverse, cardinality
/// and delete rule.
///
/// A relationship is to-one when ``maxCount`` is 1 and to-many otherwise (0 means no upper
/// bound), as in Core Data. Every relationship needs an inverse; model validation reports
/// one that is missing or does not point back.
public final class NSRelationshipDescription: NSPropertyDescription, @unchecked Sendable {
    // @unchecked Sendable: same proof as NSPropertyDescription (immutable once sealed).

    /// The entity at the other end. When the model is built from classes it is resolved from
    /// the declared Swift type.
    public var destinationEntity: NSEntityDescription? {
        didSet { checkMutable() }
    }

    /// The relationship on the destination entity that points back.
    public var inverseRelationship: NSRelationshipDescription? {
        didSet { checkMutable() }
    }

    /// What deleting the source object does to the destination objects.
    @exclusivity(unchecked) public var deleteRule: NSDeleteRule = .nullifyDeleteRule {
        didSet { checkMutable() }
    }

    /// The minimum number of destination objects for a valid save (to-many only; 0 for none).
    @exclusivity(unchecked) public var minCount: Int = 0 {
        didSet { checkMutable() }
    }

    /// The maximum number of destination objects: 1 makes the relationship to-one, 0 means
    /// no limit.
    @exclusivity(unchecked) public var maxCount: Int = 1 {
        didSet { checkMutable() }
    }

    /// Whether an object of `entity` may be a destination: `entity` is the destination
    /// entity or one of its sub-entities. (Identity first: the common case costs one compare.)
    @inline(__always)
    func accepts(_ entity: NSEntityDescription) -> Bool {
        guard let destination = destinationEntity else { return false }
        return entity === destination || entity.isKindOf(entity: destination)
    }

    /// Whether the relationship holds a set of objects (``maxCount`` is not 1).
    public var isToMany: Bool { maxCount != 1 }

    /// For a relationship built from a `@Relationship` property: whether its Swift type is a
    /// set. Model validation checks that it agrees with ``isToMany``.
    var declaredAsSet: Bool?

    /// Whether a to-many relationship keeps its objects in an order, as Core Data's
    /// (`NSOrderedSet` semantics: each object at most once, at a position the program
    /// chooses). The order is saved and comes back on every fetch and reopen. Ignored for a
    /// to-one relationship. Part of the model's equality. `false` by default.
    @exclusivity(unchecked) public var isOrdered: Bool = false {
        didSet { checkMutable() }
    }

    /// The destination entity's name, when the model is built from classes (resolved to
    /// ``destinationEntity`` during validation).
    var destinationEntityName: String?
    /// The inverse relationship's name, when the model is built from classes.
    var inverseName: String?

    /// Creates a relationship description with the given name; set its destination,
    /// inverse, counts and delete rule before use.
    public override init(name: String = "") {
        super.init(name: name)
    }

    /// Creates an empty relationship description, as Core Data's `NSRelationshipDescription()`.
    public convenience init() {
        self.init(name: "")
    }

    override func describe(renaming: Bool) -> String {
        var s = "rel \(name) -> \(destinationEntity?.name ?? destinationEntityName ?? "?")"
        s += " inverse=\(inverseRelationship?.name ?? inverseName ?? "?")"
        s += " rule=\(deleteRule.rawValue) min=\(minCount) max=\(maxCount)"
        if isOptional { s += " opt" }
        if isTransient { s += " transient" }
        if isOrdered && isToMany { s += " ordered" }
        return s + versioningDescription(renaming: renaming)
    }
}
