import Foundation

/// The SQL of the statements a store runs for every row of one table, built once when the
/// store opens rather than on every save and read (each is also the key its prepared
/// statement is found by on a connection).
struct TableStatements: Sendable {
    /// Writes a row over the stored one at the next version when the stored one is at the
    /// expected version: `$1` the key, `$2…` the columns in order, the last the version.
    let update: String
    /// ``update`` that fails with SQLSTATE 22012 (division by zero) when it changed no row
    /// (the stored row is at another version, or gone), which aborts its transaction: a
    /// commit sent whole, `COMMIT` included, then commits nothing. Its one row is 1.
    let checkedUpdate: String
    /// Reads one row by key (`$1`), its values in binary form (``TableLayout/decodeRow(_:_:skip:)``).
    let fetchByKey: String
    /// Reads one row's version by key (`$1`).
    let versionByKey: String

    init(_ t: TableLayout) {
        let n = t.columns.count
        let sets = t.columns.enumerated().map { "\($1.quoted) = $\($0 + 2)" } + ["\"_version\" = $\(n + 2) + 1"]
        update = "UPDATE \(t.table) SET \(sets.joined(separator: ", ")) WHERE \"_pk\" = $1 AND \"_version\" = $\(n + 2)"
        checkedUpdate = "WITH u AS (\(update) RETURNING 1) SELECT 1 / count(*) FROM u"
        fetchByKey = "SELECT \(t.selectList) FROM \(t.table) WHERE \"_pk\" = $1"
        versionByKey = "SELECT \"_version\" FROM \(t.table) WHERE \"_pk\" = $1"
    }
}
