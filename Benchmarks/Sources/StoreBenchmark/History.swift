// `StoreBenchmark history [N]`: what persistent history tracking costs the file store's
// write workloads. The insert of N objects with one save, and 1,000 single-object saves,
// run with NSPersistentHistoryTrackingKey off and on, in alternating fresh processes, for
// `PK_BENCH_ROUNDS` rounds (default 3), at both durabilities; the table gives each side's
// best time and the ratio on / off. (Tracking off writes exactly the records it wrote
// before history existed; compare its figures with the main table's to see it unchanged.)

import BenchmarkSupport
import Foundation
import PersistenceKit

func runHistoryBenchmark(n: Int) throws {
    let rounds = benchmarkRounds
    print("History tracking cost, N = \(n), release build, best of \(rounds) rounds. Ratio = tracking on / off (lower is better).")
    print("| workload | durability | history off | history on | ratio | ratio per round |")
    print("|---|---|---|---|---|---|")
    var lines: [Comparison] = []
    for (durability, mode) in [(FileStore.Durability.full, "FULL"), (.normal, "NORMAL")] {
        var off: [Figures] = []
        var on: [Figures] = []
        for _ in 0..<rounds {
            off.append(try JSONDecoder().decode(Figures.self, from: runThisExecutable(["ours", durability.rawValue, "\(n)"])))
            on.append(try JSONDecoder().decode(Figures.self, from: runThisExecutable(["ours", durability.rawValue, "\(n)", "history"])))
        }
        let workloads: [(String, Comparison.Unit, (Figures) -> Double)] = [
            ("insert \(n) + save", .seconds, { $0.insertSave }),
            ("1,000 single-object saves (per save)", .microseconds, { $0.singleSave }),
            ("reopen + count", .seconds, { $0.reopenCount }),
        ]
        for (name, unit, time) in workloads {
            // `Comparison` puts its first side over its second: history on over history off.
            let line = Comparison(name, durability: mode, unit: unit, ours: on.map(time), sqlite: off.map(time))
            let cells = line.cells
            print("| \(name) | \(mode) | \(cells[1]) | \(cells[0]) | \(cells[2]) | \(cells[3]) |")
            lines.append(line)
        }
    }
    try writeJSONIfAsked(lines)
    print()
    try runQueryGenerationCost(n: n)
}

/// What a query generation costs, in this process: pinning a context to the current
/// generation of an N-object file store, and a single-object save by another context right
/// after each pin (which copies the row table and index the pinned generation shares),
/// beside the same save with no generation pinned. Medians of 200 rounds, `normal`
/// durability (no `fsync`, so the copy is not hidden in the sync's time).
func runQueryGenerationCost(n: Int) throws {
    let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pk-generations-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: dir) }
    let container = try makeContainer(dir.appendingPathComponent("generations.store"), model, .normal)
    let writer = container.newBackgroundContext()
    let ids = try writer.performAndWait {
        let items = (0..<n).map { i in
            let item = Item(context: writer)
            item.title = "Item number \(i)"
            item.count = Int64(i % 1000)
            return item
        }
        try writer.save()
        writer.reset()
        return items.map(\.objectID)
    }
    let reader = container.newBackgroundContext()
    func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
    func save(_ round: Int) throws -> Double {
        try writer.performAndWait {
            try seconds {
                (writer.object(with: ids[(round * 97) % n]) as? Item)?.count = Int64(round)
                try writer.save()
            }
        }
    }
    var pins: [Double] = []
    var pinnedSaves: [Double] = []
    var plainSaves: [Double] = []
    for round in 0..<200 {
        pins.append(try reader.performAndWait { try seconds { try reader.setQueryGenerationFrom(.current) } })
        pinnedSaves.append(try save(round))
    }
    try reader.performAndWait { try reader.setQueryGenerationFrom(nil) }
    for round in 0..<200 { plainSaves.append(try save(round)) }
    print("Query generations, N = \(n), NORMAL durability, medians of 200:")
    print(String(format: "| pin (setQueryGenerationFrom(.current)) | %.1f µs |", median(pins) * 1e6))
    print(String(format: "| single-object save, a generation pinned before it | %.0f µs |", median(pinnedSaves) * 1e6))
    print(String(format: "| single-object save, nothing pinned | %.0f µs |", median(plainSaves) * 1e6))
    for store in container.persistentStoreCoordinator.persistentStores { try (store as? FileStore)?.close() }
}
