#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The store file's bytes, as the store reads them: rows are decoded straight from here.
///
/// When the file layer can map files (``PosixFileSystem`` can), the image is the file
/// itself, mapped read-only with room to grow: opening reads nothing up front and copies
/// nothing, and an append only moves ``count`` once its bytes are in the file. Otherwise
/// (file layers that inject faults in tests, say) it is a copy read at open and extended
/// with each appended record. Both behave the same to the store.
///
/// Invariant: bytes `0..<count` are exactly the file's first `count` bytes.
///
/// Known limit of the mapped form: a file cut shorter by another program while the store is
/// open makes reads of the lost pages crash the process (as with SQLite's memory-mapped
/// I/O). The `-lock` file keeps other PersistenceKit processes out; nothing keeps out a
/// program that ignores it.
struct StoreImage: Sendable {
    private var mapping: StoreFileMapping?
    private var heap: [UInt8]
    /// The number of valid bytes.
    private(set) var count: Int

    private init(mapping: StoreFileMapping?, heap: [UInt8], count: Int) {
        self.mapping = mapping
        self.heap = heap
        self.count = count
    }

    /// An image held in memory.
    init(bytes: [UInt8]) {
        self.init(mapping: nil, heap: bytes, count: bytes.count)
    }

    /// The first `size` bytes of `file`: mapped when the file layer can, read otherwise.
    init(file: any StoreFile, size: Int) throws {
        // A mapping that fails (address-space limits, file systems that cannot map) is not an
        // error: the file is read into memory instead.
        if let m = try? file.map(capacity: Self.capacity(for: size)) {
            self.init(mapping: m, heap: [], count: size)
        } else {
            self.init(bytes: try file.read(at: 0, count: size))
        }
    }

    /// Address space to reserve for a file of `size` bytes: room for it to double, and at
    /// least 64 MiB, so that appends rarely need a new mapping.
    private static func capacity(for size: Int) -> Int { max(size * 2, 64 << 20) }

    /// Calls `body` with the valid bytes.
    func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws(FileStoreError) -> T) throws(FileStoreError) -> T {
        if let mapping {
            return try body(UnsafeRawBufferPointer(start: mapping.base, count: count))
        }
        return try heap.withBytes(body)
    }

    /// Asks the kernel to map in every page of a mapped image at once, before a pass that
    /// reads them all (checking every checksum, building the row tables): one call instead
    /// of a page fault per few pages (measured: page faults were a third of opening a
    /// 7.6 MB store that way). Only the file's own pages: the rest of the mapping is not
    /// backed. No effect on an in-memory image, or where the kernel lacks the advice
    /// (before Linux 5.14).
    func prefetch() {
        #if os(Linux)
        guard let mapping, count > 0 else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: mapping.base), count, 22 /* MADV_POPULATE_READ */)
        #endif
    }

    /// Takes in `record`, which was just written to `file` at offset ``count``.
    ///
    /// Never fails: if a larger mapping cannot be made, the image becomes an in-memory copy
    /// (the record is already in the file, so the image must follow it).
    mutating func append(_ record: UnsafeRawBufferPointer, writtenTo file: any StoreFile) {
        guard let current = mapping else {
            heap.append(contentsOf: record)
            count = heap.count
            return
        }
        let newCount = count + record.count
        if newCount <= current.capacity {
            count = newCount
            return
        }
        if let bigger = try? file.map(capacity: Self.capacity(for: newCount)) {
            mapping = bigger
            count = newCount
            return
        }
        var copy = Array(UnsafeRawBufferPointer(start: current.base, count: count))
        copy.append(contentsOf: record)
        self = StoreImage(bytes: copy)
    }

    /// Drops the bytes from `size` on (the file was cut there).
    mutating func truncate(to size: Int) {
        precondition(size >= 0 && size <= count, "an image is only ever cut shorter")
        if mapping == nil { heap.removeSubrange(size...) }
        count = size
    }
}
