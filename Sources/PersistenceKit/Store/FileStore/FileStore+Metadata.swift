import Foundation

extension FileStore {
    /// The metadata of the file store at `url`, read from its header without opening it:
    /// ``NSStoreTypeKey``, ``NSStoreUUIDKey`` and ``PersistenceKitModelLayoutHashKey``, and
    /// the entries an application set (``FileStore/setMetadata(_:)``).
    /// Works whether or not the store is open, in this process or another.
    ///
    /// - Throws: ``FileStoreError`` — `.io` when the file cannot be read (missing
    ///   included); `.notAStore`, `.truncated`, `.newerFormatVersion` or `.corrupt` when its
    ///   header is not a valid store header.
    public static func metadata(at url: URL) throws(FileStoreError) -> [String: String] {
        guard url.isFileURL else {
            throw FileStoreError(.io, path: url.absoluteString, "a file store needs a file URL, not \(url.absoluteString).")
        }
        let path = url.standardizedFileURL.path
        let header = try readHeader(at: path)
        let base = [
            NSStoreTypeKey: NSFileStoreType,
            NSStoreUUIDKey: header.storeID,
            PersistenceKitModelLayoutHashKey: NSManagedObjectModel.hex(effectiveLayoutHash(header: header.modelHash, path: path)),
        ]
        // The application's entries (FileStore+UserMetadata.swift), when they are this store's.
        guard let sidecar = try readUserMetadata(path: path), sidecar.storeID == header.storeID else { return base }
        return base.merging(sidecar.entries) { mine, _ in mine }
    }

    /// The header of the store file at `path`, read without opening the store.
    static func readHeader(at path: String) throws(FileStoreError) -> FileStoreFormat.Header {
        let bytes: [UInt8] = try io(path, "reading the store's header") {
            let file = try PosixFileSystem().openForReading(path)
            defer { file.close() }
            return try file.read(at: 0, count: FileStoreFormat.headerSize)
        }
        do {
            return try bytes.withUnsafeBytes { try FileStoreFormat.readHeader($0, path: path) }
        } catch let error as FileStoreError {
            throw error
        } catch {
            throw FileStoreError(.io, path: path, "reading the store's header failed: \(error)")
        }
    }
}
