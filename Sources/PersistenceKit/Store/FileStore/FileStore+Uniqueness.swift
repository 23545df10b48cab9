import Foundation

// Uniqueness constraints in the file store: the unique indexes (`UniqueIndexes`) live in the
// state only (the file holds no index: it is rebuilt from the rows), one per constraint,
// built from the stored rows of every entity of the constraint's family by the first commit
// that writes one of them, and kept by every commit after (a compaction starts them again,
// lazily: keys do not move).
extension FileStore {
    /// The constraint conflicts `transaction` would create, after building the unique
    /// indexes it needs. Call only when the model has constraints (`uniqueConstraints`).
    ///
    /// - Throws: ``FileStoreError`` when a stored row holding a key cannot be decoded.
    func constraintConflicts(of transaction: StoreTransaction, in s: inout State) throws(FileStoreError) -> [StoreConstraintConflict] {
        for number in s.unique.unbuiltConstraints(writtenBy: transaction, constraints: uniqueConstraints) {
            let constraint = uniqueConstraints.all[number]
            let width = (constraint.columns.last ?? 0) + 1
            let tables = s.tables
            let numbering = s.numbering
            let image = s.image
            var unique = s.unique
            try image.withBytes { buf throws(FileStoreError) in
                unique.build(number, constraints: uniqueConstraints) { visit in
                    // Every entity of the family, each in key order: the index covers the
                    // rows of all of them.
                    for entity in constraint.members.sorted() {
                        guard var cursor = tables[entity]?.rows.makeCursor() else { continue }
                        while let (pk, ref) = cursor.next() {
                            var values = [StoreValue](repeating: .null, count: width)
                            for c in constraint.columns {
                                values[c] = Self.storedValue(at: c, of: ref, buf, numbering: numbering, path: path) ?? .null
                            }
                            visit(StoreRowID(entity: entity, primaryKey: pk), values)
                        }
                    }
                }
            }
            s.unique = unique
        }
        return try s.unique.conflicts(in: transaction, constraints: uniqueConstraints) { id throws(FileStoreError) -> StoreRow? in
            guard let ref = s.tables[id.entity]?.rows[id.primaryKey] else { return nil }
            return try decodeRow(id, ref, in: &s)
        }
    }
}
