import BenchmarkSupport
import CSQLite

/// Raw SQLite doing the query, relationship and batch work that `QueryBenchmark` runs
/// through PersistenceKit's fetch requests and relationship faults: WAL journal,
/// `synchronous=FULL`, prepared statements, one connection. Every workload reads every column
/// of every result row, as making objects does.
///
/// Data (build the same on the other side):
/// - `author`: 1,000 rows, pk 1...1000, name "Author <pk>", country pk % 50;
/// - `book`: N rows; row i (0..<N) has pk i + 1, title "Book <i>", price
///   ((i * 7919) % 100000) / 100, year 1900 + (i * 31) % 120 (indexed), genre i % 10 and
///   author 1 + (i * 13) % 1000 (a to-one, its foreign key indexed as Core Data indexes one;
///   inverse: the author's books).
///
/// Workloads, in this order on one database (seconds):
///
/// | figure | work |
/// |---|---|
/// | `load` | insert the authors and the N books, one commit (the setup, for reference) |
/// | `top20Sorted` | 10 fetches `genre == g` (g = 0..<10) sorted by price descending, limit 20 (no index on price or genre) |
/// | `keyPathPredicate` | one fetch `author.country == 7` (a predicate through a to-one) |
/// | `toMany` | the books of each of the authors 1...100 (a to-many fault each) |
/// | `countRange` | 100 counts `year` in 1900 + k ... 1900 + k + 9 (k = 0..<100; indexed) |
/// | `containsCaseInsensitive` | one fetch: title contains "123", case-insensitive |
/// | `groupedAggregate` | one grouped fetch by genre: count, sum(price), avg(price), min(year), max(year) |
/// | `batchUpdate` | `genre == 3`: price = price * 1.1, committed |
/// | `batchDelete` | `year < 1960`, committed |
/// | `batchInsert` | N more books (the same formulas, i = N..<2N), one commit |
///
/// Each statement is prepared before its clock starts, and constants that do not vary within
/// a workload are bound there too; the statements of the loops bind each constant inside.
public enum SQLiteQueryBaseline {
    public struct Figures: Sendable {
        public var load = 0.0
        public var top20Sorted = 0.0
        public var top20Rows = 0
        public var keyPathPredicate = 0.0
        public var keyPathRows = 0
        public var toMany = 0.0
        public var toManyRows = 0
        public var countRange = 0.0
        public var counted = 0
        public var containsCaseInsensitive = 0.0
        public var containsRows = 0
        public var groupedAggregate = 0.0
        public var groupRows = 0
        public var batchUpdate = 0.0
        public var updated = 0
        public var batchDelete = 0.0
        public var deleted = 0
        public var batchInsert = 0.0
    }

    /// Runs the workloads, in order, on a new database `queries.sqlite` in `directory`,
    /// deleted at the end.
    ///
    /// - Throws: ``SQLiteError`` if a call fails.
    public static func run(n: Int, directory: String) throws(SQLiteError) -> Figures {
        let path = directory + "/queries.sqlite"
        removeDatabase(at: path)
        defer { removeDatabase(at: path) }
        var f = Figures()
        var sink = 0.0

        var db: OpaquePointer?
        try check(sqlite3_open(path, &db), db, "open")
        defer { sqlite3_close(db) }
        try exec(db, "PRAGMA journal_mode=WAL")
        try exec(db, "PRAGMA synchronous=FULL")
        try exec(db, "CREATE TABLE author(pk INTEGER PRIMARY KEY, name TEXT, country INTEGER)")
        try exec(
            db, "CREATE TABLE book(pk INTEGER PRIMARY KEY, title TEXT, price REAL, year INTEGER, genre INTEGER, author INTEGER REFERENCES author(pk))")
        try exec(db, "CREATE INDEX book_year ON book(year)")
        try exec(db, "CREATE INDEX book_author ON book(author)")

        let insertAuthor = try prepare(db, "INSERT INTO author(pk, name, country) VALUES(?,?,?)")
        let insertBook = try prepare(db, "INSERT INTO book(title, price, year, genre, author) VALUES(?,?,?,?,?)")
        let authorName = NumberedText(prefix: "Author ")
        let bookTitle = NumberedText(prefix: "Book ")

        var t = now()
        try exec(db, "BEGIN")
        for pk in 1...1000 {
            let (text, length) = authorName.write(pk)
            sqlite3_bind_int(insertAuthor, 1, Int32(pk))
            sqlite3_bind_text(insertAuthor, 2, text, length, transient)
            sqlite3_bind_int(insertAuthor, 3, Int32(pk % 50))
            try check(sqlite3_step(insertAuthor), db, "insert author")
            sqlite3_reset(insertAuthor)
        }
        try insertBooks(db, insertBook, bookTitle, 0..<n)
        try exec(db, "COMMIT")
        f.load = now() - t

        let top = try prepare(db, "SELECT * FROM book WHERE genre = ? ORDER BY price DESC LIMIT 20")
        t = now()
        for g in Int32(0)..<10 {
            sqlite3_bind_int(top, 1, g)
            f.top20Rows += try drain(db, top, &sink)
        }
        f.top20Sorted = now() - t

        let keyPath = try prepare(db, "SELECT book.* FROM book JOIN author ON book.author = author.pk WHERE author.country = ?")
        sqlite3_bind_int(keyPath, 1, 7)
        t = now()
        f.keyPathRows = try drain(db, keyPath, &sink)
        f.keyPathPredicate = now() - t

        let toMany = try prepare(db, "SELECT * FROM book WHERE author = ?")
        t = now()
        for a in Int32(1)...100 {
            sqlite3_bind_int(toMany, 1, a)
            f.toManyRows += try drain(db, toMany, &sink)
        }
        f.toMany = now() - t

        let countRange = try prepare(db, "SELECT count(*) FROM book WHERE year BETWEEN ? AND ?")
        var counted: Int64 = 0
        t = now()
        for k in Int32(0)..<100 {
            sqlite3_bind_int(countRange, 1, 1900 + k)
            sqlite3_bind_int(countRange, 2, 1900 + k + 9)
            try check(sqlite3_step(countRange), db, "count")
            counted += sqlite3_column_int64(countRange, 0)
            sqlite3_reset(countRange)
        }
        f.countRange = now() - t
        f.counted = Int(counted)

        // Static storage: SQLITE_STATIC (nil) needs the bytes to outlive the steps.
        let pattern: StaticString = "%123%"
        let contains = try prepare(db, "SELECT * FROM book WHERE title LIKE ?")
        sqlite3_bind_text(contains, 1, UnsafeRawPointer(pattern.utf8Start).assumingMemoryBound(to: CChar.self), -1, nil)
        t = now()
        f.containsRows = try drain(db, contains, &sink)
        f.containsCaseInsensitive = now() - t

        let aggregate = try prepare(db, "SELECT genre, count(*), sum(price), avg(price), min(year), max(year) FROM book GROUP BY genre")
        t = now()
        f.groupRows = try drain(db, aggregate, &sink)
        f.groupedAggregate = now() - t

        let update = try prepare(db, "UPDATE book SET price = price * 1.1 WHERE genre = ?")
        sqlite3_bind_int(update, 1, 3)
        t = now()
        try exec(db, "BEGIN")
        try check(sqlite3_step(update), db, "update")
        f.updated = Int(sqlite3_changes(db))
        try exec(db, "COMMIT")
        f.batchUpdate = now() - t

        let delete = try prepare(db, "DELETE FROM book WHERE year < ?")
        sqlite3_bind_int(delete, 1, 1960)
        t = now()
        try exec(db, "BEGIN")
        try check(sqlite3_step(delete), db, "delete")
        f.deleted = Int(sqlite3_changes(db))
        try exec(db, "COMMIT")
        f.batchDelete = now() - t

        t = now()
        try exec(db, "BEGIN")
        try insertBooks(db, insertBook, bookTitle, n..<(2 * n))
        try exec(db, "COMMIT")
        f.batchInsert = now() - t

        for statement in [insertAuthor, insertBook, top, keyPath, toMany, countRange, contains, aggregate, update, delete] {
            sqlite3_finalize(statement)
        }
        blackHole(sink)
        return f
    }

    private static func insertBooks(
        _ db: OpaquePointer?, _ insert: OpaquePointer?, _ title: borrowing NumberedText, _ range: Range<Int>
    ) throws(SQLiteError) {
        for i in range {
            let (text, length) = title.write(i)
            sqlite3_bind_text(insert, 1, text, length, transient)
            sqlite3_bind_double(insert, 2, Double((i * 7919) % 100_000) / 100.0)
            sqlite3_bind_int64(insert, 3, Int64(1900 + (i * 31) % 120))
            sqlite3_bind_int64(insert, 4, Int64(i % 10))
            sqlite3_bind_int64(insert, 5, Int64(1 + (i * 13) % 1000))
            try check(sqlite3_step(insert), db, "insert book")
            sqlite3_reset(insert)
        }
    }

    /// Steps `statement` to its end, reading every column of every row by its type (into
    /// `sink`, so no read can be left out), then resets it; returns the rows.
    private static func drain(_ db: OpaquePointer?, _ statement: OpaquePointer?, _ sink: inout Double) throws(SQLiteError) -> Int {
        var rows = 0
        var rc = sqlite3_step(statement)
        while rc == SQLITE_ROW {
            let columns = sqlite3_column_count(statement)
            for c in 0..<columns {
                switch sqlite3_column_type(statement, c) {
                case SQLITE_INTEGER: sink += Double(sqlite3_column_int64(statement, c))
                case SQLITE_FLOAT: sink += sqlite3_column_double(statement, c)
                case SQLITE_TEXT:
                    sink += Double(sqlite3_column_bytes(statement, c))
                    _ = sqlite3_column_text(statement, c)
                default: break
                }
            }
            rows += 1
            rc = sqlite3_step(statement)
        }
        try check(rc, db, "step")
        sqlite3_reset(statement)
        return rows
    }
}

/// Keeps `value` alive to the optimizer, so the work that produced it is not left out.
@inline(never)
func blackHole(_ value: Double) {
    if value == -.pi { print(value) }
}
