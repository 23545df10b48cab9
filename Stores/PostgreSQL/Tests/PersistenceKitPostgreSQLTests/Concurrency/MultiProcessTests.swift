import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// Separate processes (the `PostgreSQLBenchmarks stress` child, built beside the tests) save
/// to one database at once, each with 4 contexts that merge the others' saves; afterwards
/// every acknowledged insert is stored and both ends of every relationship agree.
@Suite("PostgreSQL store: many processes saving at once", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct MultiProcessTests {
    /// The child executable: built by `swift build` into the folder of the test bundle.
    static var worker: URL? {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = bundle.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("PostgreSQLBenchmarks")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }

    /// Runs the worker with `arguments`; returns its output lines and exit status.
    static func launch(_ worker: URL, _ arguments: [String]) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = worker
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        return (p, out)
    }

    @Test("8 processes x 4 contexts for 10 s: every acknowledged save is stored, both ends of every link agree")
    func eightProcesses() async throws {
        let worker = try #require(Self.worker, "PostgreSQLBenchmarks was not built beside the tests (run swift build --build-tests)")
        let seconds = ProcessInfo.processInfo.environment["PK_STRESS_SECONDS"] ?? "10"
        let schema = TestServer.freshSchema()
        defer {
            let admin = TestServer.url.flatMap { try? AdminConnection(url: $0) }
            try? admin?.run("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
        }
        let (seed, _) = try Self.launch(worker, ["stress-seed", schema])
        seed.waitUntilExit()
        #expect(seed.terminationStatus == 0)
        let children = try (0..<8).map { i in try Self.launch(worker, ["stress", schema, seconds, String(i)]) }
        var acknowledged = Set<String>()
        var gone = Set<String>()
        for (i, (p, out)) in children.enumerated() {
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "process \(i) exited with \(p.terminationStatus)")
            var merged = 0
            for line in text.split(separator: "\n") {
                if line.hasPrefix("ACK ") { acknowledged.insert(String(line.dropFirst(4))) }
                if line.hasPrefix("GONE ") { gone.insert(String(line.dropFirst(5))) }
                if line.hasPrefix("MERGED ") { merged = Int(line.dropFirst(7)) ?? 0 }
            }
            #expect(merged > 0, "process \(i) merged no other process's save")
        }
        #expect(acknowledged.count > 100, "the processes saved too little to test anything")
        let admin = try AdminConnection(url: try #require(TestServer.url))
        let s = "\"\(schema)\""
        let stored = Set(try admin.column("SELECT title FROM \(s).\"Book\""))
        #expect(acknowledged.subtracting(gone).subtracting(stored).isEmpty, "acknowledged inserts missing")
        #expect(gone.intersection(stored).isEmpty, "deleted books still stored")
        // The to-many ends are read from the books' `shelf` column and the authors' join
        // table, so the two ends agree when no link names a row that is gone.
        #expect(
            try admin.column(
                "SELECT count(*) FROM \(s).\"Book\" b WHERE b.shelf IS NOT NULL AND NOT EXISTS "
                    + "(SELECT 1 FROM \(s).\"Shelf\" x WHERE x._pk = b.shelf)") == ["0"])
        #expect(
            try admin.column(
                "SELECT count(*) FROM \(s).\"_pk_link_Author_books\" j WHERE NOT EXISTS "
                    + "(SELECT 1 FROM \(s).\"Book\" b WHERE b._pk = j.target) OR NOT EXISTS "
                    + "(SELECT 1 FROM \(s).\"Author\" a WHERE a._pk = j.source)") == ["0"])
    }
}
