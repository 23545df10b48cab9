import BenchmarkSupport
import CSQLite

/// Raw SQLite doing the five store workloads that `StoreBenchmark` runs through
/// PersistenceKit's object stack: WAL journal, prepared statements, one connection.
///
/// Table `item(pk INTEGER PRIMARY KEY, title TEXT, timestamp REAL, count INTEGER, flag
/// INTEGER)`, indexed on `count`; row `i` (0..<N) holds "Item number i", 1e9 + i, i % 1000
/// and i & 1.
///
/// | figure | work |
/// |---|---|
/// | `insertSave` | insert N rows and commit once |
/// | `singleSave` | mean time of 1,000 transactions that each update one row's title |
/// | `indexedFetch` | 100 fetches `count == k` (k = 0..<100), reading the title and timestamp of every row |
/// | `scanFetch` | one fetch `flag == 1 AND timestamp > 1e9 + N / 2`, reading every row's title |
/// | `reopenCount` | close, reopen, and count all rows |
///
/// Every statement is prepared before its clock starts, and the scan's constant bound there
/// too, except the insert's statement, which is prepared inside the insert's clock, after
/// `BEGIN`; the indexed fetches bind each `k` inside theirs. The reopen's clock covers
/// `sqlite3_open`, preparing and stepping the count. Text is bound with `SQLITE_TRANSIENT`
/// (copied by SQLite) where it lives in a reused buffer, with `SQLITE_STATIC` where it is a
/// constant.
public enum SQLiteStoreBaseline {
    /// `PRAGMA synchronous`: FULL syncs the WAL at every commit, NORMAL only at checkpoints.
    public enum Synchronous: String, Sendable {
        case full = "FULL"
        case normal = "NORMAL"
    }

    public struct Figures: Sendable {
        public var insertSave = 0.0  // s
        public var singleSave = 0.0  // µs per save
        public var indexedFetch = 0.0  // s for 100 fetches
        public var indexedRows = 0
        public var scanFetch = 0.0  // s
        public var scanRows = 0
        public var reopenCount = 0.0  // s
        public var reopenedRows = 0
    }

    /// Runs the five workloads, in order, on a new database `baseline.sqlite` in `directory`
    /// (deleted first, left behind for the caller to remove).
    ///
    /// - Throws: ``SQLiteError`` if a call fails.
    public static func run(n: Int, synchronous: Synchronous, directory: String) throws(SQLiteError) -> Figures {
        let path = directory + "/baseline.sqlite"
        removeDatabase(at: path)
        var f = Figures()

        var db: OpaquePointer?
        try check(sqlite3_open(path, &db), db, "open")
        try exec(db, "PRAGMA journal_mode=WAL")
        try exec(db, "PRAGMA synchronous=\(synchronous.rawValue)")
        try exec(db, "CREATE TABLE item(pk INTEGER PRIMARY KEY, title TEXT, timestamp REAL, count INTEGER, flag INTEGER)")
        try exec(db, "CREATE INDEX item_count ON item(count)")

        let title = NumberedText(prefix: "Item number ")
        var t = now()
        try exec(db, "BEGIN")
        let ins = try prepare(db, "INSERT INTO item(title, timestamp, count, flag) VALUES(?,?,?,?)")
        for i in 0..<n {
            let (text, length) = title.write(i)
            sqlite3_bind_text(ins, 1, text, length, transient)
            sqlite3_bind_double(ins, 2, 1e9 + Double(i))
            sqlite3_bind_int(ins, 3, Int32(i % 1000))
            sqlite3_bind_int(ins, 4, Int32(i & 1))
            try check(sqlite3_step(ins), db, "insert")
            sqlite3_reset(ins)
        }
        try exec(db, "COMMIT")
        f.insertSave = now() - t

        // Static storage: SQLITE_STATIC (nil) needs the bytes to outlive the step.
        let renamed: StaticString = "renamed"
        let renamedText = UnsafeRawPointer(renamed.utf8Start).assumingMemoryBound(to: CChar.self)
        let upd = try prepare(db, "UPDATE item SET title=? WHERE pk=?")
        t = now()
        for i in 0..<1000 {
            try exec(db, "BEGIN")
            sqlite3_bind_text(upd, 1, renamedText, -1, nil)
            sqlite3_bind_int(upd, 2, Int32((i * 97) % n + 1))
            try check(sqlite3_step(upd), db, "update")
            sqlite3_reset(upd)
            try exec(db, "COMMIT")
        }
        f.singleSave = (now() - t) * 1e6 / 1000

        let q = try prepare(db, "SELECT pk, title, timestamp, count, flag FROM item WHERE count=?")
        var indexedRows = 0
        t = now()
        for k in Int32(0)..<100 {
            sqlite3_bind_int(q, 1, k)
            while sqlite3_step(q) == SQLITE_ROW {
                indexedRows += 1
                _ = sqlite3_column_text(q, 1)
                _ = sqlite3_column_double(q, 2)
            }
            sqlite3_reset(q)
        }
        f.indexedFetch = now() - t
        f.indexedRows = indexedRows

        let s = try prepare(db, "SELECT pk, title, timestamp, count, flag FROM item WHERE flag=1 AND timestamp>?")
        sqlite3_bind_double(s, 1, 1e9 + Double(n / 2))
        var scanRows = 0
        t = now()
        while sqlite3_step(s) == SQLITE_ROW {
            scanRows += 1
            _ = sqlite3_column_text(s, 1)
        }
        f.scanFetch = now() - t
        f.scanRows = scanRows
        sqlite3_finalize(ins)
        sqlite3_finalize(upd)
        sqlite3_finalize(q)
        sqlite3_finalize(s)
        sqlite3_close(db)

        t = now()
        try check(sqlite3_open(path, &db), db, "reopen")
        let c = try prepare(db, "SELECT count(*) FROM item")
        try check(sqlite3_step(c), db, "count")
        let total = sqlite3_column_int64(c, 0)
        f.reopenCount = now() - t
        f.reopenedRows = Int(total)
        sqlite3_finalize(c)
        sqlite3_close(db)
        return f
    }
}
