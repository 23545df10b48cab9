import Foundation

// Persistent history in the file store. With `Options.tracksHistory`, each save's record
// ends with a history section holding that save's transaction (author, context name, time,
// changes), so history and rows are written by one append and can never disagree. The
// history kept is decoded into `State.history` when the row tables are built, and compaction
// writes it into the checkpoint. `deleteHistory(before:)` appends a history-deletion record;
// the next compaction leaves the deleted transactions out. A store that does not track
// history writes no section: its saves cost what they did before history existed.
extension FileStore {
    /// See ``PersistentStore/tracksHistory``.
    public var tracksHistory: Bool { options.tracksHistory }

    /// See ``PersistentStore/currentHistoryToken``: the number of the store's last
    /// transaction record (history tokens are record numbers).
    public var currentHistoryToken: UInt64 { state.withLock { $0.sequence } }

    /// See ``PersistentStore/fetchHistory(after:)``. The history kept in the file, whether or
    /// not this store object records more.
    public func fetchHistory(after bound: StoreHistoryBound) throws -> [StoreHistoryTransaction] {
        try state.withLock { s throws -> [StoreHistoryTransaction] in
            try prepare(&s)
            return try s.history.after(bound, store: identifier)
        }
    }

    /// See ``PersistentStore/deleteHistory(before:)``. Appends a history-deletion record
    /// (synced like a save), then drops the transactions from memory; the file gives their
    /// bytes back at its next compaction.
    public func deleteHistory(before bound: StoreHistoryBound) throws -> Int {
        try refuseWriting("deleting history")
        return try state.withLock { s throws(FileStoreError) -> Int in
            try prepare(&s)
            guard let end = s.history.deletionEnd(bound) else { return 0 }
            // Only a version 4 file holds history (a store that records history upgrades an
            // older file before its first history is written).
            guard s.formatVersion >= FileStoreFormat.historyVersion else { return 0 }
            var w = FileStoreFormat.beginRecord(capacity: 8)
            w.u64(end)
            let recordStart = s.image.count
            FileStoreFormat.sealRecord(&w, .historyDeletion, sequence: s.sequence, version: s.formatVersion)
            try w.withUnsafeBytes { record throws(FileStoreError) in try append(record, at: recordStart, to: &s) }
            let removed = s.history.delete(through: end)
            try? compactIfNeeded(&s)
            return removed
        }
    }

    /// The history transaction a commit of `transaction` records as record `token`, from
    /// the rows as stored before it.
    func historyTransaction(of transaction: StoreTransaction, token: UInt64, in s: inout State) throws(FileStoreError) -> StoreHistoryTransaction {
        let changes = try HistoryLog.changes(of: transaction, tombstoneColumns: tombstoneColumns) { id throws(FileStoreError) -> StoreRow? in
            guard let ref = s.tables[id.entity]?.rows[id.primaryKey] else { return nil }
            return try decodeRow(id, ref, in: &s)
        }
        return StoreHistoryTransaction(
            token: token, timestamp: Date(), author: transaction.author, contextName: transaction.contextName, changes: changes)
    }

    /// Reads the history section at `r` (the end of a transaction or checkpoint payload) into
    /// `s.history`.
    static func applyHistory(_ r: inout ByteReader, to s: inout State, shapes: RowShapes) throws(FileStoreError) {
        let start = r.position
        let (deletedThrough, transactions) = try FileStoreFormat.decodeHistory(&r, shapes: shapes)
        guard r.remaining == 0 else { throw r.corrupt("a history section has trailing bytes") }
        if deletedThrough > 0 { s.history.delete(through: deletedThrough) }
        for t in transactions {
            guard t.token > (s.history.transactions.last?.token ?? 0), t.token > s.history.deletedThrough else {
                r.position = start
                throw r.corrupt("history transaction \(t.token) does not follow the history before it")
            }
            s.history.append(t, size: FileStoreFormat.estimatedSize(of: t))
        }
    }

    /// Applies a history-deletion record.
    static func applyHistoryDeletion(_ buf: UnsafeRawBufferPointer, payload: Range<Int>, to s: inout State, path: String) throws(FileStoreError) {
        var r = ByteReader(buf, range: payload, path: path, numbering: s.numbering)
        guard s.formatVersion >= FileStoreFormat.historyVersion else {
            throw r.corrupt("a history-deletion record in a version \(s.formatVersion) file, which holds no history")
        }
        let token = try r.u64()
        guard r.remaining == 0 else { throw r.corrupt("a history-deletion record has trailing bytes") }
        s.history.delete(through: token)
    }

    /// Throws when this store object is a query generation's snapshot.
    /// Throws for every write to a query generation's snapshot or to a store opened
    /// read-only. A read-only open holds no lock: a write there (a compaction renaming its
    /// old image over the file) could replace what a writing process saved since.
    func refuseWriting(_ what: String) throws(FileStoreError) {
        if options.readOnly { throw Self.readOnlyError(path) }
        guard isSnapshot else { return }
        throw FileStoreError(
            .closed, path: path, "\(what) failed: this is a read-only query generation of the store; write through the store itself.")
    }
}

extension FileStore {
    /// Makes a new, empty store's history tokens follow `token`, another file's last: its
    /// first record (a history deletion through `token`) takes that number, so the next save
    /// is `token + 1`, and a fetch after an older token is refused as expired. A migration
    /// calls it on the file it writes, so that tokens taken before the migration keep meaning
    /// "after this point" (the history before it is not carried over). Does nothing for a
    /// store that already holds records.
    func continueHistory(after token: UInt64) throws(FileStoreError) {
        try refuseWriting("continuing history")
        try state.withLock { s throws(FileStoreError) in
            try prepare(&s)
            // No record but the model record a new file starts with.
            let empty = try s.image.withBytes { buf in s.image.count == FileStoreFormat.dataStart(buf) }
            guard token > 0, s.sequence == 0, empty, s.formatVersion >= FileStoreFormat.historyVersion else { return }
            var w = FileStoreFormat.beginRecord(capacity: 8)
            w.u64(token)
            let recordStart = s.image.count
            FileStoreFormat.sealRecord(&w, .historyDeletion, sequence: token, version: s.formatVersion)
            try w.withUnsafeBytes { record throws(FileStoreError) in try append(record, at: recordStart, to: &s) }
            s.sequence = token
            s.history.delete(through: token)
        }
    }
}
