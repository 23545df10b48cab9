import Foundation
import PersistenceKit

/// Changes one kept entity's table (already under its new name) from the source layout to
/// the destination layout: drops removed columns, renames kept ones, converts their types,
/// checks and fills their values, and adds new ones at their default values.
///
/// Columns carry no `NOT NULL` (a store's rows are checked against the model when saved, as
/// in a freshly created store), so optionality changes are checks and fills, not DDL.
struct ColumnMigration {
    let map: StoreMigrationStep.EntityMapping
    let old: TableLayout
    let new: TableLayout
    /// The table, schema-qualified and quoted.
    let table: String
    let connection: PostgreSQLConnection
    /// For new columns of ends that were derived (no column) in the source layout: the
    /// temporary table (`pk`, `keys`) listing each row's links as they were.
    var derivedValues: [Int: String] = [:]
    /// How the step moves entity numbers, which links into entity families hold.
    var renumbering: EntityRenumbering? = nil

    /// A destination column and the source column it keeps the values of.
    private struct Kept {
        let from: Column
        let to: Column
    }

    func run() throws {
        var kept: [Kept] = []
        var added: [Column] = []
        var used = Set<String>()
        for to in new.columns {
            // A source column feeds one destination column; a second that names it starts
            // empty. A family to-one's entity column follows its key column.
            if let p = map.sourceProperties[to.property],
                let from = to.kind == .familyEntity ? old.columns.first(where: { $0.property == p && $0.kind == .familyEntity }) : old.column(p),
                used.insert(from.name).inserted
            {
                kept.append(Kept(from: from, to: to))
            } else {
                added.append(to)
            }
        }
        let c = connection
        for col in old.columns where !used.contains(col.name) {
            try c.execute("ALTER TABLE \(table) DROP COLUMN \(col.quoted)")
        }
        // Through temporary names: two properties may trade names.
        let renamed = kept.filter { $0.from.name != $0.to.name }
        for (i, k) in renamed.enumerated() {
            try c.execute("ALTER TABLE \(table) RENAME COLUMN \(k.from.quoted) TO \(quote("_pk_migrating_\(i)"))")
        }
        for (i, k) in renamed.enumerated() {
            try c.execute("ALTER TABLE \(table) RENAME COLUMN \(quote("_pk_migrating_\(i)")) TO \(k.to.quoted)")
        }
        // One ALTER TABLE for every type change: PostgreSQL rewrites the table (and rebuilds
        // its indexes) once, not once per column.
        let conversions = try kept.compactMap { try conversion(of: $0) }
        if !conversions.isEmpty {
            try c.execute("ALTER TABLE \(table) " + conversions.joined(separator: ", "))
        }
        for k in kept {
            // A column that was required holds no nils: nothing to fill or check.
            if !((map.source.properties[k.from.property] as? NSAttributeDescription).map { !$0.isOptional } ?? false) {
                try fill(k.to)
            }
        }
        for col in added {
            if let listed = derivedValues[col.property] {
                try add(col, listedIn: listed)
            } else {
                try add(col)
            }
            // A to-one whose destination gained sub-entities: its links are to the
            // destination itself.
            if col.kind == .familyEntity, let key = new.column(col.property), case let .familyToOne(destination) = key.kind,
                let p = map.sourceProperties[col.property], case .toOne? = old.column(p)?.kind
            {
                try c.execute("UPDATE \(table) SET \(col.quoted) = \(destination) WHERE \(key.quoted) IS NOT NULL")
            }
        }
        for k in kept { try keepFamilyLinks(k) }
    }

    /// Renumbers the entities a kept family link holds, and packs a key list whose
    /// destination gained sub-entities (see ``FamilyLinkMigration``).
    private func keepFamilyLinks(_ k: Kept) throws {
        let ordered = (map.destination.properties[k.to.property] as? NSRelationshipDescription)?.isOrdered ?? false
        switch (k.from.kind, k.to.kind) {
        case (.familyEntity, .familyEntity):
            guard let renumbering, !renumbering.isIdentity, let key = new.column(k.to.property) else { return }
            try renumbering.renumber(table: table, key: key.quoted, entity: k.to.quoted, on: connection)
        case (.familyToMany, .familyToMany):
            guard let renumbering, !renumbering.isIdentity else { return }
            try renumbering.renumber(table: table, list: k.to.quoted, ordered: ordered, on: connection)
        case let (.toMany, .familyToMany(destination)):
            let f = EntityFamilyLinks.packFactor
            let order = ordered ? "pkl.i" : "1"
            try connection.execute(
                "UPDATE \(table) SET \(k.to.quoted) = ARRAY(SELECT \(Int64(destination) * f)::bigint + pkl.k "
                    + "FROM unnest(\(k.to.quoted)) WITH ORDINALITY pkl(k, i) ORDER BY \(order)) WHERE cardinality(\(k.to.quoted)) > 0")
        default:
            return
        }
    }

    /// The `ALTER COLUMN … TYPE … USING …` clause that converts a kept column whose SQL
    /// type changes (nil when it keeps its type), after checking that every stored value fits.
    private func conversion(of k: Kept) throws -> String? {
        let (from, to) = (k.from.kind, k.to.kind)
        guard from.sqlType != to.sqlType else { return nil }
        let col = k.to.quoted
        let using: String
        switch (from, to) {
        case (.toOne, .toMany):
            using = "CASE WHEN \(col) IS NULL THEN '{}'::bigint[] ELSE ARRAY[\(col)] END"
        case (.toMany, .toOne):
            try refuse(where: "cardinality(\(col)) > 1", k.to) { .toManyHoldsSeveral(primaryKey: $0) }
            using = "\(col)[1]"
        case (.float, .decimal):
            // Through double precision, as the file store converts: the Float's exact value.
            using = "\(col)::double precision::numeric"
        default:
            if let range = Self.range(of: to) {
                try refuse(where: "\(col) < \(range.lowerBound) OR \(col) > \(range.upperBound)", k.to) {
                    .valueDoesNotFit(primaryKey: $0)
                }
            }
            using = "\(col)::\(to.sqlType)"
        }
        return "ALTER COLUMN \(col) TYPE \(to.sqlType) USING \(using)"
    }

    /// The values a narrower integer column holds.
    private static func range(of kind: ColumnKind) -> ClosedRange<Int64>? {
        switch kind {
        case .int16: Int64(Int16.min)...Int64(Int16.max)
        case .int32: Int64(Int32.min)...Int64(Int32.max)
        default: nil
        }
    }

    /// Gives the stored nils of a required attribute its default value; throws when it has
    /// none and a stored object has no value.
    private func fill(_ col: Column) throws {
        guard let a = map.destination.properties[col.property] as? NSAttributeDescription, !a.isOptional else { return }
        let value = map.defaultValues[col.property]
        if !value.isNull, let literal = try Self.literal(value, col.kind, attribute: a, entity: map.destination.name) {
            try connection.execute("UPDATE \(table) SET \(col.quoted) = \(literal) WHERE \(col.quoted) IS NULL")
        }
        try refuse(where: "\(col.quoted) IS NULL", col) { .requiredWithoutDefault(primaryKey: $0) }
    }

    /// Adds a column, every stored row at the property's default value (a to-many empty).
    private func add(_ col: Column) throws {
        let property = map.destination.properties[col.property]
        var fill: String?
        if case .toMany = col.kind {
            fill = "'{}'::bigint[]"
        } else if let a = property as? NSAttributeDescription {
            fill = try Self.literal(map.defaultValues[col.property], col.kind, attribute: a, entity: map.destination.name)
            if fill == nil, !a.isOptional {
                try refuse(where: "true", col) { .requiredWithoutDefault(primaryKey: $0) }
            }
        }
        guard let fill else {
            try connection.execute("ALTER TABLE \(table) ADD COLUMN \(col.quoted) \(col.kind.sqlType)")
            return
        }
        // A constant default fills the stored rows without rewriting the table; dropping it
        // afterwards leaves the column as a new store's (inserts always name every column).
        try connection.execute("ALTER TABLE \(table) ADD COLUMN \(col.quoted) \(col.kind.sqlType) DEFAULT \(fill)")
        try connection.execute("ALTER TABLE \(table) ALTER COLUMN \(col.quoted) DROP DEFAULT")
    }

    /// Adds the column of an end that had none (it was derived from its inverse), filled
    /// with the links `listed` (a temporary table of `pk`, `keys`) holds. A to-one takes the
    /// one row listed; a row listing several is refused.
    private func add(_ col: Column, listedIn listed: String) throws {
        let c = connection
        if case .toOne = col.kind {
            let r = try c.execute("SELECT pk FROM \(listed) WHERE cardinality(keys) > 1 ORDER BY pk LIMIT 1")
            if r.count == 1, let pk = Int64(r.text(0, 0)) {
                throw MigrationError.storedValue(
                    .toManyHoldsSeveral(primaryKey: pk), entity: map.destination.name, property: col.name, type: nil)
            }
        }
        try add(col)
        let value = if case .toOne = col.kind { "l.keys[1]" } else { "l.keys" }
        try c.execute(
            "UPDATE \(table) t SET \(col.quoted) = \(value) FROM \(listed) l WHERE l.pk = t.\"_pk\" AND cardinality(l.keys) > 0")
    }

    /// Throws the ``PersistenceKit/MigrationError`` `kind` names for the first stored row
    /// (by primary key) where `condition` holds.
    private func refuse(where condition: String, _ col: Column, _ kind: (Int64) -> MigrationError.Kind) throws {
        let r = try connection.execute("SELECT \"_pk\" FROM \(table) WHERE \(condition) ORDER BY \"_pk\" LIMIT 1")
        guard r.count == 1, let pk = Int64(r.text(0, 0)) else { return }
        let type = (map.destination.properties[col.property] as? NSAttributeDescription)?.attributeType
        throw MigrationError.storedValue(kind(pk), entity: map.destination.name, property: col.name, type: type)
    }

    /// `value` as an SQL constant of the column's type, or nil for `.null`. Values from the
    /// model only; a text constant has its quotes doubled (standard-conforming strings,
    /// PostgreSQL's default since 9.1), bytes are written in hex.
    static func literal(_ value: StoreValue, _ kind: ColumnKind, attribute: NSAttributeDescription, entity: String) throws -> String? {
        if value.isNull { return nil }
        switch ValueCoding.encode(value, kind) {
        case .null?: return nil
        case let .text(s)?: return "'" + s.replacingOccurrences(of: "'", with: "''") + "'::" + kind.sqlType
        case let .binary(d)?: return "'\\x" + d.map { String(format: "%02x", $0) }.joined() + "'::bytea"
        case nil:
            throw PostgreSQLStoreError(
                .unsupportedModel, target: entity,
                "the default value of \(entity).\(attribute.name) cannot be stored in a \(kind.sqlType) column.")
        }
    }
}
