import Foundation
import PersistenceKit

/// One table of an entity family that a derived end reads: the entity's index in the model
/// and its table, schema-qualified and quoted.
struct FamilyTable: Sendable, Equatable {
    let entity: Int32
    let table: String
}

/// The to-many end of a one-to-many whose destination entity has sub-entities
/// (`Owner.pets` ↔ `Animal.owner`, with `Dog` and `Cat` below `Animal`), or the unordered end
/// of a many-to-many whose owning end is such an entity's ordered list (`Pal.animals` ↔
/// `Animal.pals`).
///
/// Each entity of the family has a table of its own, keyed per entity, and each has the
/// inherited key column (`owner`) or list (`pals`). The end is read from every one of them
/// (`UNION ALL`), each row with its own entity: keys alone would name a `Dog` as the
/// `Animal` of the same key, and the destination's table alone would miss the sub-entities'
/// rows. Its links are listed as packed keys (``EntityFamilyLinks/pack(_:)``) in row-ID
/// order.
extension DerivedEnd {
    /// Whether the end reads more than one table (see the extension's comment).
    var spansFamily: Bool { !family.isEmpty }

    /// The tables of `destination` and of every entity below it, in entity order (empty
    /// when it has no sub-entities: the end then reads its one table as any other).
    static func familyTables(of destination: NSEntityDescription, schema: String, entityIndex: [String: Int32]) -> [FamilyTable] {
        guard !destination.subentities.isEmpty else { return [] }
        var members: [FamilyTable] = []
        var pending = [destination]
        while let e = pending.popLast() {
            if let i = entityIndex[e.name] { members.append(FamilyTable(entity: i, table: "\(quote(schema)).\(quote(e.name))")) }
            pending += e.subentities
        }
        return members.sorted { $0.entity < $1.entity }
    }

    /// The rows of every family table linked from the row whose key is `key`, each as its
    /// packed key (`SELECT p`).
    private func familyRows(of key: String) -> String {
        family.map {
            "SELECT \(EntityFamilyLinks.packed("pkf.\"_pk\"", $0.entity)) AS p FROM \($0.table) pkf WHERE \(reaches("pkf", key))"
        }
            .joined(separator: " UNION ALL ")
    }

    /// The links from the row whose key is `key` as packed keys in row-ID order, a `bigint[]`
    /// (empty, never NULL). (Packed keys: 13 ms for 2,000 rows' lists of 30 over three
    /// tables, where `entity:key` text took 21 ms and one table's plain keys 7 ms.)
    func familyKeys(of key: String) -> String {
        "ARRAY(SELECT pku.p FROM (\(familyRows(of: key))) pku ORDER BY pku.p)"
    }

    /// The number of rows of the family linked from the row whose key is `key`.
    func familyCount(of key: String) -> String {
        let counts = family.map { "(SELECT count(*) FROM \($0.table) pkc WHERE \(reaches("pkc", key)))" }
        return "(" + counts.joined(separator: " + ") + ")"
    }

    /// ` AND <alias>.<entity column> = <entity>` when the column `match` holds rows of an
    /// entity family (a to-one into one, or a join table's family side): keys are counted per
    /// entity, so the key alone would match rows linking to another entity's row of the same
    /// key. Empty otherwise.
    func entityTest(_ alias: String) -> String {
        guard let column = matchEntityColumn else { return "" }
        return " AND \(alias).\(quote(column)) = \(matchEntity)"
    }

    /// The links at (`row`, `column`) of a binary `result`, selected by ``familyKeys(of:)`` or
    /// ``joinedFamilyKeys(of:)`` as text.
    static func familyReferences(_ result: PostgreSQLResult, _ row: Int, _ column: Int) -> StoreValue {
        if result.isNull(row, column) { return .references([]) }
        return .references(ValueCoding.keys(result.string(row, column)).map(EntityFamilyLinks.unpack))
    }
}

/// Join tables whose rows on one side or both are of an entity family (`Animal.toys` ↔
/// `Toy.animals`, with `Dog` and `Cat` below `Animal`): beside `source` and `target`, such a
/// side has its entity column (`source_entity`, `target_entity`), since keys are counted per
/// entity. An end reading the table matches its own row's entity, and lists the other
/// side's entities with the keys when that side is a family.
extension DerivedEnd {
    /// Whether the end's links are read with their entities (listed as packed keys, see
    /// ``familyKeys(of:)``), not as keys of the destination alone.
    var listsEntities: Bool { spansFamily || listedEntityColumn != nil }

    /// Whether a join table's `source` rows (those of the owning end `owner`, declared by
    /// an entity that may have sub-entities) and `target` rows are of entity families.
    static func joinFamilies(owner: NSRelationshipDescription) -> (source: Bool, target: Bool) {
        (owner.entity?.subentities.isEmpty == false, owner.destinationEntity?.subentities.isEmpty == false)
    }

    /// Sets the entity columns of a join table end read for rows of entity `entity`, whose
    /// owning end is `owner` (this end itself or its inverse).
    mutating func nameEntities(owner: NSRelationshipDescription, entity: Int32) {
        let families = Self.joinFamilies(owner: owner)
        let owns = match == "source"
        let (matchFamily, listedFamily) = owns ? (families.source, families.target) : (families.target, families.source)
        if matchFamily {
            matchEntityColumn = match + "_entity"
            matchEntity = entity
        }
        if listedFamily { listedEntityColumn = listed + "_entity" }
    }

    /// The join table rows linked from the row whose key is `key`, as packed keys in row-ID
    /// order, a `bigint[]` (empty, never NULL).
    func joinedFamilyKeys(of key: String) -> String {
        let e = quote(listedEntityColumn ?? listed)
        let packed = "pkd.\(e)::bigint * \(EntityFamilyLinks.packFactor) + pkd.\(quote(listed))"
        return "ARRAY(SELECT \(packed) FROM \(table) pkd WHERE pkd.\(quote(match)) = \(key)\(entityTest("pkd")) ORDER BY 1)"
    }

    /// The join table's columns after `source` and `target` (unquoted): the entity column of
    /// each side of a family. Call it on the owning end.
    var joinEntityColumns: [String] {
        [matchEntityColumn, listedEntityColumn].compactMap { $0 }
    }
}
