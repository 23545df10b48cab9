import Foundation

// Uniqueness constraints in the file store: the unique indexes (`UniqueIndexes`) live in the
// state, built per entity from the stored rows by the first commit that writes the entity,
// and kept by every commit after (a compaction starts them again, lazily: keys do not move).
extension FileStore {
    /// The constraint conflicts `transaction` would create, after building the unique
    /// indexes it needs. Call only when the model has constraints (`uniqueColumns`).
    ///
    /// - Throws: ``FileStoreError`` when a stored row holding a key cannot be decoded.
    func constraintConflicts(of transaction: StoreTransaction, in s: inout State) throws(FileStoreError) -> [StoreConstraintConflict] {
        for entity in s.unique.unbuiltEntities(writtenBy: transaction, columns: uniqueColumns) {
            let columns = uniqueColumns[entity] ?? []
            let needed = Set(columns.joined()).sorted()
            let width = (needed.last ?? 0) + 1
            let table = s.tables[entity]
            let image = s.image
            var unique = s.unique
            try image.withBytes { buf throws(FileStoreError) in
                unique.build(entity, columns: columns) { visit in
                    guard var cursor = table?.rows.makeCursor() else { return }
                    while let (pk, ref) = cursor.next() {
                        var values = [StoreValue](repeating: .null, count: width)
                        for c in needed { values[c] = Self.storedValue(at: c, of: ref, buf, numbering: s.numbering, path: path) ?? .null }
                        visit(pk, values)
                    }
                }
            }
            s.unique = unique
        }
        return try s.unique.conflicts(in: transaction, columns: uniqueColumns) { id throws(FileStoreError) -> StoreRow? in
            guard let ref = s.tables[id.entity]?.rows[id.primaryKey] else { return nil }
            return try decodeRow(id, ref, in: &s)
        }
    }
}
