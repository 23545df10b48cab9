import Foundation

// Compaction rewrites the file as a header and one checkpoint record holding every live
// row. The new file is written beside the old one (`-compact`), synced, and renamed over it,
// so a crash or an I/O error at any step leaves either the old file or the new one, both
// complete.
extension FileStore {
    /// Compacts when the file is past the threshold and holds more than twice its live data.
    /// Live data past the format's record limit cannot go into one checkpoint: such a file
    /// is left to grow (see Docs/StoreFormat.md).
    func compactIfNeeded(_ s: inout State) throws(FileStoreError) {
        let live =
            s.liveBytes + s.history.byteCount + FileStoreFormat.headerSize + modelRecordSize + FileStoreFormat.recordOverhead + 6
            + 12 * s.tables.count
        guard s.image.count >= options.compactionThreshold, s.image.count > 2 * live,
            checkpointPayload(s) <= FileStoreFormat.maxPayload
        else { return }
        try compact(&s)
    }

    /// Compacts the file now, whatever its size.
    ///
    /// - Throws: ``FileStoreError`` — `.io` (the store carries on with its old file, which
    ///   holds everything), `.corrupt` when the new file fails its check (likewise), or
    ///   `.limitExceeded` when the live data does not fit in one record.
    public func compact() throws {
        try refuseWriting("compacting")
        try state.withLock { s throws(FileStoreError) in
            try prepare(&s)
            try compact(&s)
        }
    }

    /// Bytes of the checkpoint record's payload for the live rows.
    private func checkpointPayload(_ s: borrowing State) -> Int {
        2 + 12 * s.tables.count + 4 + s.liveBytes + (Self.keepsHistory(s) ? 12 + s.history.byteCount : 0)
    }

    /// Whether a checkpoint carries a history section: when history is kept, or was deleted
    /// (the deleted-through token keeps refusing fetches after older tokens).
    private static func keepsHistory(_ s: borrowing State) -> Bool {
        !s.history.isEmpty || s.history.deletedThrough > 0
    }

    func compact(_ s: inout State) throws(FileStoreError) {
        try checkPayload(checkpointPayload(s), "compaction")
        let fs = options.fileSystem
        // The checkpoint record is built in place and written from the writer: the live data
        // is not copied again into an array (peak memory of a compaction: one copy of it).
        var w = FileStoreFormat.beginRecord(capacity: s.liveBytes + s.history.byteCount + 76)
        let entities = s.tables.keys.sorted()
        w.u16(UInt16(entities.count))
        for e in entities {
            w.i32(e)
            w.i64(s.tables[e]?.nextKey ?? 1)
        }
        w.u32(UInt32(s.tables.values.reduce(0) { $0 + $1.rows.count }))
        try s.image.withBytes { buf throws(FileStoreError) in
            for e in entities {
                guard let table = s.tables[e] else { continue }
                // Rows with derived to-many columns are written again with null there when the
                // file is of version 1 or 2, which stores the lists; the rest are copied. The
                // new file numbers entities as the model does: rows of a file numbered
                // otherwise are written again with their references renumbered.
                let strips = s.formatVersion < 3 && !derivedLayout.derivedColumns(e).isEmpty
                let renumbers = s.numbering != nil
                try table.rows.forEachRow { pk, ref throws(FileStoreError) in
                    w.u8(FileStoreFormat.Op.put.rawValue)
                    w.i32(e)
                    w.i64(pk)
                    w.i64(ref.version)
                    let range = ref.offset..<(ref.offset + ref.length)
                    // A row that does not decode is copied as it is: its damage stays where a
                    // read of it reports it, and every other save goes on. Failing the
                    // compaction on it would fail every save once one was due, the deletion
                    // of that row included.
                    if strips || renumbers {
                        var r = ByteReader(buf, range: range, path: path, numbering: s.numbering)
                        if let decoded = try? FileStoreFormat.decodeValues(&r, shape: rowShapes.shape(e)) {
                            let lengthAt = w.count
                            w.u32(0)
                            FileStoreFormat.encode(strips ? derivedLayout.stripped(decoded, of: e) : decoded, into: &w)
                            w.patch32(UInt32(w.count - lengthAt - 4), at: lengthAt)
                            return
                        }
                    }
                    w.u32(UInt32(ref.length))
                    w.raw(UnsafeRawBufferPointer(rebasing: buf[range]))
                }
            }
        }
        // History not deleted is kept, after the rows (see FileStoreFormat+History.swift).
        if Self.keepsHistory(s) {
            FileStoreFormat.encodeHistory(s.history.transactions, deletedThrough: s.history.deletedThrough, into: &w)
        }
        // The header and the model record (see FileStoreFormat+Model.swift) in one write.
        let header =
            FileStoreFormat.header(storeID: UUID(uuidString: identifier) ?? UUID(), modelHash: model.layoutHash)
            + FileStoreFormat.modelRecord(model, sequence: s.sequence)
        FileStoreFormat.sealRecord(&w, .checkpoint, sequence: s.sequence, version: FileStoreFormat.version)
        let newSize = header.count + w.count

        // Written, synced, read back and checked — checksums and all — before it replaces
        // anything: a new file that fails its check is removed, and the store carries on
        // with the old one. Checked after the rename, or with its result ignored, a new file
        // that reads back damaged replaces the store with an empty one, silently, and primary
        // keys start again at 1. The handle opened here stays
        // the store's file after the rename.
        let temporary = path + "-compact"
        var written: (any StoreFile)?
        var fresh: State
        do throws(FileStoreError) {
            let file = try Self.io(path, "compacting (writing the new file)") { try fs.open(temporary, create: true) }
            written = file
            try Self.io(path, "compacting (writing the new file)") {
                try file.truncate(to: 0)
                try file.write(header, at: 0)
                try w.withUnsafeBytes { try file.write(contentsOf: $0, at: header.count) }
                try file.sync()
            }
            let image = try Self.io(path, "compacting (reading the new file back)") { try StoreImage(file: file, size: newSize) }
            fresh = State(file: file, lock: s.lock, image: image)
            let (_, cut) = try Self.verify(&fresh, path: path, model: model, tolerant: true)
            if let cut {
                throw FileStoreError(
                    .corrupt, path: path, offset: cut,
                    "compaction wrote a new file that does not read back as written (at byte \(cut) of the new file): "
                        + "the disk lost or damaged the write. The store carries on with its old file, which holds every save.")
            }
            try Self.applyAll(&fresh, path: path, shapes: rowShapes, indexedColumns: indexedColumns)
            // The synced prefix `-lock` records is an offset in the old file: forgotten before
            // the new file takes its place (the next save records the new file's).
            if s.syncedPrefixOnDisk, let lock = s.lock {
                // The old file's unsynced appends are synced first: the rename may fail, or
                // be lost by a power cut before the folder is synced, and the old file then
                // carries on without the offset that marked them: a torn record there would
                // make the file refuse to open.
                try Self.io(path, "compacting (syncing the old file)") { try s.file?.sync() }
                try Self.io(path, "compacting (clearing the lock file)") { try Self.clearSyncedPrefix(in: lock.file) }
                s.syncedPrefixOnDisk = false
            }
            try Self.io(path, "compacting (replacing the file)") { try fs.rename(temporary, to: path) }
            // The new header holds the model's own layout and numbering: a layout sidecar names
            // the old header's hash now, so it is ignored, and goes.
            try? fs.remove(path + Self.layoutAliasSuffix)
        } catch {
            written?.close()
            try? fs.remove(temporary)
            throw error
        }
        fresh.sequence = s.sequence
        fresh.compactions = s.compactions + 1
        // The same rows: the lists carry over (keyed by primary key, not by place in the file).
        fresh.derived = s.derived
        // The new file is complete, synced and in place; from here on it is the store. Both
        // the old and the new file hold exactly the live rows. If the folder sync fails, the
        // rename may not be on disk: the store carries on with the new file, reports the
        // error, and syncs the folder before it acknowledges another save (see
        // `State.folderUnsynced`); otherwise later saves would be acknowledged while the
        // rename might still be lost.
        var folderSyncError: FileStoreError?
        do {
            try Self.io(path, "compacting (syncing the folder)") { try fs.syncDirectory(directory) }
        } catch {
            folderSyncError = error
            fresh.folderUnsynced = true
        }
        s.file?.close()
        s = fresh
        if let folderSyncError { throw folderSyncError }
    }
}
