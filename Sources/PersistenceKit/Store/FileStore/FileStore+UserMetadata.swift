import Foundation

// Metadata an application keeps in a store (`NSPersistentStoreCoordinator.setMetadata(_:for:)`)
// lives beside the store file, in `Name.store-metadata`: magic `PKMETA01`, the store's
// identifier, the number of entries, each key and value as a length-prefixed UTF-8 string,
// in key order, then a CRC-32 of everything before it. It is written whole, synced and
// renamed over the old one (then the folder is synced), so it is always one version or the
// other; the store file itself is not touched, so older builds, which ignore the sidecar,
// still open the store. A sidecar naming another identifier (left by a store deleted and
// made again without `destroy`) is ignored.
extension FileStore {
    static let userMetadataSuffix = "-metadata"
    /// The metadata keys the store sets itself (``baseMetadata``), which an application's
    /// entries never replace.
    static let ownMetadataKeys: Set<String> = [NSStoreTypeKey, NSStoreUUIDKey, PersistenceKitModelLayoutHashKey, "ModelVersionHash"]
    private static let userMetadataMagic: [UInt8] = Array("PKMETA01".utf8)

    /// The metadata entries the sidecar beside `path` holds, with the identifier of the store
    /// they belong to (use them only for that store); nil when there is no sidecar.
    ///
    /// - Throws: ``FileStoreError`` `.corrupt` when the sidecar is damaged (delete it to
    ///   open the store without its metadata), `.io` when it cannot be read.
    static func readUserMetadata(path: String) throws(FileStoreError) -> (storeID: String, entries: [String: String])? {
        let sidecar = path + userMetadataSuffix
        guard FileManager.default.fileExists(atPath: sidecar) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: sidecar))
        } catch {
            throw FileStoreError(.io, path: sidecar, "reading the store's metadata failed: \(error)")
        }
        let decoded = [UInt8](data).withUnsafeBytes { buf in
            Result { () throws(FileStoreError) in try decodeUserMetadata(buf, sidecar: sidecar) }
        }
        return try decoded.get()
    }

    /// The identifier and entries of a metadata sidecar's bytes (see the comment above).
    private static func decodeUserMetadata(
        _ buf: UnsafeRawBufferPointer, sidecar: String
    ) throws(FileStoreError) -> (storeID: String, entries: [String: String]) {
        let damaged = FileStoreError(
            .corrupt, path: sidecar, "the store's metadata file is damaged; delete it to open the store without the metadata it held.")
        guard buf.count >= userMetadataMagic.count + 8, buf.prefix(8).elementsEqual(userMetadataMagic) else { throw damaged }
        let body = buf.count - 4
        let stored = buf.loadUnaligned(fromByteOffset: body, as: UInt32.self).littleEndian
        guard stored == CRC32.checksum(UnsafeRawBufferPointer(rebasing: buf[0..<body])) else { throw damaged }
        var r = ByteReader(buf, range: 8..<body, path: sidecar)
        let storeID = try r.string()
        var entries: [String: String] = [:]
        let count = try r.u32()
        for _ in 0..<count {
            let key = try r.string()
            entries[key] = try r.string()
        }
        return (storeID, entries)
    }

    /// Writes `entries` as the metadata of the store `storeID` at `path` (no sidecar when
    /// empty).
    static func writeUserMetadata(_ entries: [String: String], path: String, storeID: String, fs: any StoreFileSystem) throws(FileStoreError) {
        let sidecar = path + userMetadataSuffix
        let directory = (path as NSString).deletingLastPathComponent
        if entries.isEmpty {
            try io(sidecar, "removing the store's metadata") {
                try fs.remove(sidecar)
                try fs.syncDirectory(directory)
            }
            return
        }
        var w = ByteWriter(capacity: 256)
        w.raw(userMetadataMagic)
        w.string(storeID)
        w.u32(UInt32(entries.count))
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            w.string(key)
            w.string(value)
        }
        let crc = w.withUnsafeBytes { CRC32.checksum($0) }
        w.u32(crc)
        try writeWhole(w.bytes, to: sidecar, through: sidecar + "-new", in: directory, fs: fs, "writing the store's metadata")
    }

    /// See ``PersistentStore``. Replaces the application's metadata entries with those of
    /// `metadata` whose keys the store does not set itself (``NSStoreUUIDKey``, …, which keep
    /// their values), written to the metadata file before it returns.
    ///
    /// - Throws: ``FileStoreError`` `.readOnly` for a store opened read-only, `.closed`, `.io`.
    public func setMetadata(_ metadata: [String: String]) throws { try writeMetadata(metadata) }

    /// ``setMetadata(_:)`` with its typed error.
    func writeMetadata(_ metadata: [String: String]) throws(FileStoreError) {
        if options.readOnly || isSnapshot { throw Self.readOnlyError(path) }
        let entries = metadata.filter { !Self.ownMetadataKeys.contains($0.key) }
        // Under the store's lock, the copy too: two calls at once leave the file and the copy
        // with the same call's entries.
        try state.withLock { s throws(FileStoreError) in
            guard !s.closed else { throw FileStoreError(.closed, path: path, "the store is closed; open it again to set its metadata.") }
            try Self.writeUserMetadata(entries, path: path, storeID: identifier, fs: options.fileSystem)
            userMetadata.withLock { $0 = entries }
        }
    }

    /// Sets the application's metadata entries of the file store at `url` (see
    /// ``setMetadata(_:)``) without opening it for use: through the store object when it is
    /// open in this process, else under the store's lock, as ``destroy(at:)`` takes it.
    ///
    /// - Throws: ``FileStoreError`` `.lockedByAnotherProcess`, `.io` (no store at `url`
    ///   included), or a header error.
    public static func setMetadata(_ metadata: [String: String], at url: URL) throws(FileStoreError) {
        guard url.isFileURL else {
            throw FileStoreError(.io, path: url.absoluteString, "a file store needs a file URL, not \(url.absoluteString).")
        }
        let path = resolvedPath(of: url)
        let key = StoreLock.key(forStoreAt: path)
        var found: FileStore?
        defer { withExtendedLifetime(found) {} }  // released after the table's lock, as in `open`
        try openStores.withLock { stores throws(FileStoreError) in
            found = stores[key]?.store
            if let existing = found, !existing.isClosed {
                try existing.writeMetadata(metadata)
                return
            }
            let fs = PosixFileSystem()
            let (lock, crashed) = try lockClosedStore(path: path, key: key, fs: fs)
            defer {
                // A `-lock` this call made goes again; one a crashed session left stays for
                // the recovery the next open runs.
                if !crashed { try? fs.remove(path + "-lock") }
                lock.release()
            }
            let header = try readHeader(at: path)
            try writeUserMetadata(metadata.filter { !ownMetadataKeys.contains($0.key) }, path: path, storeID: header.storeID, fs: fs)
        }
    }
}
