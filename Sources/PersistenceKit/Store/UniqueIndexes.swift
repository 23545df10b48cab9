import Foundation

/// The values of one row for the columns of one uniqueness constraint.
struct UniqueKey: Hashable, Sendable {
    var values: [StoreValue]

    /// The key of `values` at `columns`; `nil` when any of them is null or NaN: as in a SQL
    /// unique index, such a row is distinct from every other.
    init?(_ values: [StoreValue], columns: [Int]) {
        var key: [StoreValue] = []
        key.reserveCapacity(columns.count)
        for c in columns {
            let v = c < values.count ? values[c] : .null
            if v.isNull || v.isNaN { return nil }
            key.append(AttributeIndex.key(v))
        }
        self.values = key
    }
}

/// A store's unique indexes: for each constraint of each entity, the row holding each key.
/// Built per entity when a commit first writes rows of it (from the rows stored then), and
/// kept by every commit after. A store whose model has no constraints never builds one, and
/// its commits test one empty dictionary (``UniqueIndexes/columns(of:)``).
struct UniqueIndexes: Sendable {
    /// One constraint's index: key → primary key, and back (so that an update or a delete
    /// frees its row's old key without reading the old row).
    struct Index: Sendable {
        var rowByKey: [UniqueKey: Int64] = [:]
        var keyByRow: [Int64: UniqueKey] = [:]

        mutating func put(_ key: UniqueKey?, _ pk: Int64) {
            if let old = keyByRow.removeValue(forKey: pk), rowByKey[old] == pk { rowByKey[old] = nil }
            guard let key else { return }
            rowByKey[key] = pk
            keyByRow[pk] = key
        }

        mutating func remove(_ pk: Int64) { put(nil, pk) }
    }

    /// Per entity, one index per constraint (in the order of the entity's `uniqueColumns`).
    private var built: [Int32: [Index]] = [:]

    /// The constraints' columns of the entities of `model` that have any.
    static func columns(of model: NSManagedObjectModel) -> [Int32: [[Int]]] {
        model.seal()
        var result: [Int32: [[Int]]] = [:]
        for e in model.entities where !e.uniqueColumns.isEmpty { result[e.index] = e.uniqueColumns }
        return result
    }

    /// The constrained entities `t` inserts or updates rows of whose indexes are not built.
    func unbuiltEntities(writtenBy t: StoreTransaction, columns: [Int32: [[Int]]]) -> [Int32] {
        var result = Set<Int32>()
        for row in t.inserts where columns[row.id.entity] != nil && built[row.id.entity] == nil { result.insert(row.id.entity) }
        for row in t.updates where columns[row.id.entity] != nil && built[row.id.entity] == nil { result.insert(row.id.entity) }
        return result.sorted()
    }

    /// Builds the indexes of `entity` from its stored rows, given by `forEachRow` as
    /// (primary key, values at least at the constraint columns).
    mutating func build<E: Error>(
        _ entity: Int32, columns: [[Int]], forEachRow: ((Int64, [StoreValue]) -> Void) throws(E) -> Void
    ) throws(E) {
        var indexes = Array(repeating: Index(), count: columns.count)
        try forEachRow { pk, values in
            for (i, c) in columns.enumerated() {
                guard let key = UniqueKey(values, columns: c), indexes[i].rowByKey[key] == nil else { continue }
                indexes[i].put(key, pk)
            }
        }
        built[entity] = indexes
    }

    /// The conflicts `t` would create, judged on the rows as they would be after it: the keys
    /// of the rows it deletes or updates are free for its other rows. Needs the indexes of
    /// every constrained entity `t` writes built; `stored` reads a row that holds a key.
    func conflicts<E: Error>(
        in t: StoreTransaction, columns: [Int32: [[Int]]], stored: (StoreRowID) throws(E) -> StoreRow?
    ) throws(E) -> [StoreConstraintConflict] {
        var leaving = Set<StoreRowID>()
        for row in t.updates where columns[row.id.entity] != nil { leaving.insert(row.id) }
        for d in t.deletes where columns[d.id.entity] != nil { leaving.insert(d.id) }
        var result: [StoreConstraintConflict] = []
        for entity in Set(t.inserts.map(\.id.entity) + t.updates.map(\.id.entity)).sorted() {
            guard let constraints = columns[entity], let indexes = built[entity] else { continue }
            let written = (t.inserts + t.updates).filter { $0.id.entity == entity }
            for (ci, c) in constraints.enumerated() {
                // Per key: the rows of `t` holding it, in transaction order, and a stored row
                // that keeps holding it.
                var holders: [UniqueKey: (rows: [StoreRowID], stored: StoreRowID?)] = [:]
                var keys: [UniqueKey] = []
                for row in written {
                    guard let key = UniqueKey(row.values, columns: c) else { continue }
                    if holders[key] == nil {
                        let holder = indexes[ci].rowByKey[key].map { StoreRowID(entity: entity, primaryKey: $0) }
                        holders[key] = ([], holder.flatMap { leaving.contains($0) ? nil : $0 })
                        keys.append(key)
                    }
                    holders[key]?.rows.append(row.id)
                }
                for key in keys {
                    guard let h = holders[key], h.rows.count > 1 || h.stored != nil else { continue }
                    let row = try h.stored.flatMap { id throws(E) in try stored(id) }
                    result.append(StoreConstraintConflict(entity: entity, columns: c, values: key.values, rows: h.rows, stored: row))
                }
            }
        }
        return result
    }

    /// Keeps the built indexes after `t` was committed: deleted rows free their keys,
    /// inserted and updated rows take theirs.
    mutating func apply(_ t: StoreTransaction, columns: [Int32: [[Int]]]) {
        for d in t.deletes where built[d.id.entity] != nil {
            for i in built[d.id.entity]!.indices { built[d.id.entity]![i].remove(d.id.primaryKey) }
        }
        for row in t.updates where built[row.id.entity] != nil { take(row, columns) }
        for row in t.inserts where built[row.id.entity] != nil { take(row, columns) }
    }

    private mutating func take(_ row: StoreRow, _ columns: [Int32: [[Int]]]) {
        guard let constraints = columns[row.id.entity] else { return }
        for (i, c) in constraints.enumerated() { built[row.id.entity]![i].put(UniqueKey(row.values, columns: c), row.id.primaryKey) }
    }
}
