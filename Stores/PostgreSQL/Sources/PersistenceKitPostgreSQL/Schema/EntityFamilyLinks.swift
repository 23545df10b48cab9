import Foundation
import PersistenceKit

/// Which links into an entity family the store's tables cannot keep.
///
/// Each entity has a table of its own, keyed per entity (`_pk_keys` counts each entity's
/// keys apart), and a stored link is a destination key alone: a to-one is a `bigint`
/// column, a to-many a key list, a join table a pair of keys (see ``LinkLayout``). A key
/// names a row only together with its table, so a stored link into an entity with
/// sub-entities would lose which entity an object belongs to (a `Dog` read back as the
/// `Animal` of the same key). Such relationships are refused when the layout is made,
/// before any table is created or migrated, rather than read back wrong.
///
/// Kept: a to-one (`Owner.favourite: Animal`), as its key and, in the column after it
/// (`favourite__entity`, see ``entityColumn(of:)``), the entity of the row it links to; the
/// to-many end of a one-to-many (`Owner.pets` ↔ `Animal.owner`), which has no column and is
/// read from the key column every table of the family inherits, each row with its own
/// entity; and an unordered many-to-many, whose join table has an entity column for each
/// family side (see `DerivedEnd+Family.swift`). A store with such a to-one or join table
/// records table layout version 3 (``LinkLayout/familyVersion``), which earlier builds
/// refuse. Refused: key lists (an ordered to-many, or one without an inverse) into a family.
enum EntityFamilyLinks {
    /// Throws ``PostgreSQLStoreError`` `.unsupportedModel` naming every key list (an
    /// ordered to-many, or one without an inverse) of `model` whose destination entity has
    /// sub-entities (`target`: where the store is, for the message).
    static func refuse(in model: NSManagedObjectModel, target: String) throws(PostgreSQLStoreError) {
        let unsupported = relationshipsIntoFamilies(of: model)
        guard let first = unsupported.first else { return }
        let named = unsupported.map { "\($0.entity).\($0.relationship) (to \($0.destination), whose sub-entities are \($0.subentities))" }
        throw PostgreSQLStoreError(
            .unsupportedModel, target: target,
            "relationship \(first.entity).\(first.relationship) leads to entity \(first.destination), which has sub-entities; "
                + "the PostgreSQL store keeps an ordered to-many (or one without an inverse) as a list of keys into one "
                + "entity's table and does not support such lists into an entity with sub-entities yet (unsupported: "
                + "\(named.joined(separator: "; "))). Point each such relationship at an entity without sub-entities, make it "
                + "unordered with an inverse, or keep the model in the file store.")
    }

    /// The name of the column after a to-one `relationship` into an entity family that holds
    /// the entity of the row it links to.
    static func entityColumn(of relationship: String) -> String { relationship + "__entity" }

    /// The to-one at (`row`, `column`) of a binary `result` whose ``ColumnKind/familyEntity``
    /// column follows it: the linked row's ID, or `.null`.
    static func decodeReference(_ result: PostgreSQLResult, _ row: Int, _ column: Int) -> StoreValue {
        if result.isNull(row, column) || result.isNull(row, column + 1) { return .null }
        return .reference(StoreRowID(entity: Int32(truncatingIfNeeded: result.int64(row, column + 1)), primaryKey: result.int64(row, column)))
    }

    /// Whether `layouts` have a to-one into an entity family or a join table with an entity
    /// column (the tables of layout version 3).
    static func hasFamilyToOnes(_ layouts: [TableLayout]) -> Bool {
        layouts.contains { t in
            t.columns.contains { if case .familyToOne = $0.kind { true } else { false } }
                || t.derived.contains { $0.ownsJoinTable && !$0.joinEntityColumns.isEmpty }
        }
    }

    /// Whether `r` is the unordered to-many end of a one-to-many: no column, read from its
    /// inverse's key column (``LinkLayout``), which every entity of the family inherits.
    static func readsFamilyKeyColumn(_ r: NSRelationshipDescription) -> Bool {
        guard r.isToMany, !r.isOrdered, let inverse = r.inverseRelationship, inverse !== r else { return false }
        return !inverse.isTransient && !inverse.isToMany
    }

    /// Whether `r` is an end of an unordered many-to-many, kept in a join table whose sides
    /// name their entities (``LinkLayout``).
    static func readsJoinTable(_ r: NSRelationshipDescription) -> Bool {
        guard r.isToMany, !r.isOrdered, let inverse = r.inverseRelationship, inverse !== r else { return false }
        return !inverse.isTransient && inverse.isToMany && !inverse.isOrdered
    }

    /// The error for a migration step of a store with a to-one into an entity family
    /// (`entity`.`relationship`), or one that would read the links of an end read across an
    /// entity family to store them another way.
    static func refusedMigration(of entity: String, _ relationship: String, target: String) -> PostgreSQLStoreError {
        PostgreSQLStoreError(
            .unsupportedModel, target: target,
            "relationship \(entity).\(relationship) links into an entity family, and migrating a store with such a to-one, "
                + "or turning such a to-many end into another kind of link, is not supported on PostgreSQL yet; export the "
                + "objects and load them into a new store, or migrate the store as a file store.")
    }

    /// One stored relationship into an entity family: the entity that declares it, its
    /// name, its destination and the destination's sub-entities (comma-separated, sorted).
    struct Link: Equatable {
        let entity: String
        let relationship: String
        let destination: String
        let subentities: String
    }

    /// The key lists of `model` whose destination entity has sub-entities, each once (an
    /// inherited relationship under the entity that declares it), sorted by entity and
    /// relationship name.
    static func relationshipsIntoFamilies(of model: NSManagedObjectModel) -> [Link] {
        var found: [Link] = []
        var seen = Set<String>()
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            for case let r as NSRelationshipDescription in entity.properties where !r.isTransient {
                guard let d = r.destinationEntity, !d.subentities.isEmpty, r.isToMany, !readsFamilyKeyColumn(r), !readsJoinTable(r)
                else { continue }
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
