import Foundation
import PersistenceKit

/// Which links the store's tables cannot keep: those into an entity family.
///
/// Each entity has a table of its own, keyed per entity (`_pk_keys` counts each entity's
/// keys apart), and a link is kept as a destination key alone: a to-one is a `bigint`
/// column, a to-many end a key list, a subquery on the destination's table or a join
/// table's key column (see ``LinkLayout``). A key names a row only together with its table,
/// so a relationship whose destination entity has sub-entities would lose which entity an
/// object belongs to (a `Dog` read back as the `Animal` of the same key), and an end read
/// from the destination's table would miss the rows in the sub-entities' tables. Such
/// relationships are refused when the layout is made, before any table is created or
/// migrated, rather than read back wrong.
enum EntityFamilyLinks {
    /// Throws ``PostgreSQLStoreError`` `.unsupportedModel` naming every stored
    /// relationship of `model` whose destination entity has sub-entities (`target`: where
    /// the store is, for the message).
    static func refuse(in model: NSManagedObjectModel, target: String) throws(PostgreSQLStoreError) {
        let unsupported = relationshipsIntoFamilies(of: model)
        guard let first = unsupported.first else { return }
        let named = unsupported.map { "\($0.entity).\($0.relationship) (to \($0.destination), whose sub-entities are \($0.subentities))" }
        throw PostgreSQLStoreError(
            .unsupportedModel, target: target,
            "relationship \(first.entity).\(first.relationship) leads to entity \(first.destination), which has sub-entities; "
                + "the PostgreSQL store keeps a link as a key into one entity's table and does not support relationships "
                + "to an entity with sub-entities yet (unsupported: \(named.joined(separator: "; "))). Point each such "
                + "relationship at an entity without sub-entities, or keep the model in the file store.")
    }

    /// One stored relationship into an entity family: the entity that declares it, its
    /// name, its destination and the destination's sub-entities (comma-separated, sorted).
    struct Link: Equatable {
        let entity: String
        let relationship: String
        let destination: String
        let subentities: String
    }

    /// The stored relationships of `model` whose destination entity has sub-entities, each
    /// once (an inherited relationship under the entity that declares it), sorted by entity
    /// and relationship name.
    static func relationshipsIntoFamilies(of model: NSManagedObjectModel) -> [Link] {
        var found: [Link] = []
        var seen = Set<String>()
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            for case let r as NSRelationshipDescription in entity.properties where !r.isTransient {
                guard let d = r.destinationEntity, !d.subentities.isEmpty else { continue }
                let declaring = r.entity?.name ?? entity.name
                // An inherited relationship is listed once, under its declaring entity.
                guard seen.insert(declaring + "\u{0}" + r.name).inserted else { continue }
                let subs = d.subentities.map(\.name).sorted().joined(separator: ", ")
                found.append(Link(entity: declaring, relationship: r.name, destination: d.name, subentities: subs))
            }
        }
        return found.sorted { ($0.entity, $0.relationship) < ($1.entity, $1.relationship) }
    }
}
