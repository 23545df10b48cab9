import Foundation

/// What ``FileStore/inspect(at:)`` found in a store file: its header, its records by kind,
/// whether every record's checksum holds, and where the first damage is.
///
/// Reading a store this way changes nothing, takes no lock and needs no model: it is what
/// to reach for when a store will not open (the `pkstore` tool prints it).
public struct FileStoreInspection: Sendable, CustomStringConvertible {
    /// The store file's path.
    public var path: String
    /// The file's size in bytes.
    public var fileSize: Int
    /// The format version in the header.
    public var formatVersion: UInt32
    /// The store's identifier (the UUID in object ID URIs).
    public var storeIdentifier: String
    /// The layout hash in the header (hex).
    public var headerLayoutHash: String
    /// The layout the rows are read with (hex): the header's, or the one a migration
    /// recorded beside the file (`Name.store-layout`).
    public var layoutHash: String
    /// Records by kind.
    public var transactions = 0, checkpoints = 0, closes = 0, historyDeletions = 0
    /// The sequence number of the last record.
    public var lastSequence: UInt64 = 0
    /// Whether the last record is a clean close (the store was closed, not left by a crash).
    public var endsWithClose = false
    /// Whether `-lock` exists: the store is open, or its last user ended without closing it
    /// (the next open recovers).
    public var lockFilePresent = false
    /// Bytes after the last whole record: zeros a store reserves while open, or what a crash
    /// left (an open recovers by cutting them).
    public var trailingBytes = 0
    /// The first damage found: its offset and what is wrong; `nil` when every record's
    /// marker, length and checksum hold.
    public var damage: (offset: Int, problem: String)?

    /// A report, one fact per line.
    public var description: String {
        var lines = [
            "store          \(path)",
            "size           \(fileSize) bytes",
            "format         version \(formatVersion)",
            "identifier     \(storeIdentifier)",
            "model layout   \(layoutHash)" + (layoutHash == headerLayoutHash ? "" : " (header \(headerLayoutHash), migrated without a rewrite)"),
            "records        \(transactions) transactions, \(checkpoints) checkpoints, \(closes) closes, \(historyDeletions) history deletions; last sequence \(lastSequence)",
            "closed         " + (endsWithClose && !lockFilePresent ? "cleanly" : lockFilePresent ? "no: -lock is present (open now, or left by a crash; the next open recovers)" : "no close record at the end (the next open recovers)"),
        ]
        if trailingBytes > 0 { lines.append("trailing       \(trailingBytes) bytes after the last whole record") }
        if let damage {
            lines.append("checksums      DAMAGED at offset \(damage.offset): \(damage.problem)")
        } else {
            lines.append("checksums      every record verified")
        }
        return lines.joined(separator: "\n")
    }
}

extension FileStore {
    /// Reads the store file at `url` record by record, verifying every record's marker,
    /// length and checksum, without opening the store: no lock, no recovery, no writes, no
    /// model. Safe on a store another process has open (it sees the records written so far).
    ///
    /// - Throws: ``FileStoreError`` when the file cannot be read or its header is not a valid
    ///   store header (`.notAStore`, `.truncated`, `.newerFormatVersion`, `.corrupt`). Damage
    ///   after the header is reported in the result, not thrown.
    /// - Complexity: reads the whole file once.
    public static func inspect(at url: URL) throws(FileStoreError) -> FileStoreInspection {
        let path = resolvedPath(of: url)
        let header = try readHeader(at: path)
        let bytes: Data
        do { bytes = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) } catch {
            throw FileStoreError(.io, path: path, "reading the store failed: \(error)")
        }
        var report = FileStoreInspection(
            path: path, fileSize: bytes.count, formatVersion: header.version, storeIdentifier: header.storeID,
            headerLayoutHash: NSManagedObjectModel.hex(header.modelHash),
            layoutHash: NSManagedObjectModel.hex(effectiveLayoutHash(header: header.modelHash, path: path)))
        report.lockFilePresent = FileManager.default.fileExists(atPath: path + "-lock")
        bytes.withUnsafeBytes { buf in
            var offset = FileStoreFormat.headerSize
            func u32(_ at: Int) -> UInt32 { buf.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian }
            while offset < buf.count {
                let rest = buf.count - offset
                if buf[offset...].allSatisfy({ $0 == 0 }) {
                    report.trailingBytes = rest
                    return
                }
                guard rest >= FileStoreFormat.recordOverhead, u32(offset) == FileStoreFormat.recordMagic else {
                    if rest < FileStoreFormat.recordOverhead || u32(offset) == FileStoreFormat.recordMagic {
                        report.trailingBytes = rest
                    } else {
                        report.damage = (offset, "no record marker where a record should start")
                    }
                    return
                }
                let kind = buf[offset + 4]
                let length = Int(u32(offset + 8))
                let end = offset + FileStoreFormat.recordHeaderSize + length
                guard end + 4 <= buf.count else {
                    report.trailingBytes = rest  // a record cut short: what a crash mid-append leaves
                    return
                }
                let stored = u32(end)
                let computed = FileStoreFormat.recordChecksum(UnsafeRawBufferPointer(rebasing: buf[offset..<end]), version: header.version)
                guard stored == computed else {
                    report.damage = (offset, "the record's checksum does not match its bytes")
                    return
                }
                report.lastSequence = buf.loadUnaligned(fromByteOffset: offset + 12, as: UInt64.self).littleEndian
                report.endsWithClose = false
                switch FileStoreFormat.RecordKind(rawValue: kind) {
                case .transaction: report.transactions += 1
                case .checkpoint: report.checkpoints += 1
                case .close:
                    report.closes += 1
                    report.endsWithClose = true
                case .historyDeletion: report.historyDeletions += 1
                case .model: break
                case nil:
                    report.damage = (offset, "record kind \(kind) is not one this format has")
                    return
                }
                offset = end + 4
            }
        }
        return report
    }
}

extension FileStore {
    /// The number of saved objects of the entity named `name` in this store (rows of that
    /// entity itself), or `nil` when the store's model has no such entity.
    /// - Throws: ``FileStoreError`` when the rows cannot be read (closed, damaged).
    public func objectCount(ofEntityNamed name: String) throws -> Int? {
        guard let entity = model.entitiesByName[name] else { return nil }
        return try countRows(entity: entity.index, filter: nil)
    }
}
