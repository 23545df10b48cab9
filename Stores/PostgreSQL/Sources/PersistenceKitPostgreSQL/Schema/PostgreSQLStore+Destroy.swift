import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// Deletes the store of `model` at `url` (with the schema in `options`): its entity
    /// tables, join tables, family uniqueness key tables and their functions, key table and
    /// metadata table, then the schema itself when it is
    /// not `public` and holds nothing else. Nothing to delete is not an error. Close stores
    /// open on it first: their next statements fail.
    ///
    /// - Throws: ``PostgreSQLStoreError`` `.connectionFailed` or `.query`.
    public static func destroy(at url: URL?, options: [String: String] = [:], model: NSManagedObjectModel) throws {
        let conninfo = options[connectionStringOptionKey] ?? url?.absoluteString ?? ""
        let schema = options[schemaOptionKey] ?? "public"
        let c = try PostgreSQLConnection(conninfo: conninfo, target: url?.host ?? "PostgreSQL")
        let layouts = (try? TableLayout.all(of: model, schema: schema)) ?? []
        let joinTables = layouts.flatMap { $0.derived.filter(\.ownsJoinTable).map(\.tableName) }
        let tables = model.entities.map(\.name) + joinTables + ["_pk_keys", "_pk_metadata"]
        try c.execute("BEGIN")
        for name in tables { try c.execute("DROP TABLE IF EXISTS \(quote(schema)).\(quote(name)) CASCADE") }
        try FamilyUniqueness.dropAll(schema: schema, on: c)
        try c.execute("COMMIT")
        if schema != "public" {
            // Left in place when it holds tables of its own.
            _ = try? c.execute("DROP SCHEMA IF EXISTS \(quote(schema))")
        }
    }
}
