// PostgreSQL benchmark: the five store workloads (the file-store benchmark's: N inserts in one
// save, 1,000 single-object saves, 100 indexed fetches, a filtered scan, reopen and count)
// through PersistenceKit's object API on the PostgreSQL store, beside raw libpq doing the
// same SQL with prepared statements on one connection, in the same process and run, best of
// PK_BENCH_ROUNDS rounds (default 3); then saves per second with 1, 2, 4 and 8 processes
// writing disjoint objects.
//
//   PK_POSTGRES_URL=postgresql://… swift run -c release --package-path Stores/PostgreSQL PostgreSQLBenchmarks [N=100000]
//   … PostgreSQLBenchmarks scaling [seconds=3]
//
// PK_BENCH_LISTENS=false opens the store without its listening connection (no merges of
// other processes' saves), to show what receiving its own commits' notifications costs a
// save. A second table gives the two fetches at the store's level (`PersistentStore.fetchRows`
// called directly: rows, no objects), which splits the object API's cost from the store's.
//
// `writer` and `stress` are the child processes of `scaling` and of the store's
// multi-process test (see Stress.swift).

import Foundation
import PersistenceKit

guard let urlText = ProcessInfo.processInfo.environment["PK_POSTGRES_URL"], let url = URL(string: urlText) else {
    FileHandle.standardError.write(Data("set PK_POSTGRES_URL to a postgresql:// URL of a server to benchmark against\n".utf8))
    exit(2)
}
let arguments = Array(CommandLine.arguments.dropFirst())

switch arguments.first {
case "writer":
    try runWriter(arguments: Array(arguments.dropFirst()), url: url)
case "stress-seed":
    try runStressSeed(arguments: Array(arguments.dropFirst()), url: url)
case "stress":
    try runStressProcess(arguments: Array(arguments.dropFirst()), url: url)
case "scaling":
    try runScaling(seconds: arguments.count > 1 ? Double(arguments[1]) ?? 3 : 3, url: url)
default:
    let n = arguments.first.flatMap(Int.init) ?? 100_000
    let rounds = ProcessInfo.processInfo.environment["PK_BENCH_ROUNDS"].flatMap(Int.init) ?? 3
    var ours: [Figures] = []
    var raw: [Figures] = []
    for _ in 0..<rounds {
        ours.append(try runOurs(n: n, url: url))
        raw.append(try RawLibPQ.run(n: n, conninfo: url.absoluteString))
    }
    func best(_ list: [Figures], _ key: (Figures) -> Double) -> Double { list.map(key).min() ?? .nan }
    print("PostgreSQL store vs raw libpq (prepared statements, one connection), N = \(n), best of \(rounds)")
    print("| workload | PersistenceKit | raw libpq | ratio |")
    print("|---|---:|---:|---:|")
    let rows: [(String, (Figures) -> Double, String)] = [
        ("insert \(n), one save", { $0.insertSave }, "s"),
        ("single-object save (×1000)", { $0.singleSave }, "µs"),
        ("100 indexed fetches", { $0.indexedFetch }, "s"),
        ("filtered scan", { $0.scanFetch }, "s"),
        ("reopen + count", { $0.reopenCount }, "s"),
    ]
    for (name, key, unit) in rows {
        let a = best(ours, key)
        let b = best(raw, key)
        let fmt = unit == "µs" ? "%.0f µs" : "%.3f s"
        print("| \(name) | \(String(format: fmt, a)) | \(String(format: fmt, b)) | \(String(format: "%.2fx", a / b)) |")
    }
    print("")
    print("The two fetches at the store's level (PersistentStore.fetchRows: rows decoded, no objects made)")
    print("| workload | store rows | raw libpq | ratio |")
    print("|---|---:|---:|---:|")
    for (name, key, rawKey) in [
        ("100 indexed fetches", { (f: Figures) in f.indexedStoreFetch }, { (f: Figures) in f.indexedFetch }),
        ("filtered scan", { (f: Figures) in f.scanStoreFetch }, { (f: Figures) in f.scanFetch }),
    ] {
        let a = best(ours, key)
        let b = best(raw, rawKey)
        print("| \(name) | \(String(format: "%.3f s", a)) | \(String(format: "%.3f s", b)) | \(String(format: "%.2fx", a / b)) |")
    }
    if let o = ours.last, let r = raw.last, o.indexedRows != r.indexedRows || o.scanRows != r.scanRows || o.reopenedRows != r.reopenedRows {
        print("row counts differ: ours \(o.indexedRows)/\(o.scanRows)/\(o.reopenedRows), raw \(r.indexedRows)/\(r.scanRows)/\(r.reopenedRows)")
        exit(1)
    }
}
