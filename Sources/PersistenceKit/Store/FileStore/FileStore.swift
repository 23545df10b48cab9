import Foundation
import Synchronization

/// The type string of ``FileStore``, PersistenceKit's default store type.
public let NSFileStoreType = "PersistenceKitFile"

/// A durable, crash-safe store kept in one file (plus a `-lock` sidecar while open),
/// written by pure Swift code.
///
/// # Guarantees
/// - **Atomic saves.** A save is one checksummed record appended to the file. A crash at any
///   byte loses no save that returned and never exposes part of one; the next open
///   recovers by itself.
/// - **Durable saves.** With ``Durability/full`` (the default) a save returns only after its
///   record reached stable storage (`fsync`). ``Durability/normal`` skips the per-save
///   `fsync` (like SQLite's `synchronous=NORMAL`): still crash-consistent, but a power loss
///   may drop the most recent saves.
/// - **Serialized writes, consistent reads.** One writer at a time; reads never see part of a
///   transaction. Every coordinator in the process that opens the same file (by any path:
///   symbolic links are resolved) shares one store object, and must ask for the same
///   durability (``FileStoreError/Kind/optionsMismatch`` otherwise); another process gets
///   ``FileStoreError/Kind/lockedByAnotherProcess``. Hard links are not recognized: open a
///   store through one path.
/// - **Damage is reported, not hidden.** A damaged file gives a ``FileStoreError`` naming
///   the file and byte offset; nothing is silently dropped, except the unfinished record of
///   a session that crashed.
/// - **Bounded size.** Before a save, when the file holds more than twice the live data and
///   more than ``Options/compactionThreshold`` bytes (64 KiB by default), the store
///   compacts it into a fresh file (written beside it, then renamed over it).
///
/// Opening maps the file into memory (or reads it, on file layers that cannot map) and
/// checks the header and the chain of records — every record's checksum too after a crash.
/// The row tables are built on the first use that needs rows, which first checks the
/// checksum of each record it applies; an unfiltered count right after a clean reopen comes
/// from the counts the clean close wrote. Rows are decoded when fetched. Damage found by
/// that first use (a checksum mismatch, or a checksum-valid record with impossible
/// contents) is reported by it, as a typed error.
public final class FileStore: PersistentStore {
    /// How hard a save works to reach the disk.
    public enum Durability: String, Sendable {
        /// `fsync` after every save (default).
        case full
        /// No `fsync` per save; crash-consistent, may lose the latest saves on power loss.
        case normal
    }

    /// How a store is opened.
    public struct Options: Sendable {
        /// Durability of saves. Default `.full`.
        public var durability: Durability
        /// The file layer; tests inject faults through it. Default: POSIX.
        public var fileSystem: any StoreFileSystem
        /// Compaction runs only once the file is at least this large. Default 64 KiB.
        public var compactionThreshold: Int
        /// Whether saves record persistent history in the file (``NSPersistentHistoryTrackingKey``).
        /// Default `false`: saves then write exactly what they wrote before history existed.
        public var tracksHistory: Bool
        /// Whether the store is only read (``NSReadOnlyPersistentStoreOption``). Default
        /// `false`. Such an open writes nothing, not even the `-lock` beside the file, so a
        /// store in a folder the process cannot write (shipped with an app, say) opens, and
        /// any number of processes may read it at once; it needs a store that exists, was
        /// closed cleanly and that no process has open for writing (see FileStore+ReadOnly.swift).
        public var readOnly = false
        /// How long an open waits for another process to close the store, in seconds
        /// (``NSPersistentStoreTimeoutOption``). Default 0: a store another process has open
        /// fails the open at once with `.lockedByAnotherProcess`.
        public var lockTimeout: TimeInterval = 0
        /// The identifier a store created by this open gets (a fresh UUID when `nil`).
        /// Migration sets it, so that a migrated store keeps its identifier and the object
        /// IDs (URIs) that name it.
        var newStoreIdentifier: UUID?

        /// Creates options.
        public init(
            durability: Durability = .full, fileSystem: any StoreFileSystem = PosixFileSystem(), compactionThreshold: Int = 64 << 10,
            tracksHistory: Bool = false
        ) {
            self.durability = durability
            self.fileSystem = fileSystem
            self.compactionThreshold = compactionThreshold
            self.tracksHistory = tracksHistory
        }
    }

    /// The store-description option key for durability (`"full"` or `"normal"`).
    public static let durabilityOptionKey = "PersistenceKit.durability"

    /// See ``PersistentStore``.
    public let identifier: String
    /// See ``PersistentStore``: ``Options/readOnly``.
    public var isReadOnly: Bool { options.readOnly }
    /// See ``PersistentStore``.
    public var type: String { NSFileStoreType }
    /// See ``PersistentStore``.
    public let url: URL?
    /// See ``PersistentStore``.
    public var metadata: [String: String] {
        baseMetadata.merging(userMetadata.withLock { $0 }) { base, _ in base }
    }
    /// The metadata the store sets itself (type, identifier, model hashes).
    let baseMetadata: [String: String]
    /// The application's metadata entries (see FileStore+UserMetadata.swift).
    let userMetadata: Lock<[String: String]>
    /// The store file's path.
    public let path: String
    /// The folder holding the store file (and `-lock`), which is synced when they appear.
    var directory: String { (path as NSString).deletingLastPathComponent }
    /// The store's key in this process's table of open stores and of claimed locks.
    let key: String
    let options: Options
    /// The coordinators this store is added to (see `NSPersistentStoreCoordinator.remove`).
    /// Changed only under `openStores`' lock (see `attach()`), so that counting and the
    /// table's entry change together; atomic so that the class stays `Sendable`.
    private let attachments = Atomic<Int>(0)
    let model: NSManagedObjectModel
    /// Attribute columns with an index, per entity.
    let indexedColumns: [Int32: [Int]]
    /// The model's uniqueness constraints, each held across its family (empty: none, and
    /// commits skip the check).
    let uniqueConstraints: UniqueConstraints
    /// Keeps both ends of each stored link in agreement at commit.
    let links: LinkKeeper
    /// The derived to-many columns, which the store fills in from the owning ends.
    let derivedLayout: DerivedEnds.Layout
    /// What each entity's stored rows can hold, checked when records are applied and rows
    /// decoded.
    let rowShapes: RowShapes
    let state: Lock<State>
    /// Set for a query generation's snapshot (see FileStore+QueryGenerations.swift): a
    /// read-only view that has no file and refuses every write.
    let isSnapshot: Bool
    /// The properties whose values deleted rows leave in history, per entity (empty unless
    /// the store tracks history).
    let tombstoneColumns: [Int32: [Int]]
    /// Bytes of the model record a compacted file starts with (FileStoreFormat+Model.swift),
    /// counted as live data so that a compacted file is never due for compaction again.
    let modelRecordSize: Int

    /// Where a row's encoded values are in the image, and its version.
    ///
    /// 20 bytes (24 as an optional): the length is stored in 32 bits, as the format does.
    /// Row tables hold one per key, so this size is most of a table's memory and of the
    /// page faults of building one at open.
    struct RowRef {
        /// Offset of the encoded values in the image.
        var offset: Int
        var version: Int64
        private var length32: UInt32

        init(offset: Int, length: Int, version: Int64) {
            assert(length >= 0 && length <= Int(UInt32.max), "a row's length fits the format's u32")
            self.offset = offset
            self.version = version
            self.length32 = UInt32(truncatingIfNeeded: length)
        }

        /// Length of the encoded values in bytes.
        var length: Int { Int(length32) }
    }

    struct Table {
        var rows = RowTable()
        var nextKey: Int64 = 1
        var indexes = ColumnIndexes()
        /// Indexes of rows replayed at open are built on first use, not while the store
        /// opens: opening stays a single pass over the file (measured: building them at open
        /// tripled reopen time). A table that starts empty keeps its indexes from the start.
        var indexesReady: Bool

        init(indexesReady: Bool = true) {
            self.indexesReady = indexesReady
        }
    }

    struct State {
        var file: (any StoreFile)?
        /// The store's lock; released (and `nil`) once the store is closed.
        var lock: StoreLock?
        /// The whole store file as it is on disk.
        var image: StoreImage
        /// How the file numbers entities, when not as the model does (a migration added an
        /// entity that sorts before old ones: see EntityNumbering.swift). Read with the image;
        /// a compaction's new file numbers them as the model does, and its state has none.
        var numbering: EntityNumbering?
        var tables: [Int32: Table] = [:]
        /// The lists of the derived to-many ends, built on first use (see `DerivedEnds`).
        var derived = DerivedEnds()
        var sequence: UInt64 = 0
        /// The file's format version (from its header): records appended use its checksum.
        var formatVersion = FileStoreFormat.version
        /// Payloads of records that opening found but did not apply yet, in file order.
        /// Applied (and emptied) by `materialize(_:)` before anything reads or writes rows.
        var unapplied: [Range<Int>] = []
        /// Whether the checksums of the records in `unapplied` are still to be checked (a
        /// strict open defers them to `materialize(_:)`; see `verify`).
        var unverified = false
        /// Whether the file ends with a close record and nothing was written since it was
        /// opened: closing then writes nothing (opening and closing a store without saving
        /// leaves the file as it was, and a damaged file is not appended to).
        var endsCleanly = false
        /// Live rows per entity, from the clean-close record that ends the file; valid while
        /// `unapplied` is not empty (nothing has changed since the store opened).
        var closeCounts: [Int32: Int]?
        /// Bytes of the file that hold live rows (what a compaction would write).
        var liveBytes: Int = 0
        /// Set when a failed write may have left bytes past the image's end.
        var dirtyTail = false
        /// Set while the folder's entries may not be on disk: this session created `-lock`,
        /// or a compaction's folder sync failed after its rename. The next append syncs the
        /// folder before it writes, so no save is acknowledged while a power cut could still
        /// take `-lock` (the next open would then refuse the file as truncated instead of
        /// recovering it) or the renamed file (and with it the saves made since).
        var folderUnsynced = false
        /// At `normal` durability, where this session's unsynced appends to this file begin,
        /// once it has appended (see FileStore+SyncedPrefix.swift); `nil` before. A
        /// compaction starts a new, synced file, so its state starts without.
        var syncedPrefix: Int?
        /// Whether `-lock` holds `syncedPrefix` (a compaction clears it before its rename).
        var syncedPrefixOnDisk = false
        /// Zero bytes the file holds past the image's end, written ahead so that saves at
        /// full durability overwrite allocated blocks instead of growing the file (see
        /// `FileStore.reservation(forDataSize:)`). Always 0 at `normal` durability.
        var reserved = 0
        var closed = false
        /// Number of compactions run (for tests and diagnostics).
        var compactions = 0
        /// The unique indexes of the uniqueness constraints (see FileStore+Uniqueness.swift).
        var unique = UniqueIndexes()
        /// The persistent history kept in the file, decoded (see FileStore+History.swift).
        var history = HistoryLog()
    }

    /// Stores open in this process, by ``StoreLock/key(forStoreAt:)``, so that coordinators
    /// share them.
    static let openStores = Lock<[String: WeakFileStore]>([:])

    /// Opens (or creates) the store at `url` for `model`, or returns the store already open
    /// at that path in this process.
    ///
    /// - Throws: ``FileStoreError`` — locked by another process, created with a different
    ///   model (naming both hashes), damaged (naming file and offset), or an I/O failure
    ///   (`.io`, also for a URL that is not a file URL).
    public static func open(at url: URL, model: NSManagedObjectModel, options: Options = Options()) throws -> FileStore {
        guard url.isFileURL else {
            throw FileStoreError(
                .io, path: url.absoluteString,
                "a file store needs a file URL, not \(url.absoluteString); use URL(fileURLWithPath:).")
        }
        // Symbolic links resolved, a link to a file not made yet included (see `resolvedPath(of:)`).
        let path = resolvedPath(of: url)
        // The folder first: the key names it by its identity, which it has only once it exists.
        let directory = (path as NSString).deletingLastPathComponent
        // A read-only open makes nothing, its folder included (a missing folder holds no
        // store, which the open then reports).
        if !options.readOnly {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw FileStoreError(.io, path: path, "could not create the store's folder \(directory): \(error)")
            }
        }
        let key = StoreLock.key(forStoreAt: path)
        // The store found in the table is released only after the table's lock: if another
        // thread let go of it meanwhile, this is the last reference, and its deinit (close)
        // takes the lock again.
        var found: FileStore?
        defer { withExtendedLifetime(found) {} }
        return try openStores.withLock { stores throws(FileStoreError) -> FileStore in
            found = stores[key]?.store
            if let existing = found, !existing.isClosed {
                guard existing.model.layoutHash == model.layoutHash else {
                    throw FileStoreError(
                        .modelMismatch(storeHash: existing.model.layoutHashString, modelHash: model.layoutHashString),
                        path: path,
                        "the store is open in this process with model \(existing.model.layoutHashString), not "
                            + "\(model.layoutHashString); open it with the same model.")
                }
                // One store object serves every opener, so it cannot give one of them the
                // durability it asked for and another a weaker one (without this check, a
                // second container asking for `full` would silently get `normal`).
                guard existing.options.durability == options.durability else {
                    throw FileStoreError(
                        .optionsMismatch, path: path,
                        "the store is open in this process with \(existing.options.durability) durability, not "
                            + "\(options.durability); open it with the same durability, or close the other container first.")
                }
                // A read-only open's file cannot be written through.
                guard existing.options.readOnly == options.readOnly else {
                    throw FileStoreError(
                        .optionsMismatch, path: path,
                        "the store is open in this process \(existing.options.readOnly ? "read-only" : "for writing"), and "
                            + "one store object serves every opener; open it the same way, or close the other container first.")
                }
                // Likewise history: one store object cannot record it for one opener and not
                // for another.
                guard existing.options.tracksHistory == options.tracksHistory else {
                    throw FileStoreError(
                        .optionsMismatch, path: path,
                        "the store is open in this process with persistent history tracking "
                            + "\(existing.options.tracksHistory ? "on" : "off"), not \(options.tracksHistory ? "on" : "off"); "
                            + "open it with the same NSPersistentHistoryTrackingKey, or close the other container first.")
                }
                return existing
            }
            FileStore.closesOpenStoresAtExit
            let store = try FileStore(path: path, key: key, url: url, model: model, options: options)
            stores[key] = WeakFileStore(store: store)
            return store
        }
    }

    /// Deletes the store at `url`: the store file and its `-lock`, `-new` and `-compact`
    /// sidecars. Nothing to delete is not an error. Used as Core Data's
    /// `destroyPersistentStore(at:ofType:options:)`.
    ///
    /// - Throws: ``FileStoreError`` — `.inUse` when the store is open in this process (close
    ///   it, or remove it from its coordinators, first); `.lockedByAnotherProcess`; `.io`.
    public static func destroy(at url: URL) throws(FileStoreError) {
        guard url.isFileURL else {
            throw FileStoreError(.io, path: url.absoluteString, "a file store needs a file URL, not \(url.absoluteString).")
        }
        let path = resolvedPath(of: url)
        let directory = (path as NSString).deletingLastPathComponent
        guard FileManager.default.fileExists(atPath: directory) else { return }
        let key = StoreLock.key(forStoreAt: path)
        var found: FileStore?
        defer { withExtendedLifetime(found) {} }  // released after the table's lock, as in `open`
        try openStores.withLock { stores throws(FileStoreError) in
            found = stores[key]?.store
            if let existing = found, !existing.isClosed {
                throw FileStoreError(
                    .inUse, path: path,
                    "the store is open in this process; close it (or remove it from every coordinator) before destroying it.")
            }
            // The store's own lock, so that no process opens it while its files go.
            // Taken as an open takes it, checking that the locked `-lock` is still the one
            // the path names: a lock taken on a `-lock` that a closing process had just
            // unlinked would let this delete a store another process was opening.
            let fs = PosixFileSystem()
            let (lock, _) = try lockClosedStore(path: path, key: key, fs: fs)
            defer { lock.release() }
            try io(path, "deleting the store") {
                for suffix in ["", "-new", "-compact", layoutAliasSuffix, userMetadataSuffix, userMetadataSuffix + "-new"] {
                    try fs.remove(path + suffix)
                }
                try fs.remove(path + "-lock")  // last: its lock kept others out until now
                try fs.syncDirectory(directory)
            }
        }
    }

    private init(path: String, key: String, url: URL, model: NSManagedObjectModel, options: Options) throws(FileStoreError) {
        self.path = path
        self.key = key
        self.url = url
        self.model = model
        self.options = options
        self.isSnapshot = false
        self.tombstoneColumns = options.tracksHistory ? HistoryLog.tombstoneColumns(of: model) : [:]
        var indexed: [Int32: [Int]] = [:]
        model.seal()
        self.links = LinkKeeper(model: model)
        self.derivedLayout = DerivedEnds.Layout(model: model, links: links)
        self.rowShapes = RowShapes(model: model)
        for e in model.entities {
            let columns = e.properties.enumerated().compactMap { i, p -> Int? in
                guard let a = p as? NSAttributeDescription, a.isIndexed, !a.isTransient else { return nil }
                return i
            }
            if !columns.isEmpty { indexed[e.index] = columns }
        }
        self.indexedColumns = indexed
        self.uniqueConstraints = UniqueConstraints(model: model)
        // Read before the files are opened: a damaged sidecar fails the open before the store
        // holds its lock (a throw after `openFiles` would leave the lock held).
        let sidecar = try Self.readUserMetadata(path: path)
        let opened =
            options.readOnly
            ? try Self.openFilesReadOnly(path: path, model: model, options: options)
            : try Self.openFiles(path: path, key: key, model: model, options: options, indexedColumns: indexed)
        self.identifier = opened.storeID
        self.recovery = opened.recovery
        // Once per open that recovered: a crash whose recovery cut something should not go
        // unnoticed by whoever reads the process's log.
        if let recovery = opened.recovery { Self.logRecovery(recovery) }
        self.modelRecordSize = FileStoreFormat.modelRecord(model, sequence: 0).count
        self.baseMetadata = [
            NSStoreTypeKey: NSFileStoreType,
            NSStoreUUIDKey: opened.storeID,
            PersistenceKitModelLayoutHashKey: model.layoutHashString,
            "ModelVersionHash": model.versionHashString,
        ]
        assert(Set(baseMetadata.keys) == Self.ownMetadataKeys, "the store's own metadata keys and `ownMetadataKeys` differ")
        self.userMetadata = Lock(sidecar?.storeID == opened.storeID ? sidecar?.entries ?? [:] : [:])
        self.state = Lock(opened.state)
    }

    /// A query generation's snapshot of `store` (see FileStore+QueryGenerations.swift):
    /// `state` is the store's state at the pin, without its file and lock.
    init(snapshotOf store: FileStore, state: State) {
        self.path = store.path
        self.key = store.key
        self.url = store.url
        self.model = store.model
        self.options = store.options
        self.isSnapshot = true
        self.tombstoneColumns = store.tombstoneColumns
        self.links = store.links
        self.derivedLayout = store.derivedLayout
        self.rowShapes = store.rowShapes
        self.indexedColumns = store.indexedColumns
        self.uniqueConstraints = store.uniqueConstraints
        self.identifier = store.identifier
        self.recovery = store.recovery
        self.baseMetadata = store.baseMetadata
        self.userMetadata = Lock(store.userMetadata.withLock { $0 })
        self.modelRecordSize = store.modelRecordSize
        self.state = Lock(state)
    }

    deinit {
        // A snapshot has no file: closing it only marks it closed.
        try? close()
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Counts one more coordinator using the store. `false` when the store was let go of
    /// meanwhile (its last coordinator removed it, so it is closed or closing): the caller
    /// opens the store again. Atomic with `open`'s lookup and `detach()`: counted apart from
    /// them, a load that raced another coordinator's `remove` would get a store that remove
    /// then closed, and every save through it would fail.
    func attach() -> Bool {
        Self.openStores.withLock { stores in
            guard stores[key]?.store === self, !isClosed else { return false }
            attachments.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Counts one coordinator fewer. `true` when it was the last: the store has then left
    /// the table of open stores (no open returns it any more) and the caller closes it.
    func detach() -> Bool {
        Self.openStores.withLock { stores in
            guard attachments.subtract(1, ordering: .relaxed).newValue == 0 else { return false }
            if stores[key]?.store === self { stores[key] = nil }
            return true
        }
    }

    /// What this store's open recovered from, when the last process using the file ended
    /// without closing it; `nil` after a clean close.
    public let recovery: FileStoreRecovery?

    private static func logRecovery(_ recovery: FileStoreRecovery) {
        FileHandle.standardError.write(Data("[PersistenceKit] \(recovery)\n".utf8))
    }

    /// Number of compactions this store ran since it opened.
    public var compactionCount: Int { state.withLock { $0.compactions } }

    /// Whether the row tables are built (opening defers them to the first use that needs
    /// rows). For tests and diagnostics.
    var isMaterialized: Bool { state.withLock { $0.unapplied.isEmpty } }

    /// The size of the store's data in bytes: the file's size once closed. While the store is
    /// open at full durability the file may also hold up to ``reservation(forDataSize:)`` zero bytes after
    /// the data, space written ahead for the next saves.
    public var fileSize: Int { state.withLock { $0.image.count } }

    /// The bytes of live rows, as a compaction would write them.
    public var liveDataSize: Int {
        state.withLock { s in
            try? materialize(&s)
            return s.liveBytes
        }
    }

    /// Closes the store: marks the file as cleanly closed, releases the lock, and removes
    /// the `-lock` sidecar. Later calls on the store throw ``FileStoreError/Kind/closed``.
    /// Idempotent.
    public func close() throws {
        try state.withLock { s throws(FileStoreError) in
            guard !s.closed else { return }
            s.closed = true
            var cleanlyClosed = false
            // A read-only open holds no lock, and the `-lock` a writer may have made since
            // is that writer's.
            let ownsLockFile = s.lock != nil
            defer {
                s.file?.close()
                s.file = nil
                // The lock file goes only when the close record is on disk. Left behind, it
                // makes the next open recover as after a crash, which is right: without the
                // close record a strict open would report the file as truncated.
                if cleanlyClosed && ownsLockFile { try? options.fileSystem.remove(path + "-lock") }
                s.lock?.release()
                s.lock = nil
            }
            guard let file = s.file else { return }
            if s.endsCleanly && !s.dirtyTail && s.reserved == 0 {
                cleanlyClosed = true
                return
            }
            // The close record carries the live row counts (format 2), so that the next open
            // can answer an unfiltered count before it builds any row table.
            let counts = s.unapplied.isEmpty ? s.tables.mapValues { $0.rows.count } : s.closeCounts
            let payload = s.formatVersion >= 2 ? counts.map { FileStoreFormat.encodeCounts($0, numbering: s.numbering) } ?? [] : []
            let record = FileStoreFormat.record(.close, sequence: s.sequence, payload: payload, version: s.formatVersion)
            do {
                if s.dirtyTail { try file.truncate(to: s.image.count) }
                try file.write(record, at: s.image.count)
                // A cleanly closed file ends with its close record: drop the reserved zeros
                // (if this fails, -lock stays and the next open cuts them as after a crash).
                if s.reserved > 0 || s.dirtyTail { try file.truncate(to: s.image.count + record.count) }
                try file.sync()
                // A compaction's rename whose folder sync failed must be on disk before -lock
                // goes: a power cut could otherwise keep the unlink and lose the rename, and
                // bring back the old file without a close record or -lock.
                if s.folderUnsynced { try options.fileSystem.syncDirectory(directory) }
            } catch {
                throw FileStoreError(
                    .io, path: path,
                    "closing the store failed: \(error). Every save that returned is in the file; the next open "
                        + "recovers as after a crash.",
                    underlying: error as? StoreIOError)
            }
            cleanlyClosed = true
        }
        let listed = Self.openStores.withLock { stores -> FileStore? in
            let listed = stores[key]?.store  // released after the lock, as in `open`
            if listed === self || listed == nil { stores[key] = nil }
            return listed
        }
        withExtendedLifetime(listed) {}
    }

    /// Checks that the store is open and builds the row tables if opening deferred them.
    /// Every entry point that reads or writes rows calls this first.
    func prepare(_ s: inout State) throws(FileStoreError) {
        try checkOpen(s)
        try materialize(&s)
        // A store without rows has its derived lists at once (empty), and its saves keep
        // them, as a SQL store keeps a foreign-key index from the first insert; built on the
        // first read instead, the first predicate through a relationship paid for reading
        // every row of a large first save.
        if !s.derived.isReady, !derivedLayout.ends.isEmpty, s.tables.values.allSatisfy({ $0.rows.isEmpty }) {
            try s.derived.build(derivedLayout, tables: s.tables, image: s.image, numbering: s.numbering, path: path)
        }
    }

    func checkOpen(_ s: borrowing State) throws(FileStoreError) {
        if s.closed {
            throw FileStoreError(.closed, path: path, "the store was closed; open it again to use it.")
        }
    }
}

struct WeakFileStore {
    weak var store: FileStore?
}
