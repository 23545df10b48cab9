import Foundation

/// How many rounds each comparison runs: `PK_BENCH_ROUNDS`, default 3.
public var benchmarkRounds: Int { max(1, Int(ProcessInfo.processInfo.environment["PK_BENCH_ROUNDS"] ?? "") ?? 3) }

/// One workload measured over the rounds on both sides: each side's best time, their ratio
/// (ours / SQLite), and the range of the ratios of the single rounds.
///
/// On a shared machine one round can swing by a third either way (SQLite's too); the best of
/// several is the steadier figure of what the code costs, and the range shows the swing.
public struct Comparison: Encodable {
    /// The unit a figure is kept in: seconds, or micro- or nanoseconds (per-operation figures).
    public enum Unit: Sendable { case seconds, microseconds, nanoseconds }

    public var workload: String
    public var durability: String
    /// Our best figure; nil where our API cannot express the workload.
    public var ours: Double?
    public var sqlite: Double?
    public var ratio: Double?
    public var ratioPerRound: [Double]
    private let unit: Unit

    private enum CodingKeys: String, CodingKey { case workload, durability, ours, sqlite, ratio, ratioPerRound }

    /// `ours[r]` and `sqlite[r]` are round r's figures; nil (ours) where the workload has no
    /// counterpart in our API.
    public init(_ workload: String, durability: String, unit: Unit, ours: [Double?], sqlite: [Double]) {
        self.workload = workload
        self.durability = durability
        self.unit = unit
        let o = ours.compactMap { $0 }.filter(\.isFinite)
        let s = sqlite.filter(\.isFinite)
        self.ours = o.min()
        self.sqlite = s.min()
        if let best = self.ours, let base = self.sqlite { ratio = best / base } else { ratio = nil }
        ratioPerRound = zip(ours, sqlite).compactMap { o, s in o.map { $0 / s } }.filter(\.isFinite)
    }

    /// The table's cells: ours, SQLite, ratio, ratio per round ("—" for what is missing).
    public var cells: [String] {
        [
            format(ours), format(sqlite), ratio.map { String(format: "%.2f", $0) } ?? "—",
            ratioPerRound.isEmpty ? "—" : String(format: "%.2f–%.2f", ratioPerRound.min()!, ratioPerRound.max()!),
        ]
    }

    private func format(_ x: Double?) -> String {
        guard let x else { return "—" }
        switch unit {
        case .seconds: return String(format: "%.1f ms", x * 1000)
        case .microseconds: return String(format: "%.1f µs", x)
        case .nanoseconds: return String(format: "%.1f ns", x)
        }
    }
}

/// Writes `lines` as pretty JSON to the file `PK_BENCH_JSON` names, if set, and says so.
public func writeJSONIfAsked(_ lines: [Comparison]) throws {
    guard let path = ProcessInfo.processInfo.environment["PK_BENCH_JSON"] else { return }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(lines).write(to: URL(fileURLWithPath: path))
    print("wrote \(path)")
}
