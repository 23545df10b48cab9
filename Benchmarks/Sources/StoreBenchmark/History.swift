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
}
