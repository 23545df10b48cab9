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
            if let page = try pageByIndex(entity: entity, filter: filter, order: order, offset: offset, limit: limit, in: &s) {
                return page
            }
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
            return try decode(best.ordered().dropFirst(max(0, offset)).map { ($0.pk, $0.ref) }, of: entity, in: &s)
        }
    }

    /// The rows at `refs`, decoded.
    private func decode(_ refs: [(pk: Int64, ref: RowRef)], of entity: Int32, in s: inout State) throws(FileStoreError) -> [StoreRow] {
        let shape = rowShapes.shape(entity)
        return try s.image.withBytes { buf throws(FileStoreError) -> [StoreRow] in
            var rows: [StoreRow] = []
            rows.reserveCapacity(refs.count)
            for (pk, ref) in refs {
                var r = ByteReader(buf, range: ref.offset..<(ref.offset + ref.length), path: path, numbering: s.numbering)
                rows.append(
                    StoreRow(
                        id: StoreRowID(entity: entity, primaryKey: pk), version: ref.version,
                        values: try FileStoreFormat.decodeValues(&r, shape: shape)))
            }
            return rows
        }
    }

    /// A page sorted by one indexed attribute, read from the index in order: the rows are
    /// tested in the order of their values (primary-key order among equal ones) until the
    /// page is full, so a sorted page touches little more than its rows. Nil when the index
    /// cannot give the order: no limit, several sort keys, a string comparison other than
    /// the plain one, an attribute that is not indexed or whose values may be NaN (which no
    /// index holds), or a filter that an index answers itself (its rows are fewer).
    private func pageByIndex(
        entity: Int32, filter: StoreFilter?, order: [StoreSortKey], offset: Int, limit: Int, in s: inout State
    ) throws(FileStoreError) -> [StoreRow]? {
        guard limit > 0, order.count == 1, order[0].comparison == .plain, let column = Optional(order[0].property),
            indexedColumns[entity]?.contains(column) == true, plan(entity: entity, filter: filter).indexedProperty == nil,
            let e = model.entity(at: entity), column < e.properties.count,
            let type = (e.properties[column] as? NSAttributeDescription)?.attributeType,
            ![.doubleAttributeType, .floatAttributeType, .dateAttributeType].contains(type)
        else { return nil }
        try prepare(&s)
        try buildIndexes(entity: entity, in: &s)
        guard s.tables[entity] != nil else { return [] }
        let values = s.tables[entity]!.indexes[column].orderedValues()
        let needed = max(0, offset) + limit
        var found: [(pk: Int64, ref: RowRef)] = []
        var i = order[0].ascending ? 0 : values.count - 1
        let step = order[0].ascending ? 1 : -1
        while found.count < needed, i >= 0, i < values.count {
            // The rows of whole values, at least as many as the page still lacks, tested in
            // one pass.
            var chunk: [Int64] = []
            while chunk.count < max(64, needed - found.count), i >= 0, i < values.count {
                chunk += (s.tables[entity]!.indexes[column].keysByValue[values[i]]?.elements ?? []).sorted()
                i += step
            }
            try forEachMatch(entity: entity, filter: filter, keys: chunk, in: &s) { pk, ref, _ throws(FileStoreError) in
                found.append((pk, ref))
            }
        }
        return try decode(Array(found.prefix(needed).dropFirst(max(0, offset))), of: entity, in: &s)
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
