import Foundation

// The synced prefix: how much of the store file a `normal`-durability session may rely on.
//
// At `normal` durability saves are not synced, so after a power cut the records a session
// appended may have reached the disk in any order — one damaged, a later one intact. Each
// such session first writes into `-lock` the offset where it starts appending (everything
// before it was synced: by the clean close, the recovery cut, the compaction or the
// creation that came before), and syncs `-lock`. Recovery after a crash then cuts the file
// at the first damage at or past that offset, intact records after it included: they were
// never synced, and keeping a later record without an earlier one would not be a state any
// sequence of saves produced. Damage before the offset, or with no offset recorded (a
// `full`-durability session, whose every save was synced), is reported as before.
//
// `-lock` holds 20 bytes then: the magic `PKSYNCED`, the offset (UInt64, little-endian),
// and a CRC-32 of those 16 bytes. An empty or unreadable `-lock` records nothing.
extension FileStore {
    static let syncedPrefixMagic: [UInt8] = Array("PKSYNCED".utf8)

    /// The synced prefix a crashed `normal` session recorded in its lock file, if any.
    static func recordedSyncedPrefix(in lockFile: any StoreFile) -> Int? {
        (try? lockFile.read(at: 0, count: 20)).flatMap(syncedPrefix(in:))
    }

    /// The synced prefix recorded in `bytes`, the start of a lock file.
    static func syncedPrefix(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 20, Array(bytes[0..<8]) == syncedPrefixMagic else { return nil }
        let stored = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 16, as: UInt32.self).littleEndian }
        guard stored == bytes.withUnsafeBytes({ CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<16])) }) else { return nil }
        let offset = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian }
        return offset <= UInt64(Int.max) ? Int(offset) : nil
    }

    /// Records `offset` as the synced prefix in `lockFile`, synced.
    static func recordSyncedPrefix(_ offset: Int, in lockFile: any StoreFile) throws {
        var bytes = syncedPrefixMagic
        withUnsafeBytes(of: UInt64(offset).littleEndian) { bytes.append(contentsOf: $0) }
        let crc = bytes.withUnsafeBytes { CRC32.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { bytes.append(contentsOf: $0) }
        try lockFile.write(bytes, at: 0)
        try lockFile.sync()
    }

    /// Forgets the recorded synced prefix (an empty lock file), synced: once recovery has
    /// used it, and before a compaction replaces the file its offsets are about.
    static func clearSyncedPrefix(in lockFile: any StoreFile) throws {
        try lockFile.truncate(to: 0)
        try lockFile.sync()
    }

    /// What a session does before its first write, and before any write after a failed
    /// folder sync: at `normal` durability, records where its unsynced appends start; and
    /// syncs the folder while its entries may not be on disk (see `State.folderUnsynced`).
    /// Throws before anything of the write is done.
    func prepareToAppend(_ s: inout State) throws(FileStoreError) {
        if !s.syncedPrefixOnDisk && options.durability == .normal, let lock = s.lock {
            // Before the first append everything in the file is synced; after a compaction
            // that failed having cleared `-lock`, the appends made before it still are not.
            let prefix = s.syncedPrefix ?? s.image.count
            try Self.io(path, "recording the synced part of the store in its lock file") {
                try Self.recordSyncedPrefix(prefix, in: lock.file)
            }
            s.syncedPrefix = prefix
            s.syncedPrefixOnDisk = true
        }
        if s.folderUnsynced {
            try Self.io(path, "syncing the store's folder") { try options.fileSystem.syncDirectory(directory) }
            s.folderUnsynced = false
        }
    }
}
