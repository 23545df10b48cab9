import Foundation

// Persistent history in the file (format 4; see Docs/StoreFormat.md, "History"). A store
// that tracks history ends each transaction record's payload with a history section holding
// that transaction; a checkpoint's section holds every transaction compaction keeps; a
// history-deletion record says through which transaction history was deleted. A store that
// does not track history writes no section: its records are byte for byte those of
// version 3.
//
// ```
// section      u64 deleted-through token, u32 transaction count, transactions
// transaction  u64 token, u64 timestamp (seconds since 2001 as double bits),
//              u8 has author [u32 length, UTF-8], u8 has name [u32 length, UTF-8],
//              u32 change count, changes
// change       u8 kind (0 insert, 1 update, 2 delete), i32 entity, i64 primary key,
//              u16 updated count, u16 property index each,
//              u16 tombstone count, per value u16 property index and a value
// ```
extension FileStoreFormat {
    /// The first version whose records may hold history.
    static let historyVersion: UInt32 = 4

    /// Appends a history section holding `transactions` to `w`.
    static func encodeHistory(_ transactions: some Collection<StoreHistoryTransaction>, deletedThrough: UInt64, into w: inout ByteWriter) {
        w.u64(deletedThrough)
        w.u32(UInt32(transactions.count))
        for t in transactions { encode(t, into: &w) }
    }

    /// Appends one history transaction to `w`.
    static func encode(_ t: StoreHistoryTransaction, into w: inout ByteWriter) {
        w.u64(t.token)
        w.u64(t.timestamp.timeIntervalSinceReferenceDate.bitPattern)
        for text in [t.author, t.contextName] {
            if let text {
                w.u8(1)
                w.string(text)
            } else {
                w.u8(0)
            }
        }
        w.u32(UInt32(t.changes.count))
        for c in t.changes {
            w.u8(c.kind.rawValue)
            w.entity(c.row.entity)
            w.i64(c.row.primaryKey)
            w.u16(UInt16(c.updatedColumns.count))
            for column in c.updatedColumns { w.u16(UInt16(column)) }
            w.u16(UInt16(c.tombstone.count))
            for v in c.tombstone {
                w.u16(UInt16(v.column))
                encode(v.value, into: &w)
            }
        }
    }

    /// About how many bytes `encode(t, into:)` writes (exact but for tombstone values of
    /// variable size), to size a writer and to count history as live data.
    static func estimatedSize(of t: StoreHistoryTransaction) -> Int {
        var n = 8 + 8 + 2 + 4 + (t.author?.utf8.count ?? 0) + 4 + (t.contextName?.utf8.count ?? 0) + 4
        for c in t.changes {
            n += 1 + 4 + 8 + 2 + 2 * c.updatedColumns.count + 2
            for v in c.tombstone { n += 2 + estimatedSize([v.value]) - 2 }
        }
        return n
    }

    /// Reads a history section: the deleted-through token and the transactions, in order.
    /// Malformed contents (an unknown change kind, an entity index the model does not have, a
    /// property index past its entity's, tokens out of order) are `corrupt` at their offset.
    static func decodeHistory(
        _ r: inout ByteReader, shapes: RowShapes
    ) throws(FileStoreError) -> (deletedThrough: UInt64, transactions: [StoreHistoryTransaction]) {
        let deletedThrough = try r.u64()
        let count = Int(try r.u32())
        var transactions: [StoreHistoryTransaction] = []
        var last: UInt64 = 0
        for _ in 0..<count {
            let at = r.position
            let token = try r.u64()
            guard token > last, token < FileStore.maxSequence else {
                r.position = at
                throw r.corrupt("history transaction \(token) is out of order or out of range")
            }
            last = token
            let timestamp = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.u64()))
            var texts: [String?] = []
            for _ in 0..<2 {
                switch try r.u8() {
                case 0: texts.append(nil)
                case 1: texts.append(try r.string())
                default: throw r.corrupt("a history transaction's author or name flag is neither 0 nor 1")
                }
            }
            let changeCount = Int(try r.u32())
            try r.need(changeCount * 17)
            var changes: [StoreHistoryChange] = []
            changes.reserveCapacity(changeCount)
            for _ in 0..<changeCount {
                let changeAt = r.position
                guard let kind = StoreHistoryChange.Kind(rawValue: try r.u8()) else {
                    r.position = changeAt
                    throw r.corrupt("unknown history change kind")
                }
                let entity = try r.entity()
                let pk = try r.i64()
                guard entity >= 0, entity < shapes.entityCount, pk >= 1, pk < FileStore.maxPrimaryKey else {
                    r.position = changeAt
                    throw r.corrupt("a history change names row \(pk) of entity \(entity), which the model cannot hold")
                }
                let width = shapes.valueCounts[Int(entity)]
                var updated: [Int] = []
                for _ in 0..<Int(try r.u16()) {
                    let column = Int(try r.u16())
                    guard column < width else { throw r.corrupt("a history change names property \(column) of an entity with \(width)") }
                    updated.append(column)
                }
                var tombstone: [StoreTombstoneValue] = []
                for _ in 0..<Int(try r.u16()) {
                    let column = Int(try r.u16())
                    guard column < width else { throw r.corrupt("a tombstone names property \(column) of an entity with \(width)") }
                    tombstone.append(StoreTombstoneValue(column: column, value: try decodeValue(&r)))
                }
                changes.append(
                    StoreHistoryChange(
                        kind: kind, row: StoreRowID(entity: entity, primaryKey: pk), updatedColumns: updated, tombstone: tombstone))
            }
            transactions.append(
                StoreHistoryTransaction(token: token, timestamp: timestamp, author: texts[0], contextName: texts[1], changes: changes))
        }
        return (deletedThrough, transactions)
    }
}
