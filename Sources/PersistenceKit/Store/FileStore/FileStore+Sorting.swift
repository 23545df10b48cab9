import Foundation

// Sorted and windowed fetches: the store orders the matching rows by the values of the sort
// keys alone, keeping only the best `offset + limit` while it scans, and decodes whole rows
// only for those it returns.
extension FileStore {
    /// See ``PersistentStore``.
    public func fetchRows(entity: Int32, filter: StoreFilter?, order: [StoreSortKey], offset: Int, limit: Int) throws -> [StoreRow] {
        if order.isEmpty && offset <= 0 && limit <= 0 { return try fetchRows(entity: entity, filter: filter) }
        // Rows with derived to-many columns, or conditions on them, are sorted after the
        // general fetch fills those columns in.
        if !derivedLayout.derivedColumns(entity).isEmpty {
            return Self.sortAndCut(try fetchRows(entity: entity, filter: filter), order: order, offset: offset, limit: limit)
        }
        return try state.withLock { s throws(FileStoreError) -> [StoreRow] in
            let keep = limit > 0 ? max(0, offset) + limit : Int.max
            var best = BestRows(order: order, capacity: keep)
            let columns = order.map(\.property)
            try forEachMatch(entity: entity, filter: filter, in: &s) { pk, ref, r throws(FileStoreError) in
                var values: [StoreValue] = []
                values.reserveCapacity(columns.count)
                for c in columns {
                    r.move(to: ref.offset..<(ref.offset + ref.length))
                    values.append(try FileStoreFormat.decodeValue(at: c, &r))
                }
                best.offer(BestRows.Candidate(values: values, pk: pk, ref: ref))
            }
            let shape = rowShapes.shape(entity)
            return try s.image.withBytes { buf throws(FileStoreError) -> [StoreRow] in
                var rows: [StoreRow] = []
                for c in best.ordered().dropFirst(max(0, offset)) {
                    var r = ByteReader(buf, range: c.ref.offset..<(c.ref.offset + c.ref.length), path: path)
                    rows.append(
                        StoreRow(
                            id: StoreRowID(entity: entity, primaryKey: c.pk), version: c.ref.version,
                            values: try FileStoreFormat.decodeValues(&r, shape: shape)))
                }
                return rows
            }
        }
    }
}

/// The best rows seen so far in a sort order, at most `capacity` of them: a max-heap whose
/// top is the worst kept row, so each further row costs a comparison with it and, when
/// better, O(log capacity). Rows arrive in ascending primary-key order, and of two rows equal
/// on every key the earlier is the better.
struct BestRows {
    struct Candidate {
        var values: [StoreValue]
        var pk: Int64
        var ref: FileStore.RowRef
    }

    let order: [StoreSortKey]
    let capacity: Int
    private var heap: [Candidate] = []

    init(order: [StoreSortKey], capacity: Int) {
        self.order = order
        self.capacity = capacity
    }

    /// Whether `a` comes after `b` in the order.
    private func after(_ a: Candidate, _ b: Candidate) -> Bool {
        switch StoreSortKey.compare(order, a.values, b.values) {
        case .orderedDescending: return true
        case .orderedAscending: return false
        case .orderedSame: return a.pk > b.pk
        }
    }

    mutating func offer(_ c: Candidate) {
        guard capacity > 0 else { return }
        if capacity == Int.max {
            heap.append(c)  // sorting everything: ordered at the end
            return
        }
        if heap.count < capacity {
            heap.append(c)
            var i = heap.count - 1
            while i > 0 {
                let parent = (i - 1) / 2
                guard after(heap[i], heap[parent]) else { break }
                heap.swapAt(i, parent)
                i = parent
            }
        } else if after(heap[0], c) {
            heap[0] = c
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var worst = i
                if l < heap.count && after(heap[l], heap[worst]) { worst = l }
                if r < heap.count && after(heap[r], heap[worst]) { worst = r }
                if worst == i { break }
                heap.swapAt(i, worst)
                i = worst
            }
        }
    }

    /// The kept rows, best first.
    func ordered() -> [Candidate] {
        heap.sorted { after($1, $0) }
    }
}

extension FileStore {
    /// See ``PersistentStore``: the first attribute index a condition of `filter` can use
    /// (the one a read uses), or a scan.
    public func plan(entity: Int32, filter: StoreFilter?) -> StorePlan {
        guard let filter, let columns = indexedColumns[entity] else { return StorePlan() }
        return StorePlan(indexedProperty: filter.conditions.first { columns.contains($0.property) && $0.op != .notEqual }?.property)
    }
}
