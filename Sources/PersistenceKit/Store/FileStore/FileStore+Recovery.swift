import Foundation

// Opening a store: take the process lock, create the file if needed, map or read it, check
// the header and the chain of records (every checksum after a crash), and note the
// payloads; the first use that needs rows checks the rest and builds the row tables.
//
// A session that crashed leaves its `-lock` sidecar behind; then the last record may be
// unfinished, and it is cut off (it was never acknowledged: saves return only after their
// record is complete). A store that was closed cleanly ends with a close record; a file
// that does not is reported as truncated, so damage is never mistaken for a crash.
extension FileStore {
    struct Opened {
        var storeID: String
        var state: State
        /// Set when the last session crashed (see ``FileStoreRecovery``).
        var recovery: FileStoreRecovery?
    }

    static func openFiles(
        path: String, key: String, model: NSManagedObjectModel, options: Options, indexedColumns: [Int32: [Int]]
    ) throws(FileStoreError) -> Opened {
        let fs = options.fileSystem
        let directory = (path as NSString).deletingLastPathComponent  // `open` created it
        let lockPath = path + "-lock"
        // Claimed before `-lock` is even looked at: a store of this process still closing
        // may be about to remove it (see StoreLock).
        StoreLock.claim(key)
        let (lockFile, crashed): (any StoreFile, Bool)
        do {
            (lockFile, crashed) = try lockFileWaiting(lockPath, path: path, fs: fs, timeout: options.lockTimeout)
        } catch {
            StoreLock.unclaim(key)
            throw error
        }
        let lock = StoreLock(claim: key, file: lockFile)
        /// Gives up the lock after a failed open. A lock file this open created goes too:
        /// left behind, it would make the next open treat the file as crashed and "recover"
        /// (cut) it instead of reporting the same damage: a second open of a damaged store
        /// would truncate it.
        func abandonLock() {
            if !crashed { try? fs.remove(lockPath) }
            lock.release()
        }
        let existed = fs.fileExists(path)
        do throws(FileStoreError) {
            try? fs.remove(path + "-compact")
            if !existed {
                try createFile(path: path, directory: directory, model: model, storeID: options.newStoreIdentifier ?? UUID(), fs: fs)
            }
            let file = try io(path, "opening the store") { try fs.open(path, create: false) }
            let size = try io(path, "reading the store") { try file.size() }
            let image = try io(path, "reading the store") { try StoreImage(file: file, size: size) }
            var state = State(file: file, lock: lock, image: image)
            let created = !existed
            // A crashed `normal` session recorded where its unsynced appends began: damage
            // from there on is what a power cut leaves, and is cut (FileStore+SyncedPrefix).
            let unsyncedFrom = crashed ? recordedSyncedPrefix(in: lockFile) : nil
            let (storeID, cut) = try verify(
                &state, path: path, model: model, tolerant: crashed || created, unsyncedFrom: unsyncedFrom)
            // No save is acknowledged before the folder is synced once in this session (see
            // `State.folderUnsynced`): for a `-lock` this open created, and after a crash for
            // the crashed session's `-lock` or compaction rename, which it may never have
            // synced; covering only a `-lock` this open created would leave those at risk.
            state.folderUnsynced = true
            // After a crash the close record the file ends with may not be synced: closing
            // must write and sync one before it removes -lock, so only a strict open may
            // skip that; otherwise a recovered store closes without a sync.
            if crashed || created { state.endsCleanly = false }
            var recovery: FileStoreRecovery?
            if crashed {
                let kept = cut ?? size
                let discarded = try cut.map { at throws(FileStoreError) in try state.image.withBytes { recordsBegun(in: $0, from: at) } } ?? 0
                recovery = FileStoreRecovery(path: path, foundBytes: size, keptBytes: kept, discardedRecords: discarded)
            }
            if let cut {
                try io(path, "cutting off an unfinished record") {
                    try file.truncate(to: cut)
                    try file.sync()
                }
                state.image.truncate(to: cut)
                state.endsCleanly = false
            }
            // Used: everything up to the cut is synced now, and this session records its own.
            if unsyncedFrom != nil {
                // With nothing cut, the crashed session's appends may still be in the page
                // cache only: synced before the offset that marked them unsynced goes, or a
                // power cut now could tear them where recovery no longer expects it. Cleared
                // first, a torn record there makes the file refuse to open.
                if cut == nil { try io(path, "syncing the recovered file") { try file.sync() } }
                try io(path, "clearing the lock file") { try clearSyncedPrefix(in: lockFile) }
            }
            return Opened(storeID: storeID, state: state, recovery: recovery)
        } catch {
            // A file this open created goes too: left as a header alone, without the close
            // record a clean close writes, every later open would refuse it as truncated (as
            // after a failed folder sync or open that follows creating it).
            if !existed {
                try? fs.remove(path)
                try? fs.remove(path + "-new")
            }
            abandonLock()
            throw error
        }
    }

    /// Takes the lock of a store this process does not have open, for work on its files
    /// (destroying it, setting its metadata): claimed in this process, then `-lock` locked
    /// as an open locks it. Returns the lock and whether `-lock` was there before (a crashed
    /// session's, which the caller leaves for recovery).
    static func lockClosedStore(path: String, key: String, fs: any StoreFileSystem) throws(FileStoreError) -> (StoreLock, crashed: Bool) {
        StoreLock.claim(key)
        do throws(FileStoreError) {
            let (file, crashed) = try lockFileLocked(path + "-lock", path: path, fs: fs)
            return (StoreLock(claim: key, file: file), crashed)
        } catch {
            StoreLock.unclaim(key)
            throw error
        }
    }

    /// ``lockFileLocked(_:path:fs:)``, tried again every 10 ms while another process holds
    /// the lock, for up to `timeout` seconds (the lock has no waiting form that can time out;
    /// a process that closes the store lets go of it at once, so the wait ends within 10 ms
    /// of that).
    static func lockFileWaiting(
        _ lockPath: String, path: String, fs: any StoreFileSystem, timeout: TimeInterval
    ) throws(FileStoreError) -> (any StoreFile, crashed: Bool) {
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, timeout) * 1000))
        while true {
            do throws(FileStoreError) {
                return try lockFileLocked(lockPath, path: path, fs: fs)
            } catch where error.kind == .lockedByAnotherProcess && ContinuousClock.now < deadline {
                usleep(10_000)
            }
        }
    }

    /// Opens `-lock` and takes its file lock; returns the locked file and whether `-lock`
    /// was there before (the last session crashed). Closes what it opened when it throws.
    ///
    /// - Throws: ``FileStoreError/Kind/lockedByAnotherProcess``, or `.io`.
    static func lockFileLocked(
        _ lockPath: String, path: String, fs: any StoreFileSystem
    ) throws(FileStoreError) -> (any StoreFile, crashed: Bool) {
        var crashed = fs.fileExists(lockPath)
        var lockFile = try io(path, "opening the lock file") { try fs.open(lockPath, create: true) }
        var locked = false
        for attempt in 0..<8 {
            do {
                locked = try io(path, "locking the store") { try lockFile.tryLock() }
            } catch {
                // A `-lock` this call created goes again (if the path still names it): left
                // behind, it would make the next open treat the file as crashed and "recover"
                // damage it should report.
                let created = !crashed ? lockFile.identity() : nil
                lockFile.close()
                if let created, fs.identity(ofPath: lockPath) == created { try? fs.remove(lockPath) }
                throw error
            }
            // A process closing the store unlinks the lock file after we opened it: then we
            // hold a lock on a file no other process can find. Start over with the file the
            // path names now. (Without this, two processes could both "own" the store.)
            guard locked, let held = lockFile.identity() else { break }
            if fs.identity(ofPath: lockPath) == held || attempt == 7 { break }
            lockFile.close()
            crashed = fs.fileExists(lockPath)
            lockFile = try io(path, "opening the lock file") { try fs.open(lockPath, create: true) }
            locked = false
        }
        guard locked else {
            lockFile.close()
            throw FileStoreError(
                .lockedByAnotherProcess, path: path,
                "another process has this store open. Close it there first; a store is used by one process at a time.")
        }
        return (lockFile, crashed)
    }

    /// Creates a new store file atomically: written beside the final name, synced, renamed.
    private static func createFile(
        path: String, directory: String, model: NSManagedObjectModel, storeID: UUID, fs: any StoreFileSystem
    ) throws(FileStoreError) {
        // The model record goes in the same write as the header: a file without it would be
        // a version 5 file whose metadata lacks the entity version hashes.
        let bytes =
            FileStoreFormat.header(storeID: storeID, modelHash: model.layoutHash) + FileStoreFormat.modelRecord(model, sequence: 0)
        try writeWhole(bytes, to: path, through: path + "-new", in: directory, fs: fs, "creating the store")
    }

    /// Writes `bytes` as the whole file at `path`, all or nothing: into `temporary`, synced,
    /// renamed over `path`, and the folder synced so that the rename survives a power cut.
    static func writeWhole(
        _ bytes: [UInt8], to path: String, through temporary: String, in directory: String, fs: any StoreFileSystem,
        _ what: String
    ) throws(FileStoreError) {
        try io(path, what) {
            let f = try fs.open(temporary, create: true)
            defer { f.close() }
            try f.truncate(to: 0)
            try f.write(bytes, at: 0)
            try f.sync()
            try fs.rename(temporary, to: path)
            try fs.syncDirectory(directory)
        }
    }

    /// Runs a file operation, turning its error into a ``FileStoreError``.
    static func io<T>(_ path: String, _ what: String, _ body: () throws -> T) throws(FileStoreError) -> T {
        do {
            return try body()
        } catch let e as StoreIOError {
            throw FileStoreError.io(e, path: path, what)
        } catch let e as FileStoreError {
            throw e
        } catch {
            throw FileStoreError(.io, path: path, "\(what) failed: \(error)")
        }
    }

    /// Checks the header and the chain of records, and notes the payloads to apply (in
    /// `s.unapplied`) and the clean-close counts. Returns the store ID and, after a crash,
    /// where an unfinished last record begins.
    ///
    /// Applying waits for `materialize(_:)`: opening stays a read of the file, and building
    /// the row tables — most of an open's cost, mostly the page faults of their fresh memory
    /// (measured: ~600 faults and ~1 ms of a 2.5 ms open for 100,000 rows) — happens on the
    /// first use that needs rows. Damage that checksums cannot see (a checksum-valid record
    /// with impossible contents) is then reported by that first use, as a typed error.
    ///
    /// Checksums: opening after a crash or a create (`tolerant`) checks every record's,
    /// because recovery must tell an unfinished last record from damage. A strict open (the
    /// file was closed cleanly) checks the record chain — every marker, length, kind and the
    /// close record's checksum — and leaves the other checksums to `materialize(_:)`, which
    /// checks each record before applying it, so no damaged byte is ever used: like SQLite,
    /// which checks a page when it reads it. (Checking all at open was a third of reopening a
    /// 7.6 MB store, repeated by the first query that reads the rows.) If the chain itself is
    /// broken, the whole file is checked again with checksums, so the error names the first
    /// damaged record, not a later marker that the damage displaced.
    static func verify(
        _ s: inout State, path: String, model: NSManagedObjectModel, tolerant: Bool, unsyncedFrom: Int? = nil
    ) throws(FileStoreError) -> (String, Int?) {
        let image = s.image
        let header = try image.withBytes { buf throws(FileStoreError) in try FileStoreFormat.readHeader(buf, path: path) }
        // The header's hash, or the newer layout a migration recorded for it (see
        // `FileStore+LayoutAlias.swift`), read only when the two differ.
        s.numbering = nil
        if header.modelHash != model.layoutHash.prefix(16) {
            let layout = effectiveLayout(header: header.modelHash, path: path)
            // A numbering must cover the model's entities (a sidecar's of another model
            // with the same layout hash cannot, as the hash covers the entities).
            let numbered = layout.numbering?.toModel.count ?? model.entities.count
            if layout.hash == model.layoutHash.prefix(16), numbered == model.entities.count {
                s.numbering = layout.numbering
            } else {
                let stored = NSManagedObjectModel.hex(layout.hash)
                throw FileStoreError(
                    .modelMismatch(storeHash: stored, modelHash: model.layoutHashString), path: path, offset: 32,
                    "the store was created with model \(stored), but was opened with model \(model.layoutHashString). "
                        + "Open it with the model it was created with, or load it through a container, which migrates it.")
            }
        }
        s.formatVersion = header.version
        let storeID = header.storeID
        if !tolerant {
            do throws(FileStoreError) {
                try walkRecords(&s, path: path, model: model, tolerant: false, checksums: false)
                s.unverified = true
                return (storeID, nil)
            } catch {
                // The chain is broken: check everything, so that the error names the first
                // damaged record (see above).
            }
        }
        image.prefetch()
        let cut = try walkRecords(&s, path: path, model: model, tolerant: tolerant, checksums: true, unsyncedFrom: unsyncedFrom)
        s.unverified = false
        return (storeID, cut)
    }

    /// Walks the records after the header (see ``verify(_:path:model:tolerant:)``): checks
    /// markers, lengths and kinds, and every checksum when `checksums` is set (the close
    /// record's always, as its counts are used). Fills `s.unapplied`, `s.closeCounts` and
    /// `s.sequence`. Returns where an unfinished last record begins (tolerant walks only).
    @discardableResult
    private static func walkRecords(
        _ s: inout State, path: String, model: NSManagedObjectModel, tolerant: Bool, checksums: Bool,
        unsyncedFrom: Int? = nil
    ) throws(FileStoreError) -> Int? {
        let image = s.image
        let size = image.count
        let version = s.formatVersion
        return try image.withBytes { buf throws(FileStoreError) -> Int? in
            s.unapplied = []
            s.closeCounts = nil
            let entityCount = Int32(model.entities.count)
            var offset = FileStoreFormat.headerSize
            var lastKind: FileStoreFormat.RecordKind?
            var lastSequence: UInt64?
            defer { if lastKind != .close { s.closeCounts = nil } }
            while offset < size {
                let remaining = size - offset
                // Damage in what a crashed `normal` session appended without syncing is cut
                // there, whatever follows (see FileStore+SyncedPrefix.swift).
                let unsynced = tolerant && unsyncedFrom.map { offset >= $0 } == true
                func torn(_ why: String) throws(FileStoreError) -> Int {
                    if tolerant { return offset }
                    throw FileStoreError(
                        .truncated, path: path, offset: offset,
                        "\(why). The file was cut short after it was last closed cleanly (if a process using it crashed, "
                            + "keep its -lock file beside it so that recovery can run).")
                }
                if remaining < FileStoreFormat.recordOverhead {
                    return try torn("the file ends inside a record header")
                }
                let magic = buf.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
                let length = Int(buf.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self).littleEndian)
                guard magic == FileStoreFormat.recordMagic else {
                    // After a crash, what follows the last record may be reserved zeros or an
                    // unfinished record whose blocks reached the disk in any order (at full
                    // durability the reservation means the file's size no longer hides them).
                    // Neither holds an acknowledged save: cut, unless an intact record follows.
                    if unsynced || (tolerant && !intactRecordFollows(buf, after: offset, version: version)) { return offset }
                    if !tolerant && buf[offset..<size].allSatisfy({ $0 == 0 }) {
                        // The space a full-durability store reserves: this is an open store's
                        // file, copied (or left by a crash whose -lock file is gone).
                        throw FileStoreError(
                            .truncated, path: path, offset: offset,
                            "the file ends in zero bytes without the marker a clean close writes: it was copied while open "
                                + "(if a process using it crashed, keep its -lock file beside it so that recovery can run).")
                    }
                    throw FileStoreError(.corrupt, path: path, offset: offset, "a record marker is missing: the file is damaged here.")
                }
                let total = FileStoreFormat.recordOverhead + length
                guard length <= FileStoreFormat.maxPayload, total <= remaining else {
                    // Only the last record can be unfinished: a length that runs past the end
                    // with an intact record after it is damage, reported, never cut; taken for
                    // an unfinished record, it would cut every save after the damaged length.
                    if !unsynced && intactRecordFollows(buf, after: offset, version: version) {
                        throw FileStoreError(
                            .corrupt, path: path, offset: offset,
                            "a record's length is damaged: the file is damaged here. Saves before this byte are intact.")
                    }
                    return try torn("the last record runs past the end of the file")
                }
                let crcAt = offset + FileStoreFormat.recordHeaderSize + length
                let stored = buf.loadUnaligned(fromByteOffset: crcAt, as: UInt32.self).littleEndian
                let checked = checksums || buf[offset + 4] == FileStoreFormat.RecordKind.close.rawValue
                guard !checked || stored == FileStoreFormat.recordChecksum(UnsafeRawBufferPointer(rebasing: buf[offset..<crcAt]), version: version) else {
                    // Unfinished, as above: no intact record after it.
                    if unsynced || (tolerant && !intactRecordFollows(buf, after: offset, version: version)) { return offset }
                    throw checksumMismatch(path: path, at: offset)
                }
                guard let kind = FileStoreFormat.RecordKind(rawValue: buf[offset + 4]) else {
                    if unsynced { return offset }
                    throw FileStoreError(.corrupt, path: path, offset: offset + 4, "unknown record kind \(buf[offset + 4]).")
                }
                if kind == .model {
                    // Only first, and only from version 5 (see FileStoreFormat+Model.swift); it
                    // holds no rows and takes no part in the run of record numbers.
                    guard offset == FileStoreFormat.headerSize, version >= 5 else {
                        if unsynced { return offset }
                        throw FileStoreError(
                            .corrupt, path: path, offset: offset + 4,
                            "a model record where only the first record of a version 5 file may be one: the file is damaged here.")
                    }
                    offset += total
                    continue
                }
                let sequence = buf.loadUnaligned(fromByteOffset: offset + 12, as: UInt64.self).littleEndian
                // Far below any count of saves, and room for the next number: a larger one is
                // damage (a checksum-valid one would crash the next save's `+ 1`).
                guard sequence < Self.maxSequence else {
                    if unsynced { return offset }
                    throw FileStoreError(
                        .corrupt, path: path, offset: offset + 12, "record number \(sequence) is out of range: the file is damaged here.")
                }
                // Each transaction record takes the next number; checkpoint and close records
                // repeat the last one. A gap means a whole record is missing (or out of place):
                // its checksum cannot show that, and the rows it held would be lost silently.
                if let last = lastSequence {
                    let expected = kind == .transaction ? last &+ 1 : last
                    guard sequence == expected else {
                        if unsynced { return offset }
                        throw FileStoreError(
                            .corrupt, path: path, offset: offset + 12,
                            "record number \(sequence) follows record \(last): a record is missing or out of place here. "
                                + "Saves before this record are intact.")
                    }
                }
                lastSequence = sequence
                let payload = (offset + FileStoreFormat.recordHeaderSize)..<crcAt
                if kind == .close {
                    var counts = ByteReader(buf, range: payload, path: path, numbering: s.numbering)
                    s.closeCounts = try FileStoreFormat.decodeCounts(&counts, entityCount: entityCount)
                } else {
                    s.unapplied.append(payload)
                    s.closeCounts = nil
                }
                s.sequence = max(s.sequence, sequence)
                lastKind = kind
                offset += total
            }
            s.endsCleanly = lastKind == .close
            if !tolerant && lastKind != .close {
                throw FileStoreError(
                    .truncated, path: path, offset: size,
                    "the file ends without the marker a clean close writes: it was cut short or copied while open "
                        + "(if a process using it crashed, keep its -lock file beside it so that recovery can run).")
            }
            return nil
        }
    }

    /// Whether a whole record with a valid checksum starts anywhere after `offset` in `buf`:
    /// then the damage at `offset` is not an unfinished last write, and must be reported.
    ///
    /// Errs towards reporting: the bytes of the unfinished record itself are scanned too, so
    /// one whose binary attribute holds a copy of a whole record is reported as damage
    /// (a typed error, nothing dropped) instead of cut. So does running out of budget: the
    /// candidates' checksums may cover four times the bytes after `offset`, plus 1 MiB;
    /// past that the answer is "yes". (A file crafted with a plausible record header every
    /// few bytes made every candidate checksum most of the rest of the file — quadratic, hours
    /// for a few megabytes. A real unfinished write holds few candidates, if any.)
    static func intactRecordFollows(_ buf: UnsafeRawBufferPointer, after offset: Int, version: UInt32) -> Bool {
        let size = buf.count
        var budget = 4 * max(0, size - offset) + (1 << 20)
        var at = offset + 1
        while at + FileStoreFormat.recordOverhead <= size {
            defer { at += 1 }
            guard buf.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian == FileStoreFormat.recordMagic else { continue }
            let length = Int(buf.loadUnaligned(fromByteOffset: at + 8, as: UInt32.self).littleEndian)
            guard length <= FileStoreFormat.maxPayload, at + FileStoreFormat.recordOverhead + length <= size else { continue }
            let crcAt = at + FileStoreFormat.recordHeaderSize + length
            budget -= crcAt - at
            if budget < 0 { return true }
            let stored = buf.loadUnaligned(fromByteOffset: crcAt, as: UInt32.self).littleEndian
            if stored == FileStoreFormat.recordChecksum(UnsafeRawBufferPointer(rebasing: buf[at..<crcAt]), version: version) {
                return true
            }
        }
        return false
    }

    /// Applies the payloads opening noted (if not done yet), checking the checksum of each
    /// record a strict open left unchecked before using it: builds the row tables. On a
    /// failure the tables are left empty and the payloads kept, so every later use reports
    /// the same damage.
    func materialize(_ s: inout State) throws(FileStoreError) {
        guard !s.unapplied.isEmpty else { return }
        try Self.applyAll(&s, path: path, shapes: rowShapes, indexedColumns: indexedColumns)
    }

    static func applyAll(_ s: inout State, path: String, shapes: RowShapes, indexedColumns: [Int32: [Int]]) throws(FileStoreError) {
        assert(s.tables.isEmpty, "tables are built from the file once, before any other change")
        let image = s.image
        let payloads = s.unapplied
        let unverified = s.unverified
        let version = s.formatVersion
        image.prefetch()
        do {
            try image.withBytes { buf throws(FileStoreError) in
                for payload in payloads {
                    if unverified { try checkRecord(buf, payload: payload, version: version, path: path) }
                    let kind = buf[payload.lowerBound - FileStoreFormat.recordHeaderSize + 4]
                    if kind == FileStoreFormat.RecordKind.historyDeletion.rawValue {
                        try applyHistoryDeletion(buf, payload: payload, to: &s, path: path)
                    } else {
                        try apply(buf, payload: payload, to: &s, path: path, shapes: shapes, indexedColumns: indexedColumns)
                    }
                }
            }
        } catch {
            s.tables = [:]
            s.liveBytes = 0
            s.history = HistoryLog()
            throw error
        }
        s.unapplied = []
        s.unverified = false
        s.closeCounts = nil
        for (entity, table) in s.tables where table.rows.isEmpty {
            s.tables[entity]?.indexesReady = true
        }
    }

    /// Checks the checksum of the record whose payload is `payload` (one a strict open left
    /// unchecked): damage there is reported as by `verify`, before any byte of it is used.
    static func checkRecord(_ buf: UnsafeRawBufferPointer, payload: Range<Int>, version: UInt32, path: String) throws(FileStoreError) {
        let start = payload.lowerBound - FileStoreFormat.recordHeaderSize
        let stored = buf.loadUnaligned(fromByteOffset: payload.upperBound, as: UInt32.self).littleEndian
        guard stored == FileStoreFormat.recordChecksum(UnsafeRawBufferPointer(rebasing: buf[start..<payload.upperBound]), version: version) else {
            throw checksumMismatch(path: path, at: start)
        }
    }

    /// The error for a record at `offset` whose checksum does not match its bytes.
    static func checksumMismatch(path: String, at offset: Int) -> FileStoreError {
        FileStoreError(
            .corrupt, path: path, offset: offset,
            "a record's checksum does not match: the file is damaged here. Saves before this byte are intact.")
    }

    /// Applies one transaction or checkpoint payload to the tables.
    ///
    /// Reports as `corrupt`, at the entry's offset, what no save or compaction writes: an
    /// entity index the model does not have, an entity listed twice among the keys, a key or
    /// version out of range, a row with more values than its entity has properties or a key
    /// past its entity's next key (a row moved to another entity), and a row put twice or
    /// put and deleted in one record.
    static func apply(
        _ buf: UnsafeRawBufferPointer, payload: Range<Int>, to s: inout State, path: String, shapes: RowShapes,
        indexedColumns: [Int32: [Int]]
    ) throws(FileStoreError) {
        var r = ByteReader(buf, range: payload, path: path, numbering: s.numbering)
        let entityCount = shapes.entityCount
        let keyCount = Int(try r.u16())
        var nextKeys: [(entity: Int32, next: Int64)] = []
        // Damage is reported at the start of the entry that holds it.
        // (Not through `r`: a local function that captures the reader makes every read of it
        // go through a box.)
        let fileOffset = r.fileOffset
        var entryAt = r.position
        func bad(_ why: String) -> FileStoreError { FileStoreError(.corrupt, path: path, offset: fileOffset + entryAt, why) }
        for _ in 0..<keyCount {
            entryAt = r.position
            let entity = try r.entity()
            let next = try r.i64()
            guard entity >= 0, entity < entityCount else { throw bad("entity index \(entity) is out of range") }
            guard next >= 1, next <= maxPrimaryKey else { throw bad("next primary key \(next) is out of range") }
            guard !nextKeys.contains(where: { $0.entity == entity }) else { throw bad("entity \(entity) is listed twice among the keys") }
            nextKeys.append((entity, next))
        }
        let entries = Int(try r.u32())
        for (entity, next) in nextKeys {
            try modify(&s.tables[entity, default: Table(indexesReady: false)]) { table throws(FileStoreError) in
                table.nextKey = max(table.nextKey, next)
                // Room for this record's rows at once, but no more than it can fill: a key
                // counter far above the live rows (after deletions) must not allocate a
                // table for keys that hold nothing.
                table.rows.reserveKeys(below: min(table.nextKey, Int64(table.rows.count) + Int64(entries) + 1))
            }
        }
        // Rows of one entity usually come together: keep that entity's table out of the
        // dictionary while its rows are applied (measured: a dictionary access per row was a
        // large share of opening a store).
        var currentEntity: Int32 = -1
        var current = Table(indexesReady: false)
        var liveDelta = 0
        func flush() {
            if currentEntity >= 0 { s.tables[currentEntity] = current }
            currentEntity = -1
        }
        defer {
            flush()
            s.liveBytes += liveDelta
        }
        for _ in 0..<entries {
            entryAt = r.position
            // The 21-byte entry header in one bounds check (reopening runs this for every row).
            let (opByte, storedEntity, pk, version) = try r.entryHeader()
            let entity = r.modelEntity(storedEntity)
            guard entity >= 0, entity < entityCount else { throw bad("entity index \(entity) is out of range") }
            guard pk >= 1, pk < maxPrimaryKey else { throw bad("primary key \(pk) is out of range") }
            guard version >= 0, version < Int64.max / 2 else { throw bad("row version \(version) is out of range") }
            switch FileStoreFormat.Op(rawValue: opByte) {
            case .put:
                let length = Int(try r.u32())
                let start = r.position
                try r.skip(length)  // a huge length fails here: `need` rejects it
                // The value count only (reopening runs this for every row): the kinds are
                // checked when the row is decoded.
                guard length >= 2 else { throw bad("row \(pk) of entity \(entity) is too short to hold its value count") }
                let values = Int(buf[start]) | Int(buf[start + 1]) << 8
                guard values <= shapes.valueCounts[Int(entity)] else {
                    throw bad(
                        "row \(pk) of entity \(entity) holds \(values) values where the entity has \(shapes.valueCounts[Int(entity)]) properties")
                }
                let ref = RowRef(offset: start, length: length, version: version)
                if entity != currentEntity {
                    flush()
                    current = s.tables.removeValue(forKey: entity) ?? Table(indexesReady: false)
                    currentEntity = entity
                }
                // Tables are only built here from a fresh state (`applyAll`), so none has live
                // indexes yet; a save keeps its indexes current in its own loop (Commit).
                assert(!current.indexesReady, "replay builds tables whose indexes come on first use")
                if let old = current.rows.updateValue(ref, forKey: pk) {
                    guard old.offset < payload.lowerBound else { throw bad("row \(pk) of entity \(entity) is written twice in one record") }
                    liveDelta -= liveSize(old)
                }
                // Every key a row holds was handed out first, by a key entry of this record or
                // an earlier one: a row past its entity's next key was never written there.
                guard pk < current.nextKey else { throw bad("row \(pk) of entity \(entity) is past the entity's next key \(current.nextKey)") }
                liveDelta += liveSize(ref)
            case .delete:
                flush()
                if let old = s.tables[entity]?.rows[pk], old.offset >= payload.lowerBound {
                    throw bad("row \(pk) of entity \(entity) is written and deleted in one record")
                }
                // Replay builds tables from a fresh state: the derived ends' lists come later.
                assert(!s.derived.isReady, "replay runs before the derived ends' lists are built")
                removeRow(entity: entity, pk: pk, in: &s, buf: buf, path: path, indexedColumns: indexedColumns)
            case nil:
                throw bad("unknown row operation \(opByte)")
            }
        }
        // What follows the entries is a history section (format 4; see
        // FileStoreFormat+History.swift). Earlier versions never write one.
        if r.remaining > 0 {
            entryAt = r.position
            guard s.formatVersion >= FileStoreFormat.historyVersion else {
                throw bad("a record of a version \(s.formatVersion) file has bytes after its entries")
            }
            try applyHistory(&r, to: &s, shapes: shapes)
        }
    }

    /// Primary keys stay far below `Int64.max`, so key arithmetic cannot overflow.
    static let maxPrimaryKey: Int64 = 1 << 62
    /// Record numbers stay far below `UInt64.max`, so the next one never overflows.
    static let maxSequence: UInt64 = 1 << 62

    /// Bytes a live row takes in a compacted file.
    static func liveSize(_ ref: RowRef) -> Int { 25 + ref.length }

    /// Runs `body` on a value in place (for dictionary entries: no copy-out, no re-insert).
    @inline(__always)
    static func modify<T>(_ value: inout T, _ body: (inout T) throws(FileStoreError) -> Void) throws(FileStoreError) {
        try body(&value)
    }

    /// Removes row `pk` of `entity` from its table, its attribute indexes and, when the
    /// derived ends' lists are built (`derivedLayout` given), from those lists.
    static func removeRow(
        entity: Int32, pk: Int64, in s: inout State, buf: UnsafeRawBufferPointer, path: String, indexedColumns: [Int32: [Int]],
        derivedLayout: DerivedEnds.Layout? = nil
    ) {
        guard s.tables[entity]?.rows[pk] != nil else { return }
        var freed = 0
        var removed: RowRef?
        try? modify(&s.tables[entity, default: Table()]) { table throws(FileStoreError) in
            guard let old = table.rows.removeValue(forKey: pk) else { return }
            removed = old
            freed = liveSize(old)
            if table.indexesReady, let columns = indexedColumns[entity] {
                table.unindex(pk: pk, ref: old, columns: columns, buf: buf, path: path)
            }
        }
        s.liveBytes -= freed
        if let removed, let derivedLayout, s.derived.isReady {
            for c in derivedLayout.sourceColumns(entity) {
                let was = storedValue(at: c.property, of: removed, buf, numbering: s.numbering, path: path)
                s.derived.follow(c, of: derivedLayout, row: StoreRowID(entity: entity, primaryKey: pk), from: was, to: nil)
            }
        }
    }

    /// The value in column `column` of the row stored at `ref`; nil when it does not decode
    /// (a row the store wrote does, and the derived ends' lists could not be built past one
    /// that does not).
    static func storedValue(
        at column: Int, of ref: RowRef, _ buf: UnsafeRawBufferPointer, numbering: EntityNumbering?, path: String
    ) -> StoreValue? {
        var r = ByteReader(buf, range: ref.offset..<(ref.offset + ref.length), path: path, numbering: numbering)
        return try? FileStoreFormat.decodeValue(at: column, &r)
    }
}
