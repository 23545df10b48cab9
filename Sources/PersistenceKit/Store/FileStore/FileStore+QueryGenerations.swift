import Foundation

// Query generations. A pinned generation reads the store as it was when it was pinned. The
// file store gets one almost for free: the file is only ever appended to (a compaction
// writes a new file and leaves the old one's bytes to whoever still maps them), and every
// row table, index and list of the in-memory state is a copy-on-write value pointing into
// that file. A snapshot is a copy of the state, without the file handle and lock, inside a
// read-only `FileStore` object that runs the ordinary read paths on it.
//
// Cost: pinning copies no rows (a few retains). While a snapshot lives, the store's next
// commit copies each row table (and index, and unique index) it changes before changing it,
// once per pinned generation: O(rows of each entity that commit writes). The snapshot also
// keeps the image it read alive (the mapping, or the old file after a compaction).
extension FileStore {
    /// See ``PersistentStore/makeQueryGenerationSnapshot()``. The snapshot shares this
    /// store's tables until a commit copies the ones it changes (see above).
    ///
    /// - Throws: ``FileStoreError`` — the store is closed or damaged.
    public func makeQueryGenerationSnapshot() throws -> any PersistentStore {
        let copy = try state.withLock { s throws(FileStoreError) -> State in
            try prepare(&s)
            var copy = s
            // The snapshot never writes: without a file and lock, closing it (when it is
            // released) touches neither.
            copy.file = nil
            copy.lock = nil
            return copy
        }
        return FileStore(snapshotOf: self, state: copy)
    }
}
