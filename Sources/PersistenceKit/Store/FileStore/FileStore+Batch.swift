import Foundation

// Reading many rows by ID at once: what prefetching a relationship and firing a to-many
// fault ask for.
extension FileStore {
    /// See ``PersistentStore/fetchRows(_:)``. Under one hold of the lock, so every row is
    /// read as of the same commit; the derived ends are built at most once for the batch.
    public func fetchRows(_ ids: [StoreRowID]) throws -> [StoreRow] {
        if ids.isEmpty { return [] }
        return try state.withLock { s throws(FileStoreError) -> [StoreRow] in
            try prepare(&s)
            var rows: [StoreRow] = []
            rows.reserveCapacity(ids.count)
            for id in ids {
                // A missing row is left out: the caller sees it as deleted.
                guard let ref = s.tables[id.entity]?.rows[id.primaryKey] else { continue }
                rows.append(try decodeRow(id, ref, in: &s))
            }
            return rows
        }
    }
}
