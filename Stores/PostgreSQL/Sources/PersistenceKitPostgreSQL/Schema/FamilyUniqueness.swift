import Foundation
import PersistenceKit

/// Uniqueness constraints that span an entity family (see
/// ``PersistenceKit/StoreUniquenessConstraint``): a constraint `Animal` declares holds
/// across the tables of `Animal`, `Dog` and `Cat` together, as it does in the file and
/// in-memory stores. A unique index covers one table only, so each such constraint has a
/// key table of its own, `_pk_unique_<scope>_<k>`: one row per stored row of the family with
/// the constrained values, under a `UNIQUE … DEFERRABLE INITIALLY DEFERRED` constraint.
///
/// Triggers on each member table keep the key table (an insert adds the row's key, a
/// delete removes it, an update that changes a constrained value moves it), so every write
/// is covered, batch requests and other processes' included, and a clash fails the commit
/// with SQLSTATE 23505 like a one-table constraint, which the commit path reports as
/// constraint conflicts. A constraint of one entity alone keeps its table's own constraint
/// (see ``SchemaBuilder/indexes(of:support:)``).
///
/// Key tables, their trigger functions (`pk_uqf_…`) and the triggers are all made from the
/// model: a migration drops them before it changes tables and makes them again afterwards
/// (filled from the migrated rows, so a clash among those fails the migration).
struct FamilyUniqueness {
    /// One constraint spanning a family, with the names of what keeps it.
    struct Keys {
        let constraint: StoreUniquenessConstraint
        /// `_pk_unique_<scope>_<k>` (the scope entity's number), unquoted: numbers, not names,
        /// so that every name the store makes stays within PostgreSQL's 63 bytes.
        let tableName: String
        /// `pk_uqf_<scope>_<k>`, unquoted.
        let functionName: String
        /// The constrained columns: name, SQL type and whether it holds floating-point
        /// numbers, as the scope's table has them (its members inherit the same columns).
        let columns: [(name: String, type: String, floating: Bool)]
    }

    let keys: [Keys]
    let layouts: [TableLayout]
    let schema: String

    /// The family constraints of `support`'s model, over `layouts` (that model's tables).
    init(layouts: [TableLayout], support: StoreCommitSupport, schema: String) {
        self.layouts = layouts
        self.schema = schema
        var keys: [Keys] = []
        var perScope: [Int32: Int] = [:]
        for c in support.uniquenessConstraints where c.spansFamily {
            let scope = layouts[Int(c.scope)]
            let k = perScope[c.scope, default: 0]
            perScope[c.scope] = k + 1
            let columns = c.columns.compactMap { scope.column($0) }.map { (name: $0.name, type: $0.kind.sqlType, floating: $0.kind.isFloating) }
            keys.append(
                Keys(constraint: c, tableName: "_pk_unique_\(c.scope)_\(k)", functionName: "pk_uqf_\(c.scope)_\(k)", columns: columns))
        }
        self.keys = keys
    }

    /// Whether `entity`'s constraint on `columns` spans a family (then no unique constraint
    /// of `entity`'s table holds it).
    func spansFamily(_ entity: Int32, columns: [Int]) -> Bool {
        keys.contains { $0.constraint.columns == columns && $0.constraint.members.contains(entity) }
    }

    private func qualified(_ name: String) -> String { "\(quote(schema)).\(quote(name))" }

    /// The statements that make `k`'s key table, filled from the rows stored now, with its
    /// function and triggers. The unique constraint is added after the fill, so a clash among
    /// stored rows fails its statement (SQLSTATE 23505).
    private func createStatements(_ k: Keys) -> [String] {
        var statements: [String] = []
        let table = qualified(k.tableName)
        let names = k.columns.map { quote($0.name) }
        let list = names.joined(separator: ", ")
        // NaN is stored as NULL: PostgreSQL's unique check takes NaN for equal to NaN, where
        // the model's constraints take a row holding NaN for distinct from every other.
        func values(_ row: String) -> String {
            k.columns.map { c in c.floating ? "NULLIF(\(row)\(quote(c.name)), 'NaN')" : "\(row)\(quote(c.name))" }
                .joined(separator: ", ")
        }
        // Writers wait while the key table is filled and its triggers made: a row written in
        // between would be missing from it, or one deleted kept.
        let members = k.constraint.members.map { layouts[Int($0)].table }.joined(separator: ", ")
        statements.append("LOCK TABLE \(members) IN SHARE ROW EXCLUSIVE MODE")
        statements.append(
            "CREATE TABLE \(table) (\"entity\" integer NOT NULL, \"pk\" bigint NOT NULL, "
                + k.columns.map { "\(quote($0.name)) \($0.type), " }.joined() + "PRIMARY KEY (\"entity\", \"pk\"))")
        for m in k.constraint.members {
            statements.append(
                "INSERT INTO \(table) (\"entity\", \"pk\", \(list)) SELECT \(m), \"_pk\", \(values("")) FROM \(layouts[Int(m)].table)")
        }
        statements.append(
            "ALTER TABLE \(table) ADD CONSTRAINT \(quote(k.tableName + "_key")) UNIQUE (\(list)) DEFERRABLE INITIALLY DEFERRED")
        // The row's entity comes as the trigger's argument: keys are counted per entity,
        // so `_pk` alone does not name a row of the family.
        let newValues = values("NEW.")
        statements.append(
            """
            CREATE FUNCTION \(qualified(k.functionName))() RETURNS trigger LANGUAGE plpgsql AS $pk$
            BEGIN
              IF TG_OP <> 'INSERT' THEN
                DELETE FROM \(table) WHERE "entity" = TG_ARGV[0]::integer AND "pk" = OLD."_pk";
              END IF;
              IF TG_OP <> 'DELETE' THEN
                INSERT INTO \(table) ("entity", "pk", \(list)) VALUES (TG_ARGV[0]::integer, NEW."_pk", \(newValues));
              END IF;
              RETURN NULL;
            END $pk$
            """)
        // An update that leaves the constrained values as they were costs nothing.
        let changed = names.map { "OLD.\($0) IS DISTINCT FROM NEW.\($0)" }.joined(separator: " OR ")
        for m in k.constraint.members {
            let member = layouts[Int(m)].table
            let function = "\(qualified(k.functionName))(\(m))"
            statements.append(
                "CREATE TRIGGER \(quote(k.functionName + "_w")) AFTER INSERT OR DELETE ON \(member) FOR EACH ROW EXECUTE FUNCTION \(function)")
            statements.append(
                "CREATE TRIGGER \(quote(k.functionName + "_u")) AFTER UPDATE ON \(member) FOR EACH ROW WHEN (\(changed)) "
                    + "EXECUTE FUNCTION \(function)")
        }
        return statements
    }

    /// Makes every key table with its function and triggers on `c`, inside the caller's
    /// transaction, each filled from the rows stored now.
    ///
    /// - Throws: ``PostgreSQLStoreError`` `.query` with SQLSTATE 23505, saying which family
    ///   and properties, when stored rows of different entities of a family share values a
    ///   constraint spanning it forbids (rows saved while such constraints were held per
    ///   table); other server errors as they come.
    func create(on c: PostgreSQLConnection, target: String) throws {
        for k in keys {
            do {
                for statement in createStatements(k) { try c.execute(statement) }
            } catch {
                // `execute` throws only PostgreSQLStoreError.
                guard error.sqlState == "23505" else { throw error }
                let scope = layouts[Int(k.constraint.scope)].entityName
                let members = k.constraint.members.map { layouts[Int($0)].entityName }.joined(separator: ", ")
                throw PostgreSQLStoreError(
                    .query, target: target,
                    "schema \(schema): stored objects of \(members) share values of \(k.columns.map(\.name).joined(separator: ", ")), "
                        + "which \(scope) declares unique across all of them (saved while the constraint held within each "
                        + "entity alone): change or delete the duplicates, then open the store again (\(error.message))",
                    sqlState: error.sqlState)
            }
        }
    }

    /// Whether a key table this model needs is missing: the store was made by a build that
    /// held family constraints per table.
    func isMissing(on c: PostgreSQLConnection) throws -> Bool {
        for k in keys {
            let r = try c.execute("SELECT to_regclass($1) IS NULL", [.text(qualified(k.tableName))], prepare: false)
            if r.text(0, 0) == "t" { return true }
        }
        return false
    }

    /// Drops every key table and trigger function of the schema (the triggers go with their
    /// functions), whatever model made them (named by entity or, from earlier builds, by
    /// entity name): a migration's steps then change tables freely.
    static func dropAll(schema: String, on c: PostgreSQLConnection) throws {
        let functions = try c.execute(
            """
            SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = $1 AND left(p.proname, 7) = 'pk_uqf_'
            """, [.text(schema)], prepare: false)
        for i in 0..<functions.count {
            try c.execute("DROP FUNCTION \(quote(schema)).\(quote(functions.text(i, 0)))() CASCADE")
        }
        let tables = try c.execute(
            """
            SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind = 'r' AND left(c.relname, 11) = '_pk_unique_'
            """, [.text(schema)], prepare: false)
        for i in 0..<tables.count {
            try c.execute("DROP TABLE \(quote(schema)).\(quote(tables.text(i, 0)))")
        }
    }
}
