import Foundation

/// One uniqueness constraint as every store must hold it: over the rows of every entity
/// in ``members``, no two rows may have equal values in all of ``columns`` (a row with a
/// null or NaN among them is distinct from every other, as in a SQL unique index).
///
/// A constraint that an entity declares is inherited by its sub-entities and holds across
/// all of them together, as in Core Data's single table per entity family: a `Dog` and a
/// `Cat` cannot share a name that `Animal` declares unique. A store that keeps each entity
/// in a table of its own must therefore check such a constraint across tables.
public struct StoreUniquenessConstraint: Sendable, Hashable {
    /// The entity (its index in the model) that declares the constraint: the highest one
    /// of its chain of super-entities that has it.
    public let scope: Int32
    /// The constrained properties, by index in the entity (a family shares the indexes).
    public let columns: [Int]
    /// The entities whose rows the constraint covers: ``scope`` and every entity below it,
    /// in ascending order.
    public let members: [Int32]

    /// Whether the constraint spans more than one entity (then no single table holds it).
    public var spansFamily: Bool { members.count > 1 }
}

extension StoreCommitSupport {
    /// Every uniqueness constraint of the model, each once, in the order the built-in stores
    /// report their conflicts in (by the first entity having it, then in that entity's order).
    public var uniquenessConstraints: [StoreUniquenessConstraint] {
        uniqueConstraints.all.map {
            StoreUniquenessConstraint(scope: $0.scope, columns: $0.columns, members: $0.members.sorted())
        }
    }
}
