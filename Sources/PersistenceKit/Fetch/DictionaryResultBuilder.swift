import Foundation

/// Turns the rows of a dictionary fetch, offered one at a time as the values of the plan's
/// read columns, into its results: one per row, or one per group with its aggregates; then
/// having, distinct, sort and window.
struct DictionaryResultBuilder {
    /// One result before it becomes a dictionary: its values in output order, and for a
    /// fetch that does not group the row's read columns (which a sort may read).
    struct Record {
        var cells: [StoreValue]
        var row: [StoreValue]
    }

    let plan: DictionaryFetchPlan
    private var records: [Record] = []
    /// The group of each key, when grouping by one column.
    private var groupOfValue: [StoreValue: Int] = [:]
    /// The group of each key, when grouping by several columns.
    private var groupOfKey: [[StoreValue]: Int] = [:]
    /// Each group's values of the group-by columns.
    private var groupKeys: [[StoreValue]] = []
    /// `plan.aggregates.count` accumulators per group, group after group.
    private var accumulators: [AggregateAccumulator] = []
    private let functions: [DictionaryFetchPlan.Function]
    private let aggregateColumns: [Int?]

    init(plan: DictionaryFetchPlan) {
        self.plan = plan
        functions = plan.aggregates.map(\.function)
        aggregateColumns = plan.aggregates.map(\.column)
    }

    /// Takes one row: the values of `plan.columns`, in that order.
    @inline(__always)
    mutating func add(_ values: [StoreValue]) {
        guard plan.groups else {
            records.append(Record(cells: cells(ofRow: values), row: values))
            return
        }
        let group: Int
        switch plan.groupBy.count {
        case 0:
            group = groupKeys.isEmpty ? newGroup([]) : 0
        case 1:
            let value = values[plan.groupBy[0]]
            if let g = groupOfValue[value] {
                group = g
            } else {
                group = newGroup([value])
                groupOfValue[value] = group
            }
        default:
            let key = plan.groupBy.map { values[$0] }
            if let g = groupOfKey[key] {
                group = g
            } else {
                group = newGroup(key)
                groupOfKey[key] = group
            }
        }
        let base = group * functions.count
        for a in functions.indices {
            accumulators[base + a].add(aggregateColumns[a].map { values[$0] } ?? .bool(true), functions[a])
        }
    }

    private mutating func newGroup(_ key: [StoreValue]) -> Int {
        groupKeys.append(key)
        accumulators.append(contentsOf: repeatElement(AggregateAccumulator(), count: functions.count))
        return groupKeys.count - 1
    }

    private func cells(ofRow values: [StoreValue]) -> [StoreValue] {
        plan.outputs.map { output in
            if case let .value(column, _) = output { return values[column] }
            return .null  // no aggregate without grouping
        }
    }

    /// The results as dictionaries, after `having` (each result as a dictionary), distinct
    /// results, the plan's sort, then `offset` and `limit` (0: none). `dictionary` turns a
    /// result's values into its dictionary.
    ///
    /// - Throws: what `having` throws; an aggregate's error (see ``AggregateAccumulator``).
    mutating func results(
        having: (([String: Any]) throws -> Bool)?, distinct: Bool, offset: Int, limit: Int,
        dictionary: ([StoreValue]) -> [String: Any]
    ) throws -> [[String: Any]] {
        if plan.groups {
            // Without group-by, aggregates make one result even of no rows (a count of 0).
            if plan.groupBy.isEmpty && groupKeys.isEmpty && !plan.aggregates.isEmpty { _ = newGroup([]) }
            records = try groupKeys.indices.map { g in
                let cells = try plan.outputs.map { output -> StoreValue in
                    switch output {
                    case let .value(column, _):
                        // Validated by the plan: every fetched column is grouped by.
                        return groupKeys[g][plan.groupBy.firstIndex(of: column)!]
                    case let .aggregate(a):
                        let aggregate = plan.aggregates[a]
                        return try accumulators[g * functions.count + a].result(
                            aggregate.function, as: aggregate.resultType, name: plan.names[plan.outputIndex(ofAggregate: a)])
                    }
                }
                return Record(cells: cells, row: [])
            }
        }
        var kept = records
        records = []
        var dictionaries: [[String: Any]?] = Array(repeating: nil, count: kept.count)
        if let having {
            var passing: [Record] = []
            var passingDictionaries: [[String: Any]?] = []
            for record in kept {
                let d = dictionary(record.cells)
                if try having(d) {
                    passing.append(record)
                    passingDictionaries.append(d)
                }
            }
            kept = passing
            dictionaries = passingDictionaries
        }
        var order = Array(kept.indices)
        if distinct {
            var seen: Set<[StoreValue]> = []
            order = order.filter { seen.insert(kept[$0].cells).inserted }
        }
        if !plan.sorts.isEmpty {
            let sorts = plan.sorts
            order.sort { a, b in
                for s in sorts {
                    let x = s.output.map { kept[a].cells[$0] } ?? kept[a].row[s.column ?? 0]
                    let y = s.output.map { kept[b].cells[$0] } ?? kept[b].row[s.column ?? 0]
                    switch s.key.compare(x, y) {
                    case .orderedAscending: return s.key.ascending
                    case .orderedDescending: return !s.key.ascending
                    case .orderedSame: continue
                    }
                }
                return a < b  // equal results keep the store's order
            }
        }
        var window = order.dropFirst(max(0, offset))
        if limit > 0 { window = window.prefix(limit) }
        return window.map { dictionaries[$0] ?? dictionary(kept[$0].cells) }
    }
}

extension DictionaryFetchPlan {
    /// The output position of aggregate `a`.
    func outputIndex(ofAggregate a: Int) -> Int {
        outputs.firstIndex { if case let .aggregate(i) = $0 { return i == a } else { return false } } ?? 0
    }
}
