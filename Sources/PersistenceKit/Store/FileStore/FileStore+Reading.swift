import Foundation
import Synchronization

// The read path: rows are decoded from the in-memory image on demand; filters use an
// attribute index when one of their conditions is on an indexed attribute.
extension FileStore {
    /// The row `id` stored at `ref`, its derived to-many columns filled in.
    func decodeRow(_ id: StoreRowID, _ ref: RowRef, in s: inout State) throws(FileStoreError) -> StoreRow {
        try prepareDerivedEnds(of: id.entity, in: &s)
        var values = try s.image.withBytes { buf throws(FileStoreError) -> [StoreValue] in
            var r = ByteReader(buf, range: ref.offset..<(ref.offset + ref.length), path: path, numbering: s.numbering)
            return try FileStoreFormat.decodeValues(&r, shape: rowShapes.shape(id.entity))
        }
        s.derived.fill(&values, of: id, derivedLayout)
        return StoreRow(id: id, version: ref.version, values: values)
    }

    /// Builds the derived ends' lists if rows of `entity` need them and they are not built.
    func prepareDerivedEnds(of entity: Int32, in s: inout State) throws(FileStoreError) {
        guard !s.derived.isReady, !derivedLayout.derivedColumns(entity).isEmpty else { return }
        try s.derived.build(derivedLayout, tables: s.tables, image: s.image, numbering: s.numbering, path: path)
    }

    /// See ``PersistentStore``.
    public func fetchRow(_ id: StoreRowID) throws -> StoreRow? {
        try state.withLock { s throws(FileStoreError) -> StoreRow? in
            try prepare(&s)
            guard let ref = s.tables[id.entity]?.rows[id.primaryKey] else { return nil }
            return try decodeRow(id, ref, in: &s)
        }
    }

    /// See ``PersistentStore``. Decodes nothing.
    public func containsRow(_ id: StoreRowID) throws -> Bool {
        try state.withLock { s throws(FileStoreError) -> Bool in
            try prepare(&s)
            return s.tables[id.entity]?.rows[id.primaryKey] != nil
        }
    }

    /// See ``PersistentStore``. From the row table: nothing is decoded.
    public func rowVersion(_ id: StoreRowID) throws -> Int64? {
        try state.withLock { s throws(FileStoreError) -> Int64? in
            try prepare(&s)
            return s.tables[id.entity]?.rows[id.primaryKey]?.version
        }
    }

    /// See ``PersistentStore``.
    public func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow] {
        try state.withLock { s throws(FileStoreError) -> [StoreRow] in
            try prepare(&s)
            var result: [StoreRow] = []
            let shape = rowShapes.shape(entity)
            // Room for every candidate row at once (what the index gave, or the whole table):
            // grown by doubling instead, the array was copied nine times for a scan keeping
            // 25,000 of 100,000 rows, each copy into fresh pages (measured with callgrind:
            // reserving saves 1.7% of that fetch's instructions). Memory past the matches is
            // reserved, not touched. (Passed inline: a closure kept in a `let` would escape and
            // put `result` in a box that every append goes through.)
            guard !derivedLayout.derivedColumns(entity).isEmpty else {
                try forEachMatch(entity: entity, filter: filter, in: &s, reserve: { result.reserveCapacity($0) }) { pk, ref, r throws(FileStoreError) in
                    result.append(
                        StoreRow(id: StoreRowID(entity: entity, primaryKey: pk), version: ref.version, values: try FileStoreFormat.decodeValues(&r, shape: shape)))
                }
                return result
            }
            try prepareDerivedEnds(of: entity, in: &s)
            let derived = s.derived
            let layout = derivedLayout
            // Conditions on a derived to-many column are checked on the filled-in list: the
            // encoded row holds null there (or, before version 3, a list the store ignores),
            // and a condition checked against that would judge the null, not the list.
            let (encoded, onLists) = splitDerivedConditions(filter, entity: entity)
            try forEachMatch(entity: entity, filter: encoded, in: &s, reserve: { result.reserveCapacity($0) }) { pk, ref, r throws(FileStoreError) in
                let id = StoreRowID(entity: entity, primaryKey: pk)
                var values = try FileStoreFormat.decodeValues(&r, shape: shape)
                derived.fill(&values, of: id, layout)
                guard onLists.allSatisfy({ $0.matches(value: values[$0.property]) }) else { return }
                result.append(StoreRow(id: id, version: ref.version, values: values))
            }
            return result
        }
    }

    /// Calls `body` for each row of `entity` that passes `filter`, in primary-key order, with
    /// a reader over the row's values. Conditions are checked on the encoded row first
    /// (`RowMatcher`), so rows that fail are never decoded.
    ///
    /// `reserve` is told how many rows at most `body` will see, before the first.
    ///
    /// `keys`, when given, are the rows to examine, in the order to visit them (no index or
    /// join is consulted).
    func forEachMatch(
        entity: Int32, filter: StoreFilter?, keys given: [Int64]? = nil, in s: inout State, reserve: (Int) -> Void = { _ in },
        _ body: (Int64, RowRef, inout ByteReader) throws(FileStoreError) -> Void
    ) throws(FileStoreError) {
        try prepare(&s)
        var candidates: (keys: [Int64], answered: [Int])?
        if let given { candidates = (given, []) } else { candidates = try candidateKeys(entity: entity, filter: filter, in: &s) }
        if given == nil, candidates == nil, let keys = try keysThroughToOne(entity: entity, filter: filter, in: &s) { candidates = (keys, []) }
        guard let rows = s.tables[entity]?.rows else { return }
        reserve(candidates?.keys.count ?? rows.count)
        // The condition the index answered is not checked again on each row it gave
        // (measured: a tenth of 100 indexed equality fetches of 100 rows each).
        var remaining = filter
        if let answered = candidates?.answered, !answered.isEmpty {
            // Highest position first, so the lower ones stay where they are.
            for position in answered.sorted(by: >) { remaining?.conditions.remove(at: position) }
        }
        let matcher = RowMatcher(remaining)
        let keys = candidates?.keys
        let predicate = try preparedPredicate(filter, entity: entity, in: &s)
        // Only a predicate reads other rows: a plain filter takes no copy of the tables.
        let others = predicate.map { _ in (s.tables, s.derived) }
        try s.image.withBytes { buf throws(FileStoreError) in
            // One reader, moved from row to row: a reader per row copied the path string
            // (a retain and a release per row and condition). It is passed inout, never
            // captured: a captured var is boxed and every access checked for exclusivity
            // at run time (measured: a fifth of a filtered scan).
            var r = ByteReader(buf, range: 0..<0, path: path, numbering: s.numbering)
            let reader = others.map { tables, derived in
                FileRowReader(
                    buf: buf, numbering: s.numbering, tables: tables, derived: derived, layout: derivedLayout, shapes: rowShapes,
                    path: path)
            }
            if let keys {
                Self.touch(keys, rows, buf)
                for pk in keys {
                    if let ref = rows[pk] { try Self.visit(pk, ref, &r, matcher, predicate, reader, body) }
                }
            } else {
                var cursor = rows.makeCursor()
                while let (pk, ref) = cursor.next() { try Self.visit(pk, ref, &r, matcher, predicate, reader, body) }
            }
        }
    }

    /// `filter`'s predicate prepared for rows of `entity`, with the derived ends' lists built
    /// when it follows a to-many relationship; nil when there is none.
    private func preparedPredicate(_ filter: StoreFilter?, entity: Int32, in s: inout State) throws(FileStoreError) -> PreparedStorePredicate? {
        guard let predicate = filter?.predicate else { return nil }
        if !s.derived.isReady, !derivedLayout.ends.isEmpty, predicate.followsToMany {
            try s.derived.build(derivedLayout, tables: s.tables, image: s.image, numbering: s.numbering, path: path)
        }
        return PreparedStorePredicate(predicate, entity: entity, model: model)
    }

    /// Reads the first byte of each of `keys`' rows, before the rows are visited.
    ///
    /// An index gives rows spread over the whole file, each a cache miss (and its row-table
    /// entry another). Visited one after the other, the misses wait in turn: decoding a row
    /// is too long for the processor to reach the next row's load before the first miss is
    /// served. This loop is short enough that the loads of many rows are in flight at once,
    /// so the visits find their rows in cache (measured: −2 to −4% for 100 indexed fetches of
    /// 100 rows each, out of a 100,000-row store).
    private static func touch(_ keys: [Int64], _ rows: RowTable, _ buf: UnsafeRawBufferPointer) {
        var sum: UInt8 = 0
        for pk in keys {
            if let ref = rows[pk], ref.offset < buf.count { sum &+= buf[ref.offset] }
        }
        touchSink.store(sum, ordering: .relaxed)  // a use the optimizer cannot drop
    }

    /// Where `touch` leaves its sum (read by nobody).
    private static let touchSink = Atomic<UInt8>(0)

    @inline(__always)
    private static func visit(
        _ pk: Int64, _ ref: RowRef, _ r: inout ByteReader, _ matcher: RowMatcher, _ predicate: PreparedStorePredicate?,
        _ reader: FileRowReader?, _ body: (Int64, RowRef, inout ByteReader) throws(FileStoreError) -> Void
    ) throws(FileStoreError) {
        r.move(to: ref.offset..<(ref.offset + ref.length))
        guard try matcher.matches(&r) else { return }
        if let predicate, let reader, try !reader.evaluate(predicate, FileRowReader.Row(pk: pk, ref: ref)) { return }
        r.move(to: ref.offset..<(ref.offset + ref.length))
        try body(pk, ref, &r)
    }

    /// `filter`'s conditions split into those the encoded rows answer and those on derived
    /// to-many columns of `entity`, which only the filled-in values answer.
    private func splitDerivedConditions(_ filter: StoreFilter?, entity: Int32) -> (StoreFilter?, [StoreFilter.Condition]) {
        let columns = derivedLayout.derivedColumns(entity)
        guard let filter, !columns.isEmpty else { return (filter, []) }
        let isDerived = { (c: StoreFilter.Condition) in columns.contains { $0.property == c.property } }
        let onLists = filter.conditions.filter(isDerived)
        if onLists.isEmpty { return (filter, []) }
        return (StoreFilter(filter.conditions.filter { !isDerived($0) }, predicate: filter.predicate), onLists)
    }

    /// See ``PersistentStore``.
    public func countRows(entity: Int32, filter: StoreFilter?) throws -> Int {
        if !splitDerivedConditions(filter, entity: entity).1.isEmpty {
            return try fetchRows(entity: entity, filter: filter).count
        }
        guard let filter else {
            return try state.withLock { s throws(FileStoreError) -> Int in
                try checkOpen(s)
                // Nothing changed since a clean close: its counts are the answer, and the row
                // tables can wait for the first query that needs rows.
                if !s.unapplied.isEmpty, let counts = s.closeCounts { return counts[entity] ?? 0 }
                try materialize(&s)
                return s.tables[entity]?.rows.count ?? 0
            }
        }
        return try state.withLock { s throws(FileStoreError) -> Int in
            try prepare(&s)
            // Every condition on one indexed attribute, nothing else: the index counts alone.
            if filter.predicate == nil, let (column, positions) = try indexedConditions(entity: entity, filter: filter, in: &s),
                positions.count == filter.conditions.count, !filter.conditions.contains(where: { $0.value.isNaN })
            {
                return s.tables[entity]!.indexes[column].count(matchingAll: filter.conditions)
            }
            var n = 0
            try forEachMatch(entity: entity, filter: filter, in: &s) { _, _, _ throws(FileStoreError) in n += 1 }
            return n
        }
    }

    /// The primary keys to examine, in ascending order, from an index when conditions can
    /// use one; nil when every row of the entity must be examined. `answered` holds the
    /// positions in `filter` of the conditions the index used when every row it gave holds
    /// them, so that the rows need not be tested for them again. All the conditions on the
    /// first indexed attribute that has some are used together: a range bounded on both
    /// sides reads only that range.
    ///
    /// An index gives exactly the rows that hold its conditions: it keys and orders values
    /// as ``StoreFilter/Condition/matches(value:)`` compares them, and holds no NaN. Only a
    /// NaN constant differs (it sorts below every number in the index, and a condition with
    /// it holds for no row), so such conditions are tested on the rows as well.
    private func candidateKeys(
        entity: Int32, filter: StoreFilter?, in s: inout State
    ) throws(FileStoreError) -> (keys: [Int64], answered: [Int])? {
        guard let (column, positions) = try indexedConditions(entity: entity, filter: filter, in: &s), let filter else { return nil }
        let conditions = positions.map { filter.conditions[$0] }
        let keys = s.tables[entity]!.indexes[column].keys(matchingAll: conditions)
        let answered = conditions.contains { $0.value.isNaN } ? [] : positions
        return (keys.sorted(), answered)
    }

    /// The indexed attribute whose conditions `filter` uses, with the positions of those
    /// conditions (never "not equal"), the index built if it was not; nil when no condition
    /// is on an indexed attribute.
    func indexedConditions(entity: Int32, filter: StoreFilter?, in s: inout State) throws(FileStoreError) -> (column: Int, positions: [Int])? {
        guard let filter, indexedColumns[entity] != nil, s.tables[entity] != nil else { return nil }
        guard let column = plan(entity: entity, filter: filter).indexedProperty else { return nil }
        let positions = filter.conditions.indices.filter { filter.conditions[$0].property == column && filter.conditions[$0].op != .notEqual }
        try buildIndexes(entity: entity, in: &s)
        return (column, positions)
    }

    /// Builds the attribute indexes of `entity` if they are not built yet.
    func buildIndexes(entity: Int32, in s: inout State) throws(FileStoreError) {
        guard let columns = indexedColumns[entity], var table = s.tables[entity], !table.indexesReady else { return }
        s.tables[entity] = nil
        defer { s.tables[entity] = table }
        let image = s.image
        let rows = table.rows
        do {
            try image.withBytes { buf throws(FileStoreError) in
                try rows.forEachRow { pk, ref throws(FileStoreError) in
                    try table.index(pk: pk, ref: ref, columns: columns, buf: buf, path: path)
                }
            }
        } catch {
            // A damaged value stopped the build: drop what was built, or the next attempt
            // would add every row again beside it.
            table.indexes = ColumnIndexes()
            throw error
        }
        table.indexesReady = true
    }
}
