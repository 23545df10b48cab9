import Foundation
import Testing
@testable import PersistenceKit

// Support shared by the file store's test suites (and by the context, fetch and to-many
// suites that open a file store).

enum FSSupport {
    /// A container whose one store is the file store at `url` (optionally with a durability).
    static func container(
        at url: URL, model: NSManagedObjectModel? = nil, durability: String? = nil, name: String = #function
    ) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try model ?? Fixtures.model())
        let description = NSPersistentStoreDescription(url: url)
        if let durability { description.setOption(durability, forKey: FileStore.durabilityOptionKey) }
        container.persistentStoreDescriptions = [description]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// A coordinator with `store` added, and a private-queue context on it.
    static func context(for store: FileStore, model: NSManagedObjectModel) throws -> NSManagedObjectContext {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(store)
        return NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
    }

    /// Every row of every entity of `store`, as it reads back (derived ends filled in).
    static func allRows(_ store: any PersistentStore, _ model: NSManagedObjectModel) throws -> [StoreRowID: StoreRow] {
        var rows: [StoreRowID: StoreRow] = [:]
        for e in model.entities {
            for r in try store.fetchRows(entity: e.index, filter: nil) { rows[r.id] = r }
        }
        return rows
    }

    /// The file stores of a container.
    static func fileStores(_ container: NSPersistentContainer) -> [FileStore] {
        container.persistentStoreCoordinator.persistentStores.compactMap { $0 as? FileStore }
    }

    /// The file store's error inside the `CoreDataError` that loading a store throws
    /// (`.persistentStoreOpen`, the store's error its `underlying`); records an issue when
    /// `load` throws anything else or nothing.
    static func loadError(
        sourceLocation: SourceLocation = #_sourceLocation, _ load: () throws -> Void
    ) -> FileStoreError? {
        let error = #expect(throws: CoreDataError.self, sourceLocation: sourceLocation) { try load() }
        #expect(error?.code == .persistentStoreOpen, sourceLocation: sourceLocation)
        return error?.underlying as? FileStoreError
    }

    /// Closes every file store of a container (cleanly: close record, lock file removed).
    static func close(_ container: NSPersistentContainer) throws {
        for store in fileStores(container) { try store.close() }
    }

    /// Expects another process opening the store at `path` to get `lockedByAnotherProcess`
    /// (naming that path).
    static func expectLockedInAnotherProcess(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        await #expect(processExitsWith: .exitCode(42), sourceLocation: sourceLocation) { [path = path as String] in
            do {
                let store = try FileStore.open(at: URL(fileURLWithPath: path), model: try Fixtures.model())
                try store.close()
                exit(1)
            } catch let e as FileStoreError {
                exit(e.kind == .lockedByAnotherProcess && e.path == URL(fileURLWithPath: path).standardizedFileURL.path ? 42 : 2)
            }
        }
    }

    /// The path a `FileStoreError` names for `url`.
    static func path(_ url: URL) -> String { url.standardizedFileURL.path }

    static func bytes(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }

    static func write(_ bytes: [UInt8], to url: URL) throws { try Data(bytes).write(to: url) }

    /// Start offsets of the records of a store file (header and model record excluded).
    static func recordOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var offset = firstRecord(bytes)
        while offset + 24 <= bytes.count {
            offsets.append(offset)
            offset += 24 + Int(u32(bytes, at: offset + 8))
        }
        return offsets
    }

    /// Makes a store file's bytes those of format `version` (below 5): drops the model record
    /// a version 5 file starts with, sets the version and fixes the header checksum (record
    /// checksums stay: the caller fixes them for version 1).
    static func downgrade(_ bytes: inout [UInt8], to version: UInt32) {
        let first = firstRecord(bytes)
        if first > 64 { bytes.removeSubrange(64..<first) }
        putU32(version, into: &bytes, at: 8)
        fixHeaderCRC(&bytes)
    }

    /// Where the records after the header and the model record (format 5) begin.
    static func firstRecord(_ bytes: [UInt8]) -> Int {
        guard bytes.count >= 64 + 24, u32(bytes, at: 64) == 0x4352_4B50, bytes[68] == FileStoreFormat.RecordKind.model.rawValue else { return 64 }
        return 64 + 24 + Int(u32(bytes, at: 64 + 8))
    }

    static func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    static func putU32(_ value: UInt32, into bytes: inout [UInt8], at offset: Int) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }

    /// CRC-32 (IEEE 802.3, reflected, as zlib), computed independently of the library.
    static func crc32(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// Rewrites the header checksum (bytes 60..<64) after a header edit.
    static func fixHeaderCRC(_ bytes: inout [UInt8]) {
        putU32(crc32(bytes[0..<60]), into: &bytes, at: 60)
    }

    /// Rewrites the checksum of the record at `offset` after a payload edit, with the
    /// checksum of the file's format version (header bytes 8..<12): CRC-32 for version 1,
    /// `RecordChecksum` from version 2 (whose answers `RecordChecksumTests` pins).
    static func fixRecordCRC(_ bytes: inout [UInt8], recordAt offset: Int) {
        let length = Int(u32(bytes, at: offset + 8))
        let crcAt = offset + 20 + length
        let sum = u32(bytes, at: 8) >= 2
            ? Array(bytes[offset..<crcAt]).withUnsafeBytes { RecordChecksum.checksum($0) }
            : crc32(bytes[offset..<crcAt])
        putU32(sum, into: &bytes, at: crcAt)
    }

    /// Inserts books with these titles (pages: the title's length) and saves once.
    static func insertBooks(_ context: NSManagedObjectContext, _ titles: [String]) throws {
        try context.performAndWait {
            for t in titles {
                let b = Book(context: context)
                b.title = t
                b.pages = Int64(t.count)
            }
            try context.save()
        }
    }

    /// Every Book in the store, as (title, pages), read through a fresh context.
    static func books(_ container: NSPersistentContainer) throws -> [(title: String, pages: Int64)] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            try context.fetch(Book.fetchRequest()).map { ($0.title, $0.pages) }
        }
    }
}

/// A seedable generator (SplitMix64), so failures can be replayed from the seed in the log.
struct FSRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A fresh folder per test, removed at the end.
struct TemporaryFolder: ~Copyable {
    let url: URL
    init(_ name: String = #function) throws {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("PersistenceKitTests-\(safe)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    var storeURL: URL { url.appendingPathComponent("store.pkstore") }
}

// MARK: - A store behind the fault-injecting file layer

extension FSSupport {
    /// A store opened through the faulty file layer, with a context on it.
    struct Rig {
        let url: URL
        let plan = FaultPlan()
        let model: NSManagedObjectModel
        let store: FileStore
        let context: NSManagedObjectContext

        init(_ url: URL, compactionThreshold: Int = 64 << 10, durability: FileStore.Durability = .full) throws {
            self.url = url
            model = try Fixtures.model()
            store = try FileStore.open(
                at: url, model: model,
                options: FileStore.Options(
                    durability: durability, fileSystem: FaultyFileSystem(plan: plan), compactionThreshold: compactionThreshold))
            context = try FSSupport.context(for: store, model: model)
        }

        /// Inserts books with these titles and saves.
        func insert(_ titles: [String]) throws {
            try FSSupport.insertBooks(context, titles)
        }

        func save() throws { try context.performAndWait { try context.save() } }

        /// The titles the store holds, read through a fresh coordinator and context.
        func storedTitles() throws -> [String] {
            try FSSupport.titles(in: store, model: model)
        }
    }

    static func titles(in store: FileStore, model: NSManagedObjectModel) throws -> [String] {
        let context = try FSSupport.context(for: store, model: model)
        return try context.performAndWait { try context.fetch(Book.fetchRequest()).map(\.title).sorted() }
    }

    /// Opens the store again with the real file system (strictly, when it was closed cleanly)
    /// and returns its titles.
    static func reopenedTitles(_ url: URL) throws -> [String] {
        let model = try Fixtures.model()
        let store = try FileStore.open(at: url, model: model)
        defer { try? store.close() }
        return try titles(in: store, model: model)
    }

    /// Checks that a failed save came out as a typed error carrying the store's I/O error.
    static func expectTypedSaveFailure(
        _ error: any Error, errno expected: Int32, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let error = error as? CoreDataError else {
            Issue.record("the save threw \(type(of: error)), not CoreDataError: \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == .persistentStoreSave, sourceLocation: sourceLocation)
        // The store's typed error must travel with the save error (CoreDataError.underlying).
        let cause = error.underlying as? FileStoreError
        #expect(
            cause?.kind == .io && cause?.underlying?.code == expected,
            "the save error should carry the store's FileStoreError (.io, errno \(expected)) as underlying: \(error)",
            sourceLocation: sourceLocation)
    }

    static func diskSize(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? -1
    }

    /// Inserts `count` books and rewrites each title `rewrites` times, one save per rewrite.
    static func churn(_ rig: Rig, books count: Int, rewrites: Int) throws -> [String] {
        try rig.context.performAndWait {
            var books: [Book] = []
            for i in 0..<count {
                let b = Book(context: rig.context)
                b.title = "book \(i)"
                b.pages = Int64(i)
                books.append(b)
            }
            try rig.context.save()
            for r in 0..<rewrites {
                for (i, b) in books.enumerated() { b.title = "book \(i) rev \(r) " + String(repeating: "x", count: 40) }
                try rig.context.save()
            }
            return books.map(\.title).sorted()
        }
    }

    /// Saves one book per title, one save each, through a context on `store`.
    static func saveEach(_ store: FileStore, _ model: NSManagedObjectModel, _ titles: [String]) throws {
        let context = try FSSupport.context(for: store, model: model)
        try context.performAndWait {
            for t in titles {
                Book(context: context).title = t
                try context.save()
            }
        }
    }
}

// MARK: - One entity with indexed and unindexed copies of awkward values

/// One object with an indexed and an unindexed copy of attributes whose values compare
/// oddly (NaN doubles and dates, relative URLs; also a decimal that may be NaN), so a fetch
/// through the index can be checked against a scan.
final class FSItem: NSManagedObject {
    @Attribute var key: Int64 = 0
    @Attribute(.indexed) var iDouble: Double = 0
    @Attribute(.indexed) var iDate: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var pDate: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var amount: Decimal?
    @Attribute(.indexed) var iURL: URL?
    @Attribute var pURL: URL?
}

extension FSSupport {
    /// A model of ``FSItem`` alone.
    static func itemModel() throws -> NSManagedObjectModel { try NSManagedObjectModel(managedObjectClasses: [FSItem.self]) }

    /// Opens the store at `url`, runs `body` on a context, and closes the store.
    static func withItemStore<T>(_ url: URL, _ body: (NSManagedObjectContext) throws -> T) throws -> T {
        let container = try FSSupport.container(at: url, model: try itemModel())
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        return try context.performAndWait { try body(context) }
    }

    static func itemKeys(_ context: NSManagedObjectContext, _ predicate: Predicate<FSItem>) throws -> [Int64] {
        let request = FSItem.fetchRequest()
        request.predicate = predicate
        return try context.fetch(request).map(\.key).sorted()
    }
}
