import Foundation
import Testing
@testable import PersistenceKit

// Helpers shared by the FileStore crash, fault-injection, corruption and round-trip suites.

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

    /// Start offsets of the records of a store file (header excluded), and the file size.
    static func recordOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var offset = 64
        while offset + 24 <= bytes.count {
            offsets.append(offset)
            offset += 24 + Int(u32(bytes, at: offset + 8))
        }
        return offsets
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
