import CSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed SQLite call: which one, and SQLite's message for it.
public struct SQLiteError: Error, CustomStringConvertible {
    public let operation: String
    public let message: String
    public var description: String { "\(operation): \(message)" }
}

/// `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the bind returns, so the buffer
/// may be rewritten for the next row. (C's macro is `(sqlite3_destructor_type)-1`, which
/// Swift does not import.)
let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// The version of the linked libsqlite3, e.g. "3.40.1".
public var sqliteVersion: String { String(cString: sqlite3_libversion()) }

/// Throws unless `rc` is `SQLITE_OK`, `SQLITE_DONE` or `SQLITE_ROW`.
@inline(__always)
func check(_ rc: Int32, _ db: OpaquePointer?, _ operation: @autoclosure () -> String) throws(SQLiteError) {
    if rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW {
        throw SQLiteError(operation: operation(), message: db.map { String(cString: sqlite3_errmsg($0)) } ?? "error \(rc)")
    }
}

func exec(_ db: OpaquePointer?, _ sql: String) throws(SQLiteError) {
    try check(sqlite3_exec(db, sql, nil, nil, nil), db, sql)
}

func prepare(_ db: OpaquePointer?, _ sql: String) throws(SQLiteError) -> OpaquePointer? {
    var statement: OpaquePointer?
    try check(sqlite3_prepare_v2(db, sql, -1, &statement, nil), db, "prepare \(sql)")
    return statement
}

/// Deletes a database file and its `-wal` and `-shm` files.
func removeDatabase(at path: String) {
    for suffix in ["", "-wal", "-shm"] { _ = unlink(path + suffix) }
}

/// A buffer holding `prefix`, after which ``write(_:)`` puts the decimal digits of a number:
/// `snprintf(buffer, size, "Item number %d", i)` without the format parsing, and without a
/// `String` per row, so that the baseline's loops cost what C's would.
struct NumberedText: ~Copyable {
    private let buffer: UnsafeMutablePointer<CChar>
    private let prefixLength: Int

    init(prefix: StaticString) {
        buffer = .allocate(capacity: prefix.utf8CodeUnitCount + 24)
        prefixLength = prefix.utf8CodeUnitCount
        prefix.withUTF8Buffer { bytes in
            for (i, byte) in bytes.enumerated() { buffer[i] = CChar(bitPattern: byte) }
        }
    }

    deinit { buffer.deallocate() }

    /// Writes `prefix` + the digits of `value` (not negative); returns the text's start and
    /// its length in bytes (no NUL: SQLite is given the length).
    @inline(__always)
    func write(_ value: Int) -> (UnsafePointer<CChar>, Int32) {
        var digits = 1
        var rest = value / 10
        while rest != 0 { digits += 1; rest /= 10 }
        var v = value
        var at = prefixLength + digits
        repeat {
            at -= 1
            buffer[at] = CChar(48 + v % 10)
            v /= 10
        } while v != 0
        return (UnsafePointer(buffer), Int32(prefixLength + digits))
    }
}
