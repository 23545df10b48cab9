import Foundation
import PersistenceKit

/// How the store's tables keep links into an entity family, and which they cannot keep.
///
/// Each entity has a table of its own, keyed per entity (`_pk_keys` counts each entity's
/// keys apart), so a key names a row only together with its table: a link into an entity
/// with sub-entities keeps the linked row's entity too (a key alone would read a `Dog` back
/// as the `Animal` of the same key), and an end read from such a family's rows reads every
/// table of it. What the store cannot keep that way is refused when the layout is made,
/// before any table is created or migrated, rather than read back wrong.
///
/// Kept: a to-one (`Owner.favourite: Animal`), as its key and, in the column after it
/// (`favourite__entity`, see ``entityColumn(of:)``), the entity of the row it links to; the
/// to-many end of a one-to-many (`Owner.pets` ↔ `Animal.owner`), which has no column and is
/// read from the key column every table of the family inherits, each row with its own
/// entity; and an unordered many-to-many, whose join table has an entity column for each
/// family side (see `DerivedEnd+Family.swift`); and a to-many kept in its row (ordered, or
/// without an inverse) as a list of packed keys (``pack(_:)``). A store with such a link
/// records table layout version 3 (``LinkLayout/familyVersion``), which earlier builds
/// refuse. Refused: an unordered end read from an ordered owning to-many that a family's
/// tables hold (``readsFamilyList(_:of:)``).
enum EntityFamilyLinks {
    /// Throws ``PostgreSQLStoreError`` `.unsupportedModel` naming every relationship of
    /// `model` that ``readsFamilyList(_:of:)`` (`target`: where the store is, for the
    /// message).
    static func refuse(in model: NSManagedObjectModel, target: String) throws(PostgreSQLStoreError) {
        let unsupported = relationshipsIntoFamilies(of: model)
        guard let first = unsupported.first else { return }
        let named = unsupported.map { "\($0.entity).\($0.relationship) (to \($0.destination), whose sub-entities are \($0.subentities))" }
        throw PostgreSQLStoreError(
            .unsupportedModel, target: target,
            "relationship \(first.entity).\(first.relationship) leads to entity \(first.destination), which has sub-entities; "
                + "it would be read from the ordered to-many each table of that family holds, which the PostgreSQL store "
                + "does not support yet (unsupported: \(named.joined(separator: "; "))). Make the inverse unordered, point the "
                + "relationship at an entity without sub-entities, or keep the model in the file store.")
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

    /// Whether `layouts` have a to-one or a key list into an entity family or a join table
    /// with an entity column (the tables of layout version 3).
    static func hasFamilyLinks(_ layouts: [TableLayout]) -> Bool {
        layouts.contains { t in
            t.columns.contains { $0.kind.isFamilyLink }
                || t.derived.contains { $0.ownsJoinTable && !$0.joinEntityColumns.isEmpty }
        }
    }

    /// Whether `r` (a relationship of `entity`) is an unordered to-many end read from its
    /// inverse's key list, an ordered owning to-many that each table of `r`'s destination
    /// family holds: an end the store does not read across the family's tables yet.
    static func readsFamilyList(_ r: NSRelationshipDescription, of entity: NSEntityDescription) -> Bool {
        guard LinkLayout.isDerived(r, of: entity), let inverse = r.inverseRelationship, inverse.isToMany, let d = r.destinationEntity
        else { return false }
        return !LinkLayout.isJoined(inverse, of: d)
    }

    /// One linked row of a key list into an entity family as one `bigint`: its entity times
    /// 2^48 plus its key, so that the list's `@>` test (and its GIN index) finds a row by
    /// entity and key at once; nil for a key outside 0..<2^48 (the store hands out keys from
    /// 1 up: more than 2^48 rows of one entity).
    static func pack(_ id: StoreRowID) -> Int64? {
        guard id.primaryKey >= 0, id.primaryKey < packFactor, id.entity >= 0 else { return nil }
        return Int64(id.entity) * packFactor + id.primaryKey
    }

    /// The row a packed key names (see ``pack(_:)``).
    static func unpack(_ packed: Int64) -> StoreRowID {
        StoreRowID(entity: Int32(truncatingIfNeeded: packed / packFactor), primaryKey: packed % packFactor)
    }

    /// 2^48: keys of a packed list are below it.
    static let packFactor: Int64 = 1 << 48

    /// The SQL of the packed key of row `key` (an SQL expression) of entity `entity`, or
    /// `key` itself when `entity` is nil (a plain key list).
    static func packed(_ key: String, _ entity: Int32?) -> String {
        guard let entity else { return key }
        return "(\(Int64(entity) * packFactor)::bigint + \(key))"
    }

    /// The error for a migration step of a store with a link into an entity family kept
    /// with entities (`entity`.`relationship`: a to-one, key list or join table end).
    static func refusedMigration(of entity: String, _ relationship: String, target: String) -> PostgreSQLStoreError {
        PostgreSQLStoreError(
            .unsupportedModel, target: target,
            "relationship \(entity).\(relationship) links into an entity family, kept with each linked row's entity, and "
                + "migrating a store with such links is not supported on PostgreSQL yet; export the objects and load them "
                + "into a new store, or migrate the store as a file store.")
    }

    /// One stored relationship into an entity family: the entity that declares it, its
    /// name, its destination and the destination's sub-entities (comma-separated, sorted).
    struct Link: Equatable {
        let entity: String
        let relationship: String
        let destination: String
        let subentities: String
    }

    /// The relationships of `model` that ``readsFamilyList(_:of:)``, each once (an inherited
    /// relationship under the entity that declares it), sorted by entity and relationship
    /// name.
    static func relationshipsIntoFamilies(of model: NSManagedObjectModel) -> [Link] {
        var found: [Link] = []
        var seen = Set<String>()
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            for case let r as NSRelationshipDescription in entity.properties where !r.isTransient {
                guard let d = r.destinationEntity, !d.subentities.isEmpty, readsFamilyList(r, of: entity) else { continue }
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

extension ColumnKind {
    /// Whether the column links into an entity family with the linked rows' entities (a
    /// to-one's key or a packed key list; see ``EntityFamilyLinks``).
    var isFamilyLink: Bool {
        switch self {
        case .familyToOne, .familyToMany: true
        default: false
        }
    }
}
