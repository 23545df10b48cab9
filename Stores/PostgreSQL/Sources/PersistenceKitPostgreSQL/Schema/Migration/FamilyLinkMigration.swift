import Foundation
import PersistenceKit

/// What a migration step does to links into entity families (see ``EntityFamilyLinks``),
/// which name the linked row's entity by its number in the model (its index among the
/// entities sorted by name):
///
/// - A step may add, remove and rename entities, so numbers move: every stored entity
///   number (a to-one's entity column, a join table's entity columns, a packed key list's
///   entity part) is renumbered, and links to rows of a removed entity are dropped
///   (``EntityRenumbering``).
/// - A link kept in the same way (a family to-one, a packed list, a join table with entity
///   columns) keeps its values under its new names; a renamed join table is renamed.
/// - A to-one or key list whose destination gains sub-entities gains its entities: the
///   entity column is added and filled with the destination's number, a list is packed.
/// - Any other change of how a family link is kept (into a plain link, between a column and
///   a join table, a join table gaining or losing a family side, an end read across a
///   family becoming stored) is refused with ``EntityFamilyLinks/refusedMigration(of:_:target:)``
///   before any statement runs.
enum FamilyLinkMigration {
    /// Throws the refusal for the first link of `step` whose change of kind the migration
    /// does not make (see the type's comment).
    static func check(
        _ step: StoreMigrationStep, old oldLayouts: [String: TableLayout], new newByName: [String: TableLayout], schema: String
    ) throws {
        for map in step.entities {
            guard let old = oldLayouts[map.source.name], let new = newByName[map.destination.name] else { continue }
            var sourceOf: [Int: Int] = [:]
            for (to, from) in map.sourceProperties.enumerated() { if let from { sourceOf[from] = to } }
            for to in new.columns where to.kind.isFamilyLink {
                guard let p = map.sourceProperties[to.property] else { continue }
                if let from = old.column(p), canKeep(from.kind, as: to.kind) { continue }
                if old.column(p) == nil && old.derivedEnd(p) == nil { continue }  // not a relationship before
                throw EntityFamilyLinks.refusedMigration(of: new.entityName, to.name, target: schema)
            }
            for from in old.columns where from.kind.isFamilyLink {
                // A removed property takes its links with it.
                guard let to = sourceOf[from.property] else { continue }
                if let col = new.column(to), canKeep(from.kind, as: col.kind) { continue }
                throw EntityFamilyLinks.refusedMigration(of: new.entityName, from.name, target: schema)
            }
            for end in new.derived where end.ownsJoinTable {
                guard let p = map.sourceProperties[end.property] else { continue }
                let was = old.derivedEnd(p)
                let same = was.map { $0.ownsJoinTable && $0.joinEntityColumns == end.joinEntityColumns } ?? false
                if !same && (!end.joinEntityColumns.isEmpty || !(was?.joinEntityColumns.isEmpty ?? true)) {
                    throw EntityFamilyLinks.refusedMigration(of: new.entityName, end.name, target: schema)
                }
            }
            for was in old.derived where was.ownsJoinTable && !was.joinEntityColumns.isEmpty {
                guard let to = sourceOf[was.property] else { continue }
                if let end = new.derivedEnd(to), end.ownsJoinTable, end.joinEntityColumns == was.joinEntityColumns { continue }
                throw EntityFamilyLinks.refusedMigration(of: new.entityName, was.name, target: schema)
            }
        }
    }

    /// Whether a column of kind `from` becomes one of kind `to` with its links kept.
    static func canKeep(_ from: ColumnKind, as to: ColumnKind) -> Bool {
        switch (from, to) {
        case (.familyToOne, .familyToOne), (.familyToMany, .familyToMany), (.toOne, .familyToOne), (.toMany, .familyToMany): true
        case (.familyToOne, _), (.familyToMany, _), (_, .familyToOne), (_, .familyToMany): false
        default: true
        }
    }

    /// The owning join tables with entity columns whose relationship or owning entity was
    /// renamed, old name → new: they are renamed (``rename(_:schema:on:)``), since a copy
    /// through plain keys would lose their rows' entities.
    static func joinTableRenames(
        _ step: StoreMigrationStep, old oldLayouts: [String: TableLayout], new newByName: [String: TableLayout]
    ) -> [(from: String, to: String)] {
        var renamed: [(from: String, to: String)] = []
        for map in step.entities {
            guard let old = oldLayouts[map.source.name], let new = newByName[map.destination.name] else { continue }
            for end in new.derived where end.ownsJoinTable && !end.joinEntityColumns.isEmpty {
                guard let p = map.sourceProperties[end.property], let was = old.derivedEnd(p), was.ownsJoinTable,
                    was.tableName != end.tableName, !renamed.contains(where: { $0.from == was.tableName })
                else { continue }
                renamed.append((was.tableName, end.tableName))
            }
        }
        return renamed
    }

    /// Renames join tables (see ``joinTableRenames(_:old:new:)``) with their primary keys and
    /// indexes.
    static func rename(_ renamed: [(from: String, to: String)], schema: String, on c: PostgreSQLConnection) throws {
        func table(_ name: String) -> String { "\(quote(schema)).\(quote(name))" }
        // Through temporary names: a join table may take a name another one gives up.
        let steps = renamed.enumerated().map { i, r in (r.from, "_pk_migrating_link_\(i)", r.to) }
        for (from, temporary, _) in steps {
            try c.execute("ALTER TABLE \(table(from)) RENAME TO \(quote(temporary))")
            try c.execute("ALTER TABLE \(table(temporary)) RENAME CONSTRAINT \(quote(StepMigration.primaryKeyName(from))) TO \(quote(temporary + "_pkey"))")
            try c.execute("ALTER INDEX \(table(from + "_target")) RENAME TO \(quote(temporary + "_target"))")
        }
        for (_, temporary, to) in steps {
            try c.execute("ALTER TABLE \(table(temporary)) RENAME TO \(quote(to))")
            try c.execute("ALTER TABLE \(table(to)) RENAME CONSTRAINT \(quote(temporary + "_pkey")) TO \(quote(StepMigration.primaryKeyName(to)))")
            try c.execute("ALTER INDEX \(table(temporary + "_target")) RENAME TO \(quote(to + "_target"))")
        }
    }
}

/// How a migration step moves entity numbers (see ``FamilyLinkMigration``): each kept
/// entity's old number → its new one, and the numbers of removed entities.
struct EntityRenumbering {
    let newNumber: [Int32: Int32]
    let removed: Set<Int32>

    init(_ step: StoreMigrationStep, old oldLayouts: [String: TableLayout], new newByName: [String: TableLayout]) {
        var numbers: [Int32: Int32] = [:]
        for map in step.entities {
            if let o = oldLayouts[map.source.name], let n = newByName[map.destination.name] { numbers[o.entity] = n.entity }
        }
        newNumber = numbers
        removed = Set(oldLayouts.values.map(\.entity)).subtracting(numbers.keys)
    }

    /// The numbers that change.
    var moved: [(old: Int32, new: Int32)] { newNumber.filter { $0.key != $0.value }.map { ($0.key, $0.value) }.sorted { $0.old < $1.old } }

    /// Whether no stored entity number changes or goes.
    var isIdentity: Bool { removed.isEmpty && moved.isEmpty }

    /// `column`'s new number, as an SQL expression (a moved number mapped, others kept).
    func mapped(_ column: String) -> String {
        let cases = moved.map { "WHEN \($0.old) THEN \($0.new)" }.joined(separator: " ")
        return cases.isEmpty ? column : "CASE \(column) \(cases) ELSE \(column) END"
    }

    /// The SQL list of removed numbers, e.g. `(3, 5)`.
    var removedList: String { "(" + removed.sorted().map(String.init).joined(separator: ", ") + ")" }

    /// Renumbers a to-one's entity column `entity` (with its key column `key`) of `table`:
    /// a link to a removed entity's row is cleared.
    func renumber(table: String, key: String, entity: String, on c: PostgreSQLConnection) throws {
        if !removed.isEmpty {
            try c.execute("UPDATE \(table) SET \(key) = NULL, \(entity) = NULL WHERE \(entity) IN \(removedList)")
        }
        if !moved.isEmpty {
            try c.execute("UPDATE \(table) SET \(entity) = \(mapped(entity)) WHERE \(entity) IN (\(moved.map { String($0.old) }.joined(separator: ", ")))")
        }
    }

    /// Renumbers the packed key list `column` of `table`: links to a removed entity's rows
    /// dropped, the others repacked; an unordered list stays ascending.
    func renumber(table: String, list column: String, ordered: Bool, on c: PostgreSQLConnection) throws {
        let f = EntityFamilyLinks.packFactor
        let entity = "(pkl.p / \(f))"
        let repacked = "(\(mapped(entity)) * \(f) + pkl.p % \(f))"
        let keep = removed.isEmpty ? "" : "WHERE \(entity) NOT IN \(removedList)"
        let order = ordered ? "pkl.i" : "1"
        try c.execute(
            "UPDATE \(table) SET \(column) = ARRAY(SELECT \(repacked) FROM unnest(\(column)) WITH ORDINALITY pkl(p, i) \(keep) ORDER BY \(order)) "
                + "WHERE \(column) IS NOT NULL AND cardinality(\(column)) > 0")
    }

    /// Renumbers a join table's entity columns: rows naming a removed entity's row go.
    /// The new numbers pass through negative ones, which no entity has, so that no two rows
    /// share a primary key midway.
    func renumber(joinTable table: String, entityColumns: [String], on c: PostgreSQLConnection) throws {
        for column in entityColumns.map(quote) {
            if !removed.isEmpty { try c.execute("DELETE FROM \(table) WHERE \(column) IN \(removedList)") }
            if moved.isEmpty { continue }
            try c.execute("UPDATE \(table) SET \(column) = -1 - \(mapped(column))")
            try c.execute("UPDATE \(table) SET \(column) = -1 - \(column)")
        }
    }
}
