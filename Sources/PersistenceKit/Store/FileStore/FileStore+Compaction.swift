import Foundation

// Compaction rewrites the file as a header and one checkpoint record holding every live
// row. The new file is written beside the old one (`-compact`), synced, and renamed over it,
// so a crash or an I/O error at any step leaves either the old file or the new one, both
// complete.
extension FileStore {
    /// Compacts when the file is past the threshold and holds more than twice its live data.
    func compactIfNeeded(_ s: inout State) throws(FileStoreError) {
        let live = s.liveBytes + FileStoreFormat.headerSize + FileStoreFormat.recordOverhead + 6 + 12 * s.tables.count
        guard s.image.count >= options.compactionThreshold, s.image.count > 2 * live else { return }
        try compact(&s)
    }

    /// Compacts the file now, whatever its size.
    public func compact() throws {
        try state.withLock { s throws(FileStoreError) in
            try prepare(&s)
            try compact(&s)
        }
    }

    private func compact(_ s: inout State) throws(FileStoreError) {
        let fs = options.fileSystem
        let directory = (path as NSString).deletingLastPathComponent
        // The checkpoint record is built in place and written from the writer: the live data
        // is not copied again into an array (peak memory of a compaction: one copy of it).
        var w = FileStoreFormat.beginRecord(capacity: s.liveBytes + 64)
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
                try table.rows.forEachRow { pk, ref throws(FileStoreError) in
                    w.u8(FileStoreFormat.Op.put.rawValue)
                    w.i32(e)
                    w.i64(pk)
                    w.i64(ref.version)
                    w.u32(UInt32(ref.length))
                    w.raw(UnsafeRawBufferPointer(rebasing: buf[ref.offset..<(ref.offset + ref.length)]))
                }
            }
        }
        let header = FileStoreFormat.header(storeID: UUID(uuidString: identifier) ?? UUID(), modelHash: model.layoutHash)
        FileStoreFormat.sealRecord(&w, .checkpoint, sequence: s.sequence, version: FileStoreFormat.version)
        let newSize = header.count + w.count

        let temporary = path + "-compact"
        do {
            try Self.io(path, "compacting (writing the new file)") {
                let f = try fs.open(temporary, create: true)
                defer { f.close() }
                try f.truncate(to: 0)
                try f.write(header, at: 0)
                try w.withUnsafeBytes { try f.write(contentsOf: $0, at: header.count) }
                try f.sync()
            }
            try Self.io(path, "compacting (replacing the file)") { try fs.rename(temporary, to: path) }
        } catch {
            try? fs.remove(temporary)
            throw error
        }
        // The new file is complete, synced and in place; from here on it is the store. Both
        // the old and the new file hold exactly the live rows, so if the folder sync fails the
        // store carries on with the new file and the error is still reported.
        var folderSyncError: FileStoreError?
        do {
            try Self.io(path, "compacting (syncing the folder)") { try fs.syncDirectory(directory) }
        } catch {
            folderSyncError = error
        }
        /// Stops using this store object after the file was replaced: the data on disk is
        /// complete, but carrying on with the old file would write saves to an unlinked file.
        /// Its handles (and so its lock) are released, so the store can be opened again in
        /// this process; `-lock` stays, and that open recovers as after a crash. (Found in
        /// review: the lock stayed held, and reopening reported another process.)
        func abandon() {
            s.closed = true
            s.file?.close()
            s.file = nil
            s.lock?.release()
            s.lock = nil
        }
        let file: any StoreFile
        do {
            file = try Self.io(path, "compacting (reopening)") { try fs.open(path, create: false) }
        } catch {
            abandon()
            throw error
        }
        let freshImage: StoreImage
        do {
            freshImage = try Self.io(path, "compacting (reading the new file)") { try StoreImage(file: file, size: newSize) }
        } catch {
            file.close()
            abandon()
            throw error
        }
        var fresh = State(file: file, lock: s.lock, image: freshImage)
        do {
            _ = try Self.verify(&fresh, path: path, model: model, tolerant: true)
            try Self.applyAll(&fresh, path: path, model: model, indexedColumns: indexedColumns)
        } catch {
            file.close()
            abandon()
            throw error
        }
        fresh.sequence = s.sequence
        fresh.compactions = s.compactions + 1
        s.file?.close()
        s = fresh
        if let folderSyncError { throw folderSyncError }
    }
}
