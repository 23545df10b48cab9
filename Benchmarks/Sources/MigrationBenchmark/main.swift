// Migration benchmark: opening a file store of N items written with an older model version,
// through a container (load + count), beside opening it unchanged, and beside SQLite doing
// the equivalent schema change on the same rows in the same run.
//
//   swift run -c release --package-path Benchmarks MigrationBenchmark [N=1000000]
//
// Workloads (each on a fresh copy of a store of N items {name, value: Integer 32}):
//   open unchanged     load with the model the store was written with, count
//   add optional       load with a model that adds an optional attribute (a migration that
//                      rewrites no row), count — SQLite: ALTER TABLE … ADD COLUMN, count
//   rename and widen   load with a model that renames `value` (renaming identifier) and makes
//                      it Integer 64, count — SQLite: CREATE TABLE … AS SELECT, drop, rename
// The first two rows' ratio on our side alone (add optional / open unchanged) is the cost of
// the migration against not migrating. Each side runs in fresh processes of this executable,
// alternating, for PK_BENCH_ROUNDS rounds (default 3); best of the rounds.

import BenchmarkSupport
import Foundation
import PersistenceKit
import SQLiteBaseline
import Synchronization

struct Figures: Codable {
    var openUnchanged = 0.0
    var addOptional = 0.0
    var renameWiden = 0.0
    /// The floor under a migration that rewrites nothing: writing a 44-byte file durably
    /// (write, fsync, rename, fsync the folder), what the layout sidecar costs the kernel.
    var durableSmallWrite = 0.0
}

/// Writes 44 bytes to a new file beside `folder`'s others, syncs it, renames it into place
/// and syncs the folder: the system calls of the layout sidecar, timed.
func durableSmallWrite(in folder: URL) throws -> Double {
    let temporary = folder.appendingPathComponent("floor-new").path
    let final = folder.appendingPathComponent("floor").path
    return try seconds {
        let fd = open(temporary, O_CREAT | O_TRUNC | O_WRONLY, 0o644)
        guard fd >= 0 else { throw BenchmarkError("open failed") }
        let bytes = [UInt8](repeating: 7, count: 44)
        guard write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else { throw BenchmarkError("write failed") }
        close(fd)
        guard rename(temporary, final) == 0 else { throw BenchmarkError("rename failed") }
        let dir = open(folder.path, O_RDONLY)
        guard dir >= 0, fsync(dir) == 0 else { throw BenchmarkError("folder sync failed") }
        close(dir)
    }
}

let item = #"<attribute name="name" attributeType="String" defaultValueString=""/>"#
let versions: [(String, String)] = [
    ("V1", #"<entity name="Item">\#(item)<attribute name="value" attributeType="Integer 32" defaultValueString="0"/></entity>"#),
    ("V2", #"<entity name="Item">\#(item)<attribute name="value" attributeType="Integer 32" defaultValueString="0"/><attribute name="note" optional="YES" attributeType="String"/></entity>"#),
    ("V3", #"<entity name="Item">\#(item)<attribute name="amount" attributeType="Integer 64" defaultValueString="0" elementID="value"/></entity>"#),
]

/// A model bundle in `folder` whose current version is `current`.
func bundle(in folder: URL, current: String) throws -> URL {
    let bundle = folder.appendingPathComponent("Items-\(current).xcdatamodeld")
    for (name, entities) in versions {
        let version = bundle.appendingPathComponent("\(name).xcdatamodel")
        try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
        let xml = #"<?xml version="1.0" encoding="UTF-8"?><model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">\#(entities)</model>"#
        try Data(xml.utf8).write(to: version.appendingPathComponent("contents"))
    }
    let plist = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>\#(current).xcdatamodel</string></dict></plist>"#
    try Data(plist.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
    return bundle
}

/// The load's error, written by its completion handler.
final class ErrorBox: Sendable {
    let error = Mutex<(any Error)?>(nil)
}

func load(_ url: URL, model: NSManagedObjectModel) throws -> NSPersistentContainer {
    let container = NSPersistentContainer(name: "Items", managedObjectModel: model)
    container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url)]
    let box = ErrorBox()
    container.loadPersistentStores { _, error in box.error.withLock { $0 = error } }
    if let error = box.error.withLock({ $0 }) { throw error }
    return container
}

func count(_ container: NSPersistentContainer) throws -> Int {
    let context = container.newBackgroundContext()
    return try context.performAndWait { try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Item")) }
}

func close(_ container: NSPersistentContainer) throws {
    for store in container.persistentStoreCoordinator.persistentStores {
        try container.persistentStoreCoordinator.remove(store)
        try (store as? FileStore)?.close()
    }
}

func runOurs(n: Int) throws -> Figures {
    let folder = try makeScratchDirectory("MigrationBenchmark")
    defer { try? FileManager.default.removeItem(at: folder) }
    let pristine = folder.appendingPathComponent("pristine.store")
    let v1 = try NSManagedObjectModel(modelFileAt: try bundle(in: folder, current: "V1"))
    do {
        let container = try load(pristine, model: v1)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var i = 0
            let request = NSBatchInsertRequest(entityName: "Item") { (values: inout [String: Any]) -> Bool in
                guard i < n else { return true }
                values["name"] = "Item number \(i)"
                values["value"] = Int32(i % 1000)
                i += 1
                return false
            }
            _ = try context.execute(request)
        }
        try close(container)
    }
    func measure(_ current: String) throws -> Double {
        let url = folder.appendingPathComponent("store-\(current).store")
        try? FileStore.destroy(at: url)
        try FileManager.default.copyItem(at: pristine, to: url)
        let model = try NSManagedObjectModel(modelFileAt: try bundle(in: folder, current: current))
        var container: NSPersistentContainer?
        let time = try seconds {
            container = try load(url, model: model)
            guard try count(container!) == n else { throw BenchmarkError("wrong count after opening \(current)") }
        }
        if let container { try close(container) }
        return time
    }
    var figures = Figures(openUnchanged: try measure("V1"), addOptional: try measure("V2"), renameWiden: try measure("V3"))
    figures.durableSmallWrite = try durableSmallWrite(in: folder)
    return figures
}

let arguments = CommandLine.arguments
if arguments.count >= 3, arguments[1] == "ours" {
    let figures = try runOurs(n: Int(arguments[2]) ?? 1_000_000)
    print(String(decoding: try JSONEncoder().encode(figures), as: UTF8.self))
} else if arguments.count >= 3, arguments[1] == "sqlite" {
    let path = try makeScratchDirectory("MigrationBenchmarkSQLite").appendingPathComponent("items.db").path
    let s = try sqliteMigrationBaseline(n: Int(arguments[2]) ?? 1_000_000, path: path)
    print(String(decoding: try JSONEncoder().encode(Figures(openUnchanged: s.openUnchanged, addOptional: s.addColumn, renameWiden: s.rebuild)), as: UTF8.self))
} else {
    let n = arguments.count >= 2 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
    var ours: [Figures] = []
    var sqlite: [Figures] = []
    for _ in 0..<benchmarkRounds {
        ours.append(try JSONDecoder().decode(Figures.self, from: try runThisExecutable(["ours", String(n)])))
        sqlite.append(try JSONDecoder().decode(Figures.self, from: try runThisExecutable(["sqlite", String(n)])))
    }
    let lines = [
        Comparison("open unchanged", durability: "full", unit: .seconds, ours: ours.map(\.openUnchanged), sqlite: sqlite.map(\.openUnchanged)),
        Comparison("add optional attribute", durability: "full", unit: .seconds, ours: ours.map(\.addOptional), sqlite: sqlite.map(\.addOptional)),
        Comparison("rename and widen", durability: "full", unit: .seconds, ours: ours.map(\.renameWiden), sqlite: sqlite.map(\.renameWiden)),
    ]
    print("Migration, N = \(n), best of \(benchmarkRounds) rounds, SQLite \(sqliteVersion)")
    print("workload                  ours        SQLite      ratio  per round")
    for line in lines {
        let c = line.cells
        print(line.workload.padding(toLength: 26, withPad: " ", startingAt: 0) + c[0].padding(toLength: 12, withPad: " ", startingAt: 0)
            + c[1].padding(toLength: 12, withPad: " ", startingAt: 0) + c[2].padding(toLength: 7, withPad: " ", startingAt: 0) + c[3])
    }
    let unchanged = ours.map(\.openUnchanged).min() ?? .nan
    let added = ours.map(\.addOptional).min() ?? .nan
    let floor = ours.map(\.durableSmallWrite).min() ?? .nan
    print(String(format: "add optional attribute / open unchanged, ours: %.1fx, %.2f ms more (no row is rewritten: a sidecar records the layout)", added / unchanged, (added - unchanged) * 1000))
    print(String(format: "the kernel's floor for that sidecar (44 bytes written, fsync, rename, folder fsync): %.2f ms; add optional / (unchanged + floor): %.2fx", floor * 1000, added / (unchanged + floor)))
    try writeJSONIfAsked(lines)
}
