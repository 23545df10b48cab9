/// What opening a file store recovered from: the last process using it ended without
/// closing it (a crash, a kill, a power cut), and the open cut off what that process had not
/// finished writing.
///
/// Recovery never cuts an acknowledged save: a `save()` returns only once its record is on
/// disk whole (at `full` durability), and what it cuts is an unfinished record, the space a
/// store reserves ahead of its saves, or, after a `normal`-durability crash, appends that
/// were never synced. Read it from ``FileStore/recovery`` after loading; the open also writes
/// one line about it to standard error.
public struct FileStoreRecovery: Sendable, Equatable, CustomStringConvertible {
    /// The store file's path.
    public let path: String
    /// The file's size in bytes when the open found it.
    public let foundBytes: Int
    /// The bytes kept: the file's size after the cut (all of it when nothing was cut).
    public let keptBytes: Int
    /// Records (transactions or checkpoints) begun after the last one kept, which the cut
    /// discarded; 0 when the discarded bytes held only reserved space.
    public let discardedRecords: Int

    /// The bytes the cut discarded.
    public var discardedBytes: Int { foundBytes - keptBytes }

    /// A sentence saying what was recovered.
    public var description: String {
        discardedBytes == 0
            ? "recovered \(path) after its last user ended without closing it; nothing was cut"
            : "recovered \(path) after its last user ended without closing it: kept \(keptBytes) bytes, cut "
                + "\(discardedBytes) bytes (\(discardedRecords) unfinished or unsynced record(s), never an acknowledged save)"
    }
}

extension FileStore {
    /// Counts the records that begin in `buf` from `offset` on: a record header with the
    /// record marker, each skipped by its length while it fits.
    static func recordsBegun(in buf: UnsafeRawBufferPointer, from offset: Int) -> Int {
        var count = 0
        var at = offset
        while at + FileStoreFormat.recordHeaderSize <= buf.count,
            buf.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian == FileStoreFormat.recordMagic
        {
            count += 1
            let length = Int(buf.loadUnaligned(fromByteOffset: at + 8, as: UInt32.self).littleEndian)
            at += FileStoreFormat.recordOverhead + length
        }
        return count
    }
}
