import BenchmarkSupport
import CSQLite

/// SQLite's side of the migration benchmark: a table of `n` items (id, name, value), then
/// the time to open it and count its rows unchanged, to add a nullable column
/// (`ALTER TABLE … ADD COLUMN`, which rewrites nothing) and count, and to rebuild the table
/// with a renamed, widened column (`CREATE TABLE … AS SELECT`, drop, rename, in one
/// transaction), the rewrite a changed column type needs in SQLite.
public struct SQLiteMigrationFigures: Sendable {
    public var openUnchanged: Double
    public var addColumn: Double
    public var rebuild: Double
}

public func sqliteMigrationBaseline(n: Int, path: String) throws -> SQLiteMigrationFigures {
    func build() throws {
        removeDatabase(at: path)
        var db: OpaquePointer?
        try check(sqlite3_open(path, &db), db, "open")
        defer { sqlite3_close(db) }
        try exec(db, "PRAGMA journal_mode=WAL")
        try exec(db, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, value INTEGER NOT NULL)")
        try exec(db, "BEGIN")
        let insert = try prepare(db, "INSERT INTO items (name, value) VALUES (?, ?)")
        defer { sqlite3_finalize(insert) }
        let text = NumberedText(prefix: "Item number ")
        for i in 0..<n {
            let (bytes, length) = text.write(i)
            sqlite3_bind_text(insert, 1, bytes, length, transient)
            sqlite3_bind_int64(insert, 2, Int64(i % 1000))
            try check(sqlite3_step(insert), db, "insert")
            sqlite3_reset(insert)
        }
        try exec(db, "COMMIT")
    }
    func timed(_ sql: [String]) throws -> Double {
        try build()
        return try seconds {
            var db: OpaquePointer?
            try check(sqlite3_open(path, &db), db, "open")
            defer { sqlite3_close(db) }
            for statement in sql { try exec(db, statement) }
            let count = try prepare(db, "SELECT count(*) FROM items")
            defer { sqlite3_finalize(count) }
            try check(sqlite3_step(count), db, "count")
            guard sqlite3_column_int64(count, 0) == Int64(n) else { throw SQLiteError(operation: "count", message: "wrong row count") }
        }
    }
    defer { removeDatabase(at: path) }
    return SQLiteMigrationFigures(
        openUnchanged: try timed([]),
        addColumn: try timed(["ALTER TABLE items ADD COLUMN note TEXT"]),
        rebuild: try timed([
            "BEGIN",
            "CREATE TABLE items2 AS SELECT id, name, CAST(value AS INTEGER) AS amount FROM items",
            "DROP TABLE items", "ALTER TABLE items2 RENAME TO items", "COMMIT",
        ]))
}
