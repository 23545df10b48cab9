import Foundation

// The write path. A commit checks optimistic-lock versions and uniqueness constraints,
// compacts the file first when it holds more than twice its live data, appends one
// checksummed record, syncs it (full durability), and only then applies it to the
// in-memory tables. Any failure before that point leaves both the file and the tables as
// they were.
extension FileStore {
    /// See ``PersistentStore``.
    public func allocatePrimaryKeys(entity: Int32, count: Int) throws -> ClosedRange<Int64> {
        try refuseWriting("allocating primary keys")
        return try state.withLock { s throws(FileStoreError) -> ClosedRange<Int64> in
            try prepare(&s)
            try checkEntity(entity, "allocating primary keys")
            let n = Int64(max(count, 1))
            // Keys past the format's range would be written and then refused by every open;
            // refused here instead, before any is handed out.
            let next = s.tables[entity]?.nextKey ?? 1
            guard n <= Self.maxPrimaryKey - next else {
                throw FileStoreError(
                    .limitExceeded, path: path,
                    "\(count) more primary keys for entity \(entity) would pass the largest key the format holds "
                        + "(\(Self.maxPrimaryKey - 1)); \(Self.maxPrimaryKey - next) are left. Nothing was allocated.")
            }
            var table = s.tables[entity] ?? Table()
            s.tables[entity] = nil
            let first = table.nextKey
            table.nextKey += n
            s.tables[entity] = table
            return first...(first + n - 1)
        }
    }

    /// See ``PersistentStore``. Appends a transaction record that carries the entities' next
    /// keys and no rows (the format's transaction payload starts with them), synced like a
    /// save. Kept only in memory, keys that `obtainPermanentIDs(for:)` handed out would be
    /// handed out again after a reopen, giving a new object the ID an unsaved one had had.
    public func recordAllocatedKeys(entities: [Int32]) throws {
        try refuseWriting("recording allocated keys")
        try state.withLock { s throws(FileStoreError) in
            try prepare(&s)
            for e in entities { try checkEntity(e, "recording allocated keys") }
            let keys = Set(entities).sorted().map { ($0, s.tables[$0]?.nextKey ?? 1) }
            if keys.isEmpty { return }
            try compactIfNeeded(&s)
            var w = FileStoreFormat.beginRecord(capacity: 64 + 12 * keys.count)
            w.numbering = s.numbering
            w.u16(UInt16(keys.count))
            for (entity, next) in keys {
                w.entity(entity)
                w.i64(next)
            }
            w.u32(0)
            let recordStart = s.image.count
            FileStoreFormat.sealRecord(&w, .transaction, sequence: s.sequence + 1, version: s.formatVersion)
            try w.withUnsafeBytes { record throws(FileStoreError) in try append(record, at: recordStart, to: &s) }
            s.sequence += 1
        }
    }

    /// Refuses rows the format cannot hold — an entity index the model does not have, a
    /// primary key outside 1..<2⁶², a version past the range the reader accepts — before
    /// anything is written. Written, they would make every later open fail.
    private func checkLimits(of transaction: StoreTransaction) throws(FileStoreError) {
        let entityCount = model.entities.count
        func check(_ id: StoreRowID, version: Int64) throws(FileStoreError) {
            if id.entity < 0 || Int(id.entity) >= entityCount { try checkEntity(id.entity, "saving") }
            guard id.primaryKey >= 1, id.primaryKey < Self.maxPrimaryKey else {
                throw FileStoreError(
                    .limitExceeded, path: path,
                    "row \(id.primaryKey) of entity \(id.entity) is outside the primary keys the format holds "
                        + "(1..<\(Self.maxPrimaryKey)). Nothing of the save was written.")
            }
            guard version >= 0, version < Int64.max / 2 - 1 else {
                throw FileStoreError(
                    .limitExceeded, path: path,
                    "row \(id.primaryKey) of entity \(id.entity) has version \(version), outside the range the format "
                        + "holds. Nothing of the save was written.")
            }
        }
        // A row holds at most one value per property, each of a kind its property allows:
        // applying and decoding report anything else as damage (see RowShapes), so a row that
        // does not fit, written, could never be read again. A context's rows always fit.
        func checkValues(_ row: StoreRow) throws(FileStoreError) {
            let shape = rowShapes.shape(row.id.entity)
            guard row.values.count <= shape.count else {
                throw FileStoreError(
                    .limitExceeded, path: path,
                    "row \(row.id.primaryKey) of entity \(row.id.entity) has \(row.values.count) values where the entity has "
                        + "\(shape.count) properties. Nothing of the save was written.")
            }
            for (i, value) in row.values.enumerated() where !shape[i].admits(value) {
                throw FileStoreError(
                    .limitExceeded, path: path,
                    "row \(row.id.primaryKey) of entity \(row.id.entity) has \(value) as value \(i), which its property cannot "
                        + "hold. Nothing of the save was written.")
            }
        }
        for row in transaction.inserts {
            try check(row.id, version: 0)
            try checkValues(row)
        }
        for row in transaction.updates {
            try check(row.id, version: row.version)
            try checkValues(row)
        }
        for d in transaction.deletes { try check(d.id, version: d.expectedVersion) }
        try checkDistinct(transaction)
    }

    /// Refuses a transaction that names one row twice (two inserts, an insert and an update,
    /// an update and a delete): applying its record would report the repeat as damage.
    private func checkDistinct(_ transaction: StoreTransaction) throws(FileStoreError) {
        func twice(_ id: StoreRowID) -> FileStoreError {
            FileStoreError(
                .limitExceeded, path: path,
                "row \(id.primaryKey) of entity \(id.entity) appears twice in one save. Nothing of the save was written.")
        }
        var changed = Set<StoreRowID>(minimumCapacity: transaction.updates.count + transaction.deletes.count)
        for row in transaction.updates { guard changed.insert(row.id).inserted else { throw twice(row.id) } }
        for d in transaction.deletes { guard changed.insert(d.id).inserted else { throw twice(d.id) } }
        // A context sends inserts in runs of one entity with ascending keys, one run per
        // entity: such a list is distinct without a set of 100,000 IDs. Any other order is
        // checked against one.
        var entities: [Int32] = []
        var last = StoreRowID(entity: -1, primaryKey: 0)
        var ordered = true
        for row in transaction.inserts {
            if !changed.isEmpty, changed.contains(row.id) { throw twice(row.id) }
            if row.id.entity == last.entity {
                ordered = ordered && row.id.primaryKey > last.primaryKey
            } else if entities.contains(row.id.entity) {
                ordered = false
            } else {
                entities.append(row.id.entity)
            }
            last = row.id
        }
        guard !ordered else { return }
        var inserted = Set<StoreRowID>(minimumCapacity: transaction.inserts.count)
        for row in transaction.inserts { guard inserted.insert(row.id).inserted else { throw twice(row.id) } }
    }

    func checkEntity(_ entity: Int32, _ what: String) throws(FileStoreError) {
        guard entity >= 0, Int(entity) < model.entities.count else {
            throw FileStoreError(
                .limitExceeded, path: path,
                "\(what): entity index \(entity) is not one of the model's \(model.entities.count) entities. Nothing was written.")
        }
    }

    /// Refuses a record whose payload is past the format's limit (its length field and the
    /// reader allow 2³¹ − 1 bytes). Unchecked, a larger save is acknowledged and then refused
    /// as damage by the next open, or cut off by recovery.
    func checkPayload(_ bytes: Int, _ what: String) throws(FileStoreError) {
        guard bytes <= FileStoreFormat.maxPayload else {
            throw FileStoreError(
                .limitExceeded, path: path,
                "\(what) needs a record of \(bytes) bytes; the format holds at most \(FileStoreFormat.maxPayload) per "
                    + "record. Save in smaller parts. Nothing was written.")
        }
    }

    /// See ``PersistentStore``.
    public func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult {
        try refuseWriting("saving")
        var transaction = transaction
        return try state.withLock { s throws(FileStoreError) -> StoreCommitResult in
            try prepare(&s)
            try checkLimits(of: transaction)
            var conflicts: [StoreConflict] = []
            for row in transaction.updates {
                let current = s.tables[row.id.entity]?.rows[row.id.primaryKey]
                if current?.version != row.version {
                    conflicts.append(
                        StoreConflict(
                            id: row.id, expectedVersion: row.version,
                            current: try current.map { ref throws(FileStoreError) in try decodeRow(row.id, ref, in: &s) }))
                }
            }
            for d in transaction.deletes {
                if let current = s.tables[d.id.entity]?.rows[d.id.primaryKey], current.version != d.expectedVersion {
                    conflicts.append(
                        StoreConflict(id: d.id, expectedVersion: d.expectedVersion, current: try decodeRow(d.id, current, in: &s)))
                }
            }
            if !conflicts.isEmpty { return .conflicts(conflicts) }
            if transaction.isEmpty { return .committed([]) }
            if !uniqueConstraints.isEmpty {
                let clashes = try constraintConflicts(of: transaction, in: &s)
                if !clashes.isEmpty { return .constraintConflicts(clashes) }
            }
            try links.apply(to: &transaction) { id throws(FileStoreError) -> StoreRow? in
                guard let ref = s.tables[id.entity]?.rows[id.primaryKey] else { return nil }
                return try decodeRow(id, ref, in: &s)
            }
            try compactIfNeeded(&s)
            // History goes into the record's history section, which only version 4 files
            // have: an older file is first rewritten by a compaction, which writes version 4
            // (as compaction upgrades every older file).
            var history: StoreHistoryTransaction?
            if options.tracksHistory {
                if s.formatVersion < FileStoreFormat.historyVersion { try compact(&s) }
                history = try historyTransaction(of: transaction, token: s.sequence + 1, in: &s)
            }

            // Encode the payload; remember where each row's values land.
            var capacity = 64 + 12 * transaction.inserts.count + 25 * transaction.deletes.count
            let historySize = history.map(FileStoreFormat.estimatedSize(of:)) ?? 0
            capacity += historySize + 12
            for row in transaction.inserts { capacity += 25 + FileStoreFormat.estimatedSize(row.values) }
            for row in transaction.updates { capacity += 25 + FileStoreFormat.estimatedSize(row.values) }
            // The sizes of strings and data are exact here, so a value the format's 32-bit
            // lengths cannot hold is caught before encoding would trap on it.
            try checkPayload(capacity, "the save")
            var w = FileStoreFormat.beginRecord(capacity: capacity)
            // Entity indexes go to the file in its own numbering (see EntityNumbering.swift).
            w.numbering = s.numbering
            // Inserts come grouped by entity: look the entity up once per run of rows, not
            // twice per row (measured: a fiftieth of saving 100,000 inserts).
            var insertedMax: [Int32: Int64] = [:]
            var runEntity: Int32 = -1
            var runMax: Int64 = 0
            var insertsAtVersionOne = true
            for row in transaction.inserts {
                insertsAtVersionOne = insertsAtVersionOne && row.version == 1
                if row.id.entity != runEntity {
                    if runEntity >= 0 { insertedMax[runEntity] = max(insertedMax[runEntity] ?? 0, runMax) }
                    runEntity = row.id.entity
                    runMax = 0
                }
                runMax = max(runMax, row.id.primaryKey)
            }
            if runEntity >= 0 { insertedMax[runEntity] = max(insertedMax[runEntity] ?? 0, runMax) }
            w.u16(UInt16(insertedMax.count))
            for (entity, maxKey) in insertedMax.sorted(by: { $0.key < $1.key }) {
                w.entity(entity)
                w.i64(max(s.tables[entity]?.nextKey ?? 1, maxKey + 1))
            }
            w.u32(UInt32(transaction.inserts.count + transaction.updates.count + transaction.deletes.count))
            // A save of inserts only, which the context sends at version 1 already, commits
            // exactly its rows: the transaction's array is the committed one. (A second array
            // of 100,000 rows was 3.2 MB of fresh memory, and a retain and a release of every
            // row's values, each a cache miss: measured 2% of inserting and saving 100,000
            // objects.)
            let insertsAreCommitted = insertsAtVersionOne && transaction.updates.isEmpty
            var committed: [StoreRow] = []
            if !insertsAreCommitted { committed.reserveCapacity(transaction.inserts.count + transaction.updates.count) }
            // Where each committed row's values land in the record; its ID and version are the
            // row's in `committed`. 32-bit: a record is at most `maxPayload` bytes. (With the ID
            // and version repeated here, this array was 40 bytes a row, 4 MB of fresh memory
            // for a save of 100,000 inserts.)
            var placed: [(offset: UInt32, length: UInt32)] = []
            placed.reserveCapacity(transaction.inserts.count + transaction.updates.count)
            // From version 3, derived to-many columns are written as null: the store keeps
            // them from the owning ends (see DerivedEnds). Older files keep getting them in
            // full, so that older builds still read those files right.
            let stripsDerived = s.formatVersion >= 3 && !derivedLayout.ends.isEmpty
            func put(_ row: StoreRow, version: Int64) {
                w.u8(FileStoreFormat.Op.put.rawValue)
                w.entity(row.id.entity)
                w.i64(row.id.primaryKey)
                w.i64(version)
                let lengthAt = w.count
                w.u32(0)
                let start = w.count
                if stripsDerived, !derivedLayout.derivedColumns(row.id.entity).isEmpty {
                    FileStoreFormat.encode(derivedLayout.stripped(row.values, of: row.id.entity), into: &w)
                } else {
                    FileStoreFormat.encode(row.values, into: &w)
                }
                w.patch32(UInt32(w.count - start), at: lengthAt)
                placed.append((UInt32(start), UInt32(w.count - start)))
                if !insertsAreCommitted { committed.append(StoreRow(id: row.id, version: version, values: row.values)) }
            }
            for row in transaction.inserts { put(row, version: 1) }
            if insertsAreCommitted { committed = transaction.inserts }
            for row in transaction.updates { put(row, version: row.version + 1) }
            for d in transaction.deletes {
                w.u8(FileStoreFormat.Op.delete.rawValue)
                w.entity(d.id.entity)
                w.i64(d.id.primaryKey)
                w.i64(d.expectedVersion)
            }
            if let history { FileStoreFormat.encodeHistory(CollectionOfOne(history), deletedThrough: 0, into: &w) }

            try checkPayload(w.count - FileStoreFormat.recordHeaderSize, "the save")
            let recordStart = s.image.count
            FileStoreFormat.sealRecord(&w, .transaction, sequence: s.sequence + 1, version: s.formatVersion)
            try w.withUnsafeBytes { record throws(FileStoreError) in try append(record, at: recordStart, to: &s) }

            // The record is on disk: apply it. (A compaction the save calls for afterwards is
            // run at the end: see below.)
            s.sequence += 1
            let payloadStart = recordStart  // offsets in `placed` count from the record's start
            for (entity, maxKey) in insertedMax {
                s.tables[entity, default: Table()].rows.reserveKeys(below: maxKey + 1)
            }
            let appended = s.image
            try appended.withBytes { buf throws(FileStoreError) in
                // Rows of one entity come together: take its table out of the dictionary once
                // per run, and index the values the transaction carries instead of decoding
                // them again (measured: per-row dictionary lookups and decoding were half of
                // applying a 100,000-row save).
                var entity: Int32 = -1
                var table = Table()
                var columns: [Int]?
                // Owning columns that derived ends follow, while their lists are built.
                var sources: [DerivedEnds.Layout.Column] = []
                var delta = 0
                func flush() {
                    if entity >= 0 { s.tables[entity] = table }
                    entity = -1
                }
                for (p, row) in zip(placed, committed) {
                    if row.id.entity != entity {
                        flush()
                        entity = row.id.entity
                        table = s.tables.removeValue(forKey: entity) ?? Table()
                        columns = indexedColumns[entity]
                        sources = s.derived.isReady ? derivedLayout.sourceColumns(entity) : []
                    }
                    let pk = row.id.primaryKey
                    let ref = RowRef(offset: payloadStart + Int(p.offset), length: Int(p.length), version: row.version)
                    let old = table.rows.updateValue(ref, forKey: pk)
                    for c in sources {
                        let was = old.flatMap { old in Self.storedValue(at: c.property, of: old, buf, numbering: s.numbering, path: path) }
                        s.derived.follow(c, of: derivedLayout, row: row.id, from: was, to: row.value(at: c.property))
                    }
                    if let old {
                        delta -= Self.liveSize(old)
                        if table.indexesReady, let columns { table.reindex(pk: pk, from: old, to: row, columns: columns, buf: buf, path: path) }
                    } else if table.indexesReady, let columns {
                        for c in columns { table.indexes[c].add(row.value(at: c), pk) }
                    }
                    if pk >= table.nextKey { table.nextKey = pk + 1 }
                    delta += Self.liveSize(ref)
                }
                flush()
                s.liveBytes += delta
                for d in transaction.deletes {
                    Self.removeRow(
                        entity: d.id.entity, pk: d.id.primaryKey, in: &s, buf: buf, path: path, indexedColumns: indexedColumns,
                        derivedLayout: derivedLayout)
                }
            }
            // The derived ends' lists take the save's link changes together (see DerivedEnds).
            s.derived.applyPending()
            if !uniqueConstraints.isEmpty { s.unique.apply(transaction, constraints: uniqueConstraints) }
            if let history { s.history.append(history, size: historySize) }
            // A save that leaves the file over twice its live data (deleting or rewriting most
            // rows) is followed by a compaction now, not before the next save, which may never
            // come; left to the next save, the file can stay far past the bound. Best effort: the
            // save is on disk either way, and a compaction that fails leaves the store on its
            // old file.
            try? compactIfNeeded(&s)
            return .committed(committed)
        }
    }

    /// Zero bytes written ahead of the data at full durability: an eighth of the data in
    /// whole 4 KiB pages, at least 4 KiB and at most 256 KiB (so the file stays within 1.25x
    /// its data once the data is past 32 KiB, and compaction's 2x bound holds).
    ///
    /// A save that appends to the file changes its size, and syncing a size change commits
    /// file-system metadata too; a save that overwrites blocks the file already has does not.
    /// Measured on this project's Linux machine (ext4, 120-byte writes, 1,000 rounds): append
    /// and `fsync` 135–150 µs, overwrite of written zeros and `fsync` 85–90 µs. SQLite's WAL
    /// gets the same effect by reusing its log from the start after each checkpoint. Opening
    /// after a crash cuts the zeros (they are where a record would start); closing drops
    /// them before the close record is synced.
    public static func reservation(forDataSize size: Int) -> Int {
        min(256 << 10, max(4 << 10, (size / 8 + 4095) & ~4095))
    }

    /// Writes a record at the end of the data (and syncs it under full durability). On
    /// failure, cuts the file back so the failed bytes cannot be mistaken for a record.
    ///
    /// At full durability the record overwrites reserved zeros when it fits in them; when it
    /// does not, it extends the file and a new reservation is written after it, synced with
    /// the record. A failure to write the reservation only drops it.
    func append(_ record: UnsafeRawBufferPointer, at offset: Int, to s: inout State) throws(FileStoreError) {
        guard let file = s.file else { throw FileStoreError(.closed, path: path, "the store has no open file.") }
        if options.readOnly { throw Self.readOnlyError(path) }
        try prepareToAppend(&s)
        s.endsCleanly = false
        do {
            if s.dirtyTail {
                try file.truncate(to: offset)
                s.dirtyTail = false
                s.reserved = 0
            }
            try file.write(contentsOf: record, at: offset)
            if options.durability == .full {
                if record.count <= s.reserved {
                    s.reserved -= record.count
                } else {
                    reserveSpace(after: offset + record.count, in: file, &s)
                }
                try file.sync()
            }
            s.image.append(record, writtenTo: file)
        } catch {
            s.reserved = 0
            // The record may be in the file whole (a failed fsync leaves it there): it must
            // never be read as committed. Cut it off, or if that fails overwrite its marker,
            // and sync what was done; if neither works the store object stops, as nothing
            // it writes after could be trusted. A failed cut must not leave the record to the
            // next write: a crash before that write would commit the save that had thrown.
            let cut = (try? file.truncate(to: offset)) != nil
            // Undone only once the cut or the overwrite is synced: unsynced, a crash could
            // bring the record back, so the sync's failure counts as the cut's.
            let unmarked = (cut || (try? file.write([0, 0, 0, 0], at: offset)) != nil) && (try? file.sync()) != nil
            s.dirtyTail = !cut
            if !unmarked {
                stop(&s)
                throw FileStoreError(
                    .io, path: path,
                    "saving failed: \(error), and the unfinished record could not be cut off or marked as unfinished, so "
                        + "this store object stopped. Open the store again: that open recovers from the file (its -lock file "
                        + "is kept), and a record that reached the disk whole may then count as saved.",
                    underlying: error as? StoreIOError)
            }
            if let e = error as? StoreIOError { throw FileStoreError.io(e, path: path, "saving") }
            throw FileStoreError(.io, path: path, "saving failed: \(error)")
        }
    }

    /// Stops using this store object after a failure that leaves its file in doubt: closes
    /// its file and releases its lock, so the store can be opened again (in this process or
    /// another); `-lock` stays, so that open recovers as after a crash.
    func stop(_ s: inout State) {
        s.closed = true
        s.file?.close()
        s.file = nil
        s.lock?.release()
        s.lock = nil
    }

    /// Writes ``reservation(forDataSize:)`` zero bytes at `end`. Best effort: if the write
    /// fails (a full disk), the save goes on without a reservation and the next write first
    /// cuts whatever part of it reached the file.
    private func reserveSpace(after end: Int, in file: any StoreFile, _ s: inout State) {
        let size = Self.reservation(forDataSize: end)
        let zeros = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try file.write(contentsOf: UnsafeRawBufferPointer(zeros), at: end)
            s.reserved = size
        } catch {
            s.reserved = 0
            s.dirtyTail = true
        }
    }
}
