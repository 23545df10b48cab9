import Foundation
import PersistenceKit

/// How the store's tables keep links into an entity family.
///
/// Each entity has a table of its own, keyed per entity (`_pk_keys` counts each entity's
/// keys apart), so a key names a row only together with its table: a link into an entity
/// with sub-entities keeps the linked row's entity too (a key alone would read a `Dog` back
/// as the `Animal` of the same key), and an end read from such a family's rows reads every
/// table of it.
///
/// A to-one (`Owner.favourite: Animal`) is its key and, in the column after it
/// (`favourite__entity`, see ``entityColumn(of:)``), the entity of the row it links to. The
/// to-many end of a one-to-many (`Owner.pets` ↔ `Animal.owner`) has no column and is read
/// from the key column every table of the family inherits, each row with its own entity.
/// An unordered many-to-many's join table has an entity column for each family side (see
/// `DerivedEnd+Family.swift`). A to-many kept in its row (ordered, or without an inverse)
/// is a list of packed keys (``pack(_:)``), from which an unordered other end is read,
/// across the family's tables when they hold the list. A store with such
/// a link records table layout version 3 (``LinkLayout/familyVersion``), which earlier
/// builds refuse. Migrations renumber the entities these links hold (``FamilyLinkMigration``);
/// one that changes how such a link is kept is refused (``refusedMigration(of:_:target:)``).
enum EntityFamilyLinks {
    /// The name of the column after a to-one `relationship` into an entity family that holds
    /// the entity of the row it links to.
    static func entityColumn(of relationship: String) -> String { relationship + "__entity" }

    /// The to-one at (`row`, `column`) of a binary `result` whose ``ColumnKind/familyEntity``
    /// column follows it: the linked row's ID, or `.null`.
    static func decodeReference(_ result: PostgreSQLResult, _ row: Int, _ column: Int) -> StoreValue {
        if result.isNull(row, column) || result.isNull(row, column + 1) { return .null }
        let entity = Int32(truncatingIfNeeded: result.int64(row, column + 1))
        return .reference(StoreRowID(entity: entity, primaryKey: result.int64(row, column)))
    }

    /// Whether `layouts` have a to-one or a key list into an entity family or a join table
    /// with an entity column (the tables of layout version 3).
    static func hasFamilyLinks(_ layouts: [TableLayout]) -> Bool {
        layouts.contains { t in
            t.columns.contains { $0.kind.isFamilyLink }
                || t.derived.contains { $0.ownsJoinTable && !$0.joinEntityColumns.isEmpty }
        }
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

    /// The error for a migration step that changes how a link into an entity family is kept
    /// (`entity`.`relationship`: a to-one, key list or join table end, or an end read across
    /// a family), which the migration does not convert (see ``FamilyLinkMigration``).
    static func refusedMigration(of entity: String, _ relationship: String, target: String) -> PostgreSQLStoreError {
        PostgreSQLStoreError(
            .unsupportedModel, target: target,
            "relationship \(entity).\(relationship) links into an entity family, and this step changes how such a link is "
                + "kept (to-one to to-many, a join table's family sides, a destination losing its sub-entities), which a "
                + "PostgreSQL migration does not convert; keep the relationship's kind and add a new relationship filled in a "
                + "custom migration stage, or export the objects and load them into a new store.")
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
