import Foundation
import PersistenceKit

extension SQLTranslator {
    /// The LEFT JOIN, as `alias`, of the row a to-one into an entity family (`key`, of the
    /// row `from`) links to: every table of `destination`'s family, each with the columns
    /// of `destination` (which its sub-entities inherit under the same names) and its own
    /// entity, matched on key and entity. PostgreSQL pushes the match into each table's
    /// primary key index.
    func familyJoin(_ alias: String, destination: Int32, from: String, in entity: Int32, key: Column) -> String {
        let root = layouts[Int(destination)]
        let columns = (["\"_pk\""] + root.columns.map(\.quoted)).joined(separator: ", ")
        let members = (layouts[Int(entity)].familyTables[destination] ?? []).map {
            "SELECT \($0.entity) AS \"_pk_entity\", \(columns) FROM \($0.table)"
        }
        let entityColumn = "\(from).\(quote(EntityFamilyLinks.entityColumn(of: key.name)))"
        return "LEFT JOIN (\(members.joined(separator: " UNION ALL "))) \(alias) ON \(alias).\"_pk\" = \(from).\(key.quoted) "
            + "AND \(alias).\"_pk_entity\" = \(entityColumn)"
    }

    /// `path == value` or `path != value` as SQL when `path` ends in a to-one into an entity
    /// family (its key column and the entity column after it) and `value` is nil or an
    /// object: both columns are compared, since keys are counted per entity. nil for any
    /// other comparison (left to memory). Under `negated` the SQL is two-valued.
    mutating func familyToOneCompare(
        _ path: StorePath, _ op: StoreFilter.Condition.Operator, _ value: StoreValue, _ scope: inout Scope, negated: Bool
    ) -> String? {
        guard op == .equal || op == .notEqual, let (alias, entity) = table(path, &scope),
            let col = layouts[Int(entity)].column(path.property), case .familyToOne = col.kind
        else { return nil }
        let key = "\(alias).\(col.quoted)"
        switch value {
        case .null:
            return op == .equal ? "\(key) IS NULL" : "\(key) IS NOT NULL"
        case let .reference(id):
            let entityColumn = "\(alias).\(quote(EntityFamilyLinks.entityColumn(of: col.name)))"
            let same = "\(key) = \(bind(.text(String(id.primaryKey))))::bigint AND \(entityColumn) = \(id.entity)"
            // A nil link differs from every object (Swift's optional semantics).
            if op == .notEqual { return "NOT COALESCE((\(same)), FALSE)" }
            return negated ? "COALESCE((\(same)), FALSE)" : "(\(same))"
        default:
            return nil
        }
    }
}
