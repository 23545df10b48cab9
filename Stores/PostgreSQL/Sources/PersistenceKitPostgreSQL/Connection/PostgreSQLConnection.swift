import CLibPQ
import Foundation

/// One value sent with a statement: text in PostgreSQL's input syntax for the parameter's
/// type, raw bytes for a `bytea`, or SQL NULL. Values only ever travel as parameters; no
/// statement is built from a value.
enum SQLParameter: Sendable {
    case null
    case text(String)
    case binary(Data)
}

/// One libpq connection (`PGconn`), with the statements it has prepared.
///
/// # Thread safety
/// A connection is used by one thread at a time: the pool hands it to one borrower and
/// takes it back when the borrower is done (see ``ConnectionPool``), and the listener owns
/// its own connection outright.
final class PostgreSQLConnection: @unchecked Sendable {
    // @unchecked Sendable: one borrower at a time (see the type's comment); libpq allows a
    // PGconn to move between threads as long as two threads never use it at once.
    let handle: OpaquePointer
    /// Names of the statements prepared on this connection, by SQL text.
    var prepared: [String: String] = [:]
    /// Where the connection goes, for messages (the password left out).
    let target: String

    /// Opens a connection with a `postgresql://` URL or a libpq keyword string.
    ///
    /// - Throws: ``PostgreSQLStoreError`` `.connectionFailed` with libpq's message.
    init(conninfo: String, target: String) throws(PostgreSQLStoreError) {
        guard let conn = PQconnectdb(conninfo) else {
            throw PostgreSQLStoreError(.connectionFailed, target: target, "libpq could not allocate a connection.")
        }
        self.target = target
        if PQstatus(conn) != CONNECTION_OK {
            let message = String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(conn)
            throw PostgreSQLStoreError(
                .connectionFailed, target: target,
                "could not connect: \(message). Check that the server runs and the URL (host, port, user, database) is right.")
        }
        self.handle = conn
        // Notices (CREATE … IF NOT EXISTS on an existing table) are not errors: dropped
        // instead of printed on stderr.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Set when a statement failed because the connection dropped, though libpq may still
    /// report it open (a failed send leaves its status at OK), or when a pipeline left the
    /// connection in a state no later statement can use (its results not all read): a
    /// broken connection is not given back to the pool.
    var broken = false

    /// Whether the connection is still up (false once the server went away).
    var isHealthy: Bool { !broken && PQstatus(handle) == CONNECTION_OK }

    /// The socket, for waiting on notifications.
    var socket: Int32 { PQsocket(handle) }

    /// The last error libpq reported on this connection.
    var errorMessage: String {
        String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `sql` (one or more statements, no parameters) and returns the last result.
    @discardableResult
    func execute(_ sql: String) throws(PostgreSQLStoreError) -> PostgreSQLResult {
        try check(PQexec(handle, sql), sql)
    }

    /// Runs one statement with parameters `$1…$n`, prepared once per connection when
    /// `prepare` is true (statements run often; the first run prepares and runs it in one
    /// round trip), else sent with `PQexecParams`.
    ///
    /// With `binary`, the values come back in PostgreSQL's binary forms (what
    /// ``TableLayout/decodeRow(_:_:skip:)`` reads: numbers and bytes need no parsing).
    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLParameter], prepare: Bool = true, binary: Bool = false)
        throws(PostgreSQLStoreError) -> PostgreSQLResult
    {
        let name = prepare ? prepared[sql] : nil
        if prepare && name == nil {
            do {
                return try pipeline([SQLStatement(sql: sql, parameters: parameters, binary: binary)])[0]
            } catch {
                throw error.error
            }
        }
        return try withParameters(parameters) { values, lengths, formats throws(PostgreSQLStoreError) in
            let n = Int32(parameters.count)
            let result =
                if let name {
                    PQexecPrepared(handle, name, n, values, lengths, formats, binary ? 1 : 0)
                } else {
                    PQexecParams(handle, sql, n, nil, values, lengths, formats, binary ? 1 : 0)
                }
            return try check(result, sql, binary: binary)
        }
    }

    /// Reads what the server sent (notifications) without waiting.
    func consumeInput() throws(PostgreSQLStoreError) {
        if PQconsumeInput(handle) == 0 {
            throw PostgreSQLStoreError(.connectionLost, target: target, "the connection dropped: \(errorMessage).")
        }
    }

    /// The next notification received, as (channel, payload), or nil.
    func nextNotification() -> (channel: String, payload: String)? {
        guard let n = PQnotifies(handle) else { return nil }
        defer { PQfreemem(n) }
        return (String(cString: n.pointee.relname), String(cString: n.pointee.extra))
    }

    /// Calls `body` with C arrays of the parameters' bytes, lengths and formats, valid for
    /// the call only.
    func withParameters<T>(
        _ parameters: [SQLParameter],
        _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) throws(PostgreSQLStoreError) -> T
    ) throws(PostgreSQLStoreError) -> T {
        // Each value is copied into one buffer owned here, so every pointer handed to libpq
        // stays valid until `body` returns.
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var offsets: [Int?] = []
        var buffer: [UInt8] = []
        lengths.reserveCapacity(parameters.count)
        formats.reserveCapacity(parameters.count)
        offsets.reserveCapacity(parameters.count)
        for p in parameters {
            switch p {
            case .null:
                offsets.append(nil)
                lengths.append(0)
                formats.append(0)
            case let .text(s):
                offsets.append(buffer.count)
                buffer.append(contentsOf: s.utf8)
                buffer.append(0)
                lengths.append(0)
                formats.append(0)
            case let .binary(d):
                offsets.append(buffer.count)
                buffer.append(contentsOf: d)
                buffer.append(0)
                lengths.append(Int32(d.count))
                formats.append(1)
            }
        }
        if buffer.isEmpty { buffer.append(0) }
        return try buffer.withUnsafeBufferPointer { raw throws(PostgreSQLStoreError) -> T in
            // Never nil: the buffer holds at least one byte (see above).
            let base = UnsafeRawPointer(raw.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values: [UnsafePointer<CChar>?] = offsets.map { $0.map { base + $0 } }
            return try body(values, lengths, formats)
        }
    }

    /// `result` as a ``PostgreSQLResult``, or the error it reports (the result freed).
    func check(_ result: OpaquePointer?, _ sql: String, binary: Bool = false) throws(PostgreSQLStoreError) -> PostgreSQLResult {
        guard let result else {
            throw PostgreSQLStoreError(
                isHealthy ? .query : .connectionLost, target: target, "\(errorMessage) (running: \(Self.head(sql)))")
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
            return PostgreSQLResult(result, binary: binary)
        }
        let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        PQclear(result)
        // An error without SQLSTATE comes from libpq, not the server: the connection failed
        // (a write to a closed socket, "server closed the connection unexpectedly"). Class
        // 08 (connection exception) and 57P01-57P03 (the server shutting down or restarting)
        // end the connection too.
        if state == nil || state?.hasPrefix("08") == true || ["57P01", "57P02", "57P03"].contains(state ?? "") {
            broken = true
        }
        let kind: PostgreSQLStoreError.Kind = isHealthy ? .query : .connectionLost
        throw PostgreSQLStoreError(kind, target: target, "\(message) (running: \(Self.head(sql)))", sqlState: state)
    }

    /// The start of a statement, for messages.
    static func head(_ sql: String) -> String {
        sql.count > 120 ? String(sql.prefix(120)) + "…" : sql
    }
}

/// The rows of a statement's result (`PGresult`), in text or binary form.
final class PostgreSQLResult {
    private let handle: OpaquePointer
    /// Whether values are in PostgreSQL's binary forms (big-endian numbers, raw bytes).
    let binary: Bool

    init(_ handle: OpaquePointer, binary: Bool = false) {
        self.handle = handle
        self.binary = binary
    }
    deinit { PQclear(handle) }

    /// The number of rows.
    var count: Int { Int(PQntuples(handle)) }
    /// The number of rows a command changed (`UPDATE`, `DELETE`, `INSERT`).
    var affected: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    /// Whether the value at (`row`, `column`) is NULL.
    @inline(__always)
    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) != 0 }

    /// The text of the value at (`row`, `column`) (empty for NULL).
    @inline(__always)
    func text(_ row: Int, _ column: Int) -> String { String(cString: PQgetvalue(handle, Int32(row), Int32(column))) }

    /// The value at (`row`, `column`) as a 64-bit integer: an `int2`, `int4` or `int8` in
    /// binary form, or the text of an integer.
    @inline(__always)
    func int64(_ row: Int, _ column: Int) -> Int64 {
        if binary {
            // Never nil for a row and column of the result (NULL values read as "").
            let p = UnsafeRawPointer(PQgetvalue(handle, Int32(row), Int32(column))!)
            switch PQgetlength(handle, Int32(row), Int32(column)) {
            case 8: return Int64(bigEndian: p.loadUnaligned(as: Int64.self))
            case 4: return Int64(Int32(bigEndian: p.loadUnaligned(as: Int32.self)))
            case 2: return Int64(Int16(bigEndian: p.loadUnaligned(as: Int16.self)))
            default: return 0
            }
        }
        // Never nil for a row and column of the result (NULL values read as "").
        var p = PQgetvalue(handle, Int32(row), Int32(column))!
        var negative = false
        if p.pointee == CChar(UInt8(ascii: "-")) {
            negative = true
            p += 1
        }
        var v: Int64 = 0
        while p.pointee != 0 {
            // Wrapping: Int64.min's digits pass Int64.max on the way, and negate back exactly.
            v = v &* 10 &+ Int64(UInt8(bitPattern: p.pointee) &- UInt8(ascii: "0"))
            p += 1
        }
        return negative ? 0 &- v : v
    }

    /// The 64 bits of an 8-byte binary value (a `float8`'s bit pattern).
    @inline(__always)
    func bits64(_ row: Int, _ column: Int) -> UInt64 {
        // Never nil for a row and column of the result (NULL values read as "").
        let p = UnsafeRawPointer(PQgetvalue(handle, Int32(row), Int32(column))!)
        switch PQgetlength(handle, Int32(row), Int32(column)) {
        case 8: return UInt64(bigEndian: p.loadUnaligned(as: UInt64.self))
        case 4: return UInt64(UInt32(bigEndian: p.loadUnaligned(as: UInt32.self)))
        default: return 0
        }
    }

    /// The text of the value at (`row`, `column`), from its bytes (binary `text` values
    /// are the string's UTF-8 bytes, with no terminator counted).
    @inline(__always)
    func string(_ row: Int, _ column: Int) -> String {
        withBytes(row, column) { String(decoding: $0, as: UTF8.self) }
    }

    /// Calls `body` with the raw bytes of the value at (`row`, `column`).
    @inline(__always)
    func withBytes<T>(_ row: Int, _ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        // Never nil for a row and column of the result (NULL values read as "").
        let p = PQgetvalue(handle, Int32(row), Int32(column))!
        let n = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return try body(UnsafeRawBufferPointer(start: p, count: n))
    }
}
