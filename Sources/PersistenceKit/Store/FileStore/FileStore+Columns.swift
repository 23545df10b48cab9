import Foundation

// Column reads: the matching rows of an entity visited with only some of their values
// decoded, for fetches that compute from a few columns (dictionary results, aggregates).
extension FileStore {
    /// Calls `body`, for each row of `entity` that passes `filter` in primary-key order, with
    /// the values of the properties `columns` (in that order; `.null` past a row's end).
    /// Returns `false`, having visited nothing, when a column or a condition of `filter` is a
    /// derived to-many column (only whole rows have those filled in): the caller then reads
    /// whole rows.
    ///
    /// `body` runs while the store is locked: it must not call the store.
    func visitColumns(entity: Int32, filter: StoreFilter?, columns: [Int], _ body: ([StoreValue]) -> Void) throws -> Bool {
        let derived = derivedLayout.derivedColumns(entity)
        if !derived.isEmpty {
            let isDerived = { (p: Int) in derived.contains { $0.property == p } }
            if columns.contains(where: isDerived) || (filter?.conditions ?? []).contains(where: { isDerived($0.property) }) {
                return false
            }
        }
        // The columns in ascending order, each with the positions it fills: a row is read
        // once from its start, skipping what is not wanted.
        let wanted = Set(columns).sorted()
        let targets = wanted.map { c in columns.indices.filter { columns[$0] == c } }
        try state.withLock { s throws(FileStoreError) in
            var values = [StoreValue](repeating: .null, count: columns.count)
            try forEachMatch(entity: entity, filter: filter, in: &s) { _, _, r throws(FileStoreError) in
                let n = Int(try r.u16())
                var at = 0
                for (k, c) in wanted.enumerated() {
                    let value: StoreValue
                    if c < n {
                        while at < c {
                            try FileStoreFormat.skipValue(&r)
                            at += 1
                        }
                        value = try FileStoreFormat.decodeValue(&r)
                        at += 1
                    } else {
                        value = .null
                    }
                    for i in targets[k] { values[i] = value }
                }
                body(values)
            }
        }
        return true
    }
}
