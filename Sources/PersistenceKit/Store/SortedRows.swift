/// Lists of row IDs kept in ascending order without repeats — a to-many value as stores
/// hold it — changed in place by binary search, or merged in one pass when many rows change.
extension Array where Element == StoreRowID {
    /// Whether the list is in ascending order without repeats.
    var isSortedUnique: Bool {
        indices.dropFirst().allSatisfy { self[$0 - 1] < self[$0] }
    }

    /// The list in ascending order without repeats (itself when it already is).
    var sortedUnique: [StoreRowID] {
        isSortedUnique ? self : Set(self).sorted()
    }

    /// Inserts `row` into this ascending list, unless it is there already. Appending (rows
    /// added in key order, as an import adds them) costs no search.
    mutating func insertSorted(_ row: StoreRowID) {
        if let last, last < row {
            append(row)
            return
        }
        let i = firstIndex(notBelow: row)
        if i == count || self[i] != row { insert(row, at: i) }
    }

    /// Removes `row` from this ascending list, if it is there.
    mutating func removeSorted(_ row: StoreRowID) {
        let i = firstIndex(notBelow: row)
        if i < count, self[i] == row { remove(at: i) }
    }

    /// This ascending list with `adds` added and `removes` taken out (both in any order), in
    /// one pass. A row in both is kept: an add wins.
    func merging(adding adds: [StoreRowID], removing removes: [StoreRowID]) -> [StoreRowID] {
        let adds = adds.sortedUnique, removes = removes.sortedUnique
        var result: [StoreRowID] = []
        result.reserveCapacity(count + adds.count)
        var i = 0, a = 0, r = 0
        while i < count || a < adds.count {
            let next: StoreRowID
            if a == adds.count || (i < count && self[i] < adds[a]) {
                next = self[i]
                i += 1
                while r < removes.count && removes[r] < next { r += 1 }
                if r < removes.count && removes[r] == next { continue }
            } else {
                next = adds[a]
                a += 1
                if i < count && self[i] == next { i += 1 }
            }
            result.append(next)
        }
        return result
    }

    /// Adds `adds` to this ascending list and takes `removes` out (an add wins): a few
    /// changes in place by binary search, many merged in one pass. A shelf of 100,000 books
    /// gaining one must not be hashed and sorted whole; one losing 80,000 must not move its
    /// tail 80,000 times, as removing one at a time would.
    mutating func apply(adding adds: [StoreRowID], removing removes: [StoreRowID]) {
        if adds.count + removes.count > 16 {
            self = merging(adding: adds, removing: removes)
            return
        }
        for row in removes { removeSorted(row) }
        for row in adds { insertSorted(row) }
    }

    /// The first position whose row is not below `row`.
    private func firstIndex(notBelow row: StoreRowID) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self[mid] < row { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
