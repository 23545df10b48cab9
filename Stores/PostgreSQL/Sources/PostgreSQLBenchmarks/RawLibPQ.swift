import CLibPQ
import Foundation

/// The baseline: the five workloads as a hand-written libpq program does them (prepared
/// statements, one connection, text parameters, one statement per round trip), in its own
/// schema, with the work the store's guarantees need and no more: a single save reads the
/// row first (the version its check compares with; the object API reads it when the object
/// is first changed), then runs one transaction that updates the row only at that version,
/// and sends a `NOTIFY` for other processes; a reopen checks the store's metadata (the
/// model it was made with) before counting.
enum RawLibPQ {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    final class Connection {
        let conn: OpaquePointer

        init(_ conninfo: String) throws {
            guard let c = PQconnectdb(conninfo), PQstatus(c) == CONNECTION_OK else {
                throw Failure(description: "cannot connect to \(conninfo)")
            }
            conn = c
            PQsetNoticeProcessor(c, { _, _ in }, nil)
        }

        deinit { PQfinish(conn) }

        func exec(_ sql: String) throws {
            let r = PQexec(conn, sql)
            defer { PQclear(r) }
            let s = PQresultStatus(r)
            guard s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK else {
                throw Failure(description: String(cString: PQerrorMessage(conn)))
            }
        }

        func prepare(_ name: String, _ sql: String) throws {
            let r = PQprepare(conn, name, sql, 0, nil)
            defer { PQclear(r) }
            guard PQresultStatus(r) == PGRES_COMMAND_OK else { throw Failure(description: String(cString: PQerrorMessage(conn))) }
        }

        /// Runs a statement without parameters; calls `row` for each result row.
        func query(_ sql: String, row: (OpaquePointer, Int32) -> Void) throws {
            let r = PQexec(conn, sql)
            defer { PQclear(r) }
            guard PQresultStatus(r) == PGRES_TUPLES_OK, let r else { throw Failure(description: String(cString: PQerrorMessage(conn))) }
            for i in 0..<PQntuples(r) { row(r, i) }
        }

        /// Runs a prepared statement with text parameters; calls `row` for each result row;
        /// returns the number of rows it returned or changed.
        @discardableResult
        func run(_ name: String, _ params: [String], row: (OpaquePointer, Int32) -> Void = { _, _ in }) throws -> Int {
            var cStrings = params.map { strdup($0) }
            defer { for p in cStrings { free(p) } }
            let values: [UnsafePointer<CChar>?] = cStrings.map { UnsafePointer($0) }
            let r = PQexecPrepared(conn, name, Int32(params.count), values, nil, nil, 0)
            defer { PQclear(r) }
            let s = PQresultStatus(r)
            guard s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK, let r else {
                throw Failure(description: String(cString: PQerrorMessage(conn)))
            }
            for i in 0..<PQntuples(r) { row(r, i) }
            cStrings.removeAll()
            return s == PGRES_TUPLES_OK ? Int(PQntuples(r)) : Int(String(cString: PQcmdTuples(r))) ?? 0
        }
    }

    static func run(n: Int, conninfo: String) throws -> Figures {
        var f = Figures()
        let db = try Connection(conninfo)
        try db.exec("DROP SCHEMA IF EXISTS pk_bench_raw CASCADE; CREATE SCHEMA pk_bench_raw")
        try db.exec(
            "CREATE TABLE pk_bench_raw.item(pk bigint PRIMARY KEY, version bigint NOT NULL, title text, timestamp double precision, "
                + "count bigint, flag bigint)")
        try db.exec("CREATE INDEX item_count ON pk_bench_raw.item(count)")
        try db.exec("CREATE TABLE pk_bench_raw.meta(key text PRIMARY KEY, value text NOT NULL)")
        try db.exec("INSERT INTO pk_bench_raw.meta VALUES ('uuid', 'raw'), ('model', 'raw')")
        try db.prepare("ins", "INSERT INTO pk_bench_raw.item(pk, version, title, timestamp, count, flag) VALUES($1,1,$2,$3,$4,$5)")
        try db.prepare("get", "SELECT pk, version, title, timestamp, count, flag FROM pk_bench_raw.item WHERE pk=$1")
        try db.prepare("upd", "UPDATE pk_bench_raw.item SET title=$1, version=version+1 WHERE pk=$2 AND version=$3")
        try db.prepare("ntf", "SELECT pg_notify($1, $2)")
        try db.prepare("q", "SELECT pk, version, title, timestamp, count, flag FROM pk_bench_raw.item WHERE count=$1")
        try db.prepare("s", "SELECT pk, version, title, timestamp, count, flag FROM pk_bench_raw.item WHERE flag=1 AND timestamp>$1")

        f.insertSave = try seconds {
            try db.exec("BEGIN")
            for i in 0..<n {
                try db.run("ins", [String(i + 1), "Item number \(i)", "\(1e9 + Double(i))", String(i % 1000), String(i & 1)])
            }
            try db.run("ntf", ["pk_bench_raw", "I0:1-\(n)"])
            try db.exec("COMMIT")
        }
        f.singleSave =
            try seconds {
                for i in 0..<1000 {
                    let pk = String((i * 97) % n + 1)
                    var version = ""
                    try db.run("get", [pk]) { r, i in version = String(cString: PQgetvalue(r, i, 1)) }
                    try db.exec("BEGIN")
                    guard try db.run("upd", ["renamed", pk, version]) == 1 else { throw Failure(description: "row \(pk) changed") }
                    try db.run("ntf", ["pk_bench_raw", "U0:" + pk])
                    try db.exec("COMMIT")
                }
            } * 1e6 / 1000
        f.indexedFetch = try seconds {
            for k in 0..<100 {
                try db.run("q", [String(k)]) { r, i in
                    f.indexedRows += 1
                    _ = String(cString: PQgetvalue(r, i, 2))
                    _ = Double(String(cString: PQgetvalue(r, i, 3)))
                }
            }
        }
        f.scanFetch = try seconds {
            try db.run("s", ["\(1e9 + Double(n / 2))"]) { r, i in
                f.scanRows += 1
                _ = String(cString: PQgetvalue(r, i, 2))
            }
        }
        f.reopenCount = try seconds {
            let again = try Connection(conninfo)
            var model = ""
            try again.query("SELECT key, value FROM pk_bench_raw.meta") { r, i in
                if String(cString: PQgetvalue(r, i, 0)) == "model" { model = String(cString: PQgetvalue(r, i, 1)) }
            }
            guard model == "raw" else { throw Failure(description: "the schema holds another model") }
            try again.prepare("c", "SELECT count(*) FROM pk_bench_raw.item")
            try again.run("c", []) { r, i in f.reopenedRows = Int(String(cString: PQgetvalue(r, i, 0))) ?? 0 }
        }
        try db.exec("DROP SCHEMA pk_bench_raw CASCADE")
        return f
    }
}
