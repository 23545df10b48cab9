import Foundation

// The read path: rows are decoded from the in-memory image on demand; filters use an
// attribute index when one of their conditions is on an indexed attribute.
extension FileStore {
    func decodeRow(_ id: StoreRowID, _ ref: RowRef, _ image: [UInt8]) throws(FileStoreError) -> StoreRow {
        try image.withBytes { buf throws(FileStoreError) -> StoreRow in
            var r = ByteReader(buf, range: ref.offset..<(ref.offset + ref.length), path: path)
            return StoreRow(id: id, version: ref.version, values: try FileStoreFormat.decodeValues(&r))
        }
    }

    public func fetchRow(_ id: StoreRowID) throws -> StoreRow? {
        try state.withLock { s throws(FileStoreError) -> StoreRow? in
            try checkOpen(s)
            guard let ref = s.tables[id.entity]?.rows[id.primaryKey] else { return nil }
            return try decodeRow(id, ref, s.image)
        }
    }

    public func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow] {
        try state.withLock { s throws(FileStoreError) -> [StoreRow] in
            try checkOpen(s)
            let keys = candidateKeys(entity: entity, filter: filter, in: &s)
            guard let rows = s.tables[entity]?.rows else { return [] }
            var result: [StoreRow] = []
            result.reserveCapacity(keys.count)
            try s.image.withBytes { buf throws(FileStoreError) in
                for pk in keys {
                    guard let ref = rows[pk] else { continue }
                    var r = ByteReader(buf, range: ref.offset..<(ref.offset + ref.length), path: path)
                    let row = StoreRow(
                        id: StoreRowID(entity: entity, primaryKey: pk), version: ref.version, values: try FileStoreFormat.decodeValues(&r))
                    if filter?.matches(row) ?? true { result.append(row) }
                }
            }
            return result
        }
    }

    public func countRows(entity: Int32, filter: StoreFilter?) throws -> Int {
        guard let filter else {
            return try state.withLock { s throws(FileStoreError) -> Int in
                try checkOpen(s)
                return s.tables[entity]?.rows.count ?? 0
            }
        }
        return try fetchRows(entity: entity, filter: filter).count
    }

    /// The primary keys to examine, in ascending order: from an index when a condition can
    /// use one, otherwise every key of the entity.
    private func candidateKeys(entity: Int32, filter: StoreFilter?, in s: inout State) -> [Int64] {
        guard var table = s.tables[entity] else { return [] }
        if let filter, let columns = indexedColumns[entity] {
            for condition in filter.conditions where columns.contains(condition.property) && condition.op != .notEqual {
                s.tables[entity] = nil
                let keys = table.indexes[condition.property, default: AttributeIndex()].keys(matching: condition)
                s.tables[entity] = table
                if let keys { return keys.sorted() }
            }
        }
        return table.rows.keys.sorted()
    }
}
