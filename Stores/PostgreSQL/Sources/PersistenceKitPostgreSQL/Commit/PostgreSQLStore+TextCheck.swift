import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// Throws when a String attribute value of `transaction` holds U+0000, before anything
    /// is sent: PostgreSQL `text` cannot hold it, and the server would keep the value cut
    /// short at the NUL without an error (the value travels as a C string), silently losing
    /// the rest of it.
    ///
    /// - Throws: ``PostgreSQLStoreError`` `.textHoldsNUL` naming the entity, attribute and
    ///   object of the first such value (inserts, then updates, in transaction order).
    func refuseNULText(in transaction: StoreTransaction) throws(PostgreSQLStoreError) {
        for rows in [transaction.inserts, transaction.updates] {
            for row in rows {
                let t = try layout(row.id.entity)
                guard t.hasStringColumns else { continue }
                for col in t.columns where col.kind == .string && col.property < row.values.count {
                    guard case let .string(s) = row.values[col.property], s.utf8.contains(0) else { continue }
                    throw PostgreSQLStoreError(
                        .textHoldsNUL(entity: t.entityName, attribute: col.name, primaryKey: row.id.primaryKey), target: pool.target,
                        "\(t.entityName).\(col.name) of object \(t.entityName) \(row.id.primaryKey) holds the character U+0000 (NUL), "
                            + "which PostgreSQL text cannot hold; nothing of the save was written. Remove the NUL, or keep such "
                            + "values in a Binary Data attribute (for example the string's UTF-8 bytes).")
                }
            }
        }
    }
}
