import Foundation

/// Appends little-endian values to a byte buffer.
///
/// The buffer is raw memory the writer owns (freed in `deinit`), grown ahead by doubling,
/// and written through its pointer with the used length kept in ``count``. Noncopyable, so
/// the buffer has one owner and writes need no copy-on-write check. (Measured with
/// callgrind: appending through `Array.append(contentsOf:)` cost ~60 instructions per
/// integer; through an `[UInt8]` with a uniqueness check per write, encoding was still 150
/// instructions per value, a twentieth of saving 100,000 rows.)
struct ByteWriter: ~Copyable {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes written so far.
    private(set) var count = 0
    /// The file's entity numbering when it is not the model's (see EntityNumbering.swift):
    /// `entity(_:)` writes stored indexes through it.
    var numbering: EntityNumbering?

    init(capacity: Int = 0) {
        self.capacity = max(capacity, 64)
        base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// A copy of the bytes written.
    var bytes: [UInt8] {
        [UInt8](UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Makes room for `n` more bytes.
    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if count + n > capacity { grow(to: count + n) }
    }

    @inline(never)
    private mutating func grow(to minimum: Int) {
        let newCapacity = max(minimum, capacity * 2)
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func u8(_ v: UInt8) {
        reserve(1)
        base.storeBytes(of: v, toByteOffset: count, as: UInt8.self)
        count += 1
    }
    @inline(__always) mutating func u16(_ v: UInt16) { append(v) }
    @inline(__always) mutating func u32(_ v: UInt32) { append(v) }
    @inline(__always) mutating func u64(_ v: UInt64) { append(v) }

    @inline(__always)
    private mutating func append<T: FixedWidthInteger>(_ v: T) {
        let n = MemoryLayout<T>.size
        reserve(n)
        base.storeBytes(of: v.littleEndian, toByteOffset: count, as: T.self)
        count += n
    }

    @inline(__always) mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    @inline(__always) mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }

    /// Appends raw bytes.
    mutating func raw(_ v: UnsafeRawBufferPointer) {
        guard v.count > 0 else { return }
        reserve(v.count)
        (base + count).copyMemory(from: v.baseAddress!, byteCount: v.count)
        count += v.count
    }

    mutating func raw(_ v: [UInt8]) { v.withUnsafeBytes { raw($0) } }
    mutating func raw(_ v: Data) { v.withUnsafeBytes { raw($0) } }

    mutating func raw(_ v: some Sequence<UInt8>) {
        for b in v { u8(b) }
    }

    mutating func string(_ s: String) {
        // A native string's bytes are read in place: `withUTF8` needs a `var` copy, a retain
        // and a release of the string's storage, which at a save is memory no longer in
        // cache (every string of 100,000 new objects).
        let written: Void? = s.utf8.withContiguousStorageIfAvailable { buf in
            u32(UInt32(buf.count))
            raw(UnsafeRawBufferPointer(buf))
        }
        if written != nil { return }
        var s = s
        s.withUTF8 { buf in
            u32(UInt32(buf.count))
            raw(UnsafeRawBufferPointer(buf))
        }
    }

    /// Overwrites a 32-bit value written earlier at `offset`.
    mutating func patch32(_ v: UInt32, at offset: Int) {
        precondition(offset >= 0 && offset + 4 <= count, "patching bytes that were written")
        base.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt32.self)
    }

    /// Overwrites a byte written earlier.
    mutating func patch8(_ v: UInt8, at offset: Int) {
        precondition(offset >= 0 && offset < count, "patching bytes that were written")
        base.storeBytes(of: v, toByteOffset: offset, as: UInt8.self)
    }

    /// Calls `body` with the bytes written.
    func withUnsafeBytes<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }
}

/// Reads little-endian values from a byte range, throwing a ``FileStoreError`` with the
/// absolute file offset when the data runs out or is malformed.
struct ByteReader {
    let base: UnsafeRawBufferPointer
    /// The file offset of `base[0]`.
    let fileOffset: Int
    var position: Int
    private(set) var end: Int
    let path: String
    /// The file's entity numbering when it is not the model's (see EntityNumbering.swift):
    /// `entity()` and decoded references give model indexes through it.
    let numbering: EntityNumbering?

    /// A reader of `range` of `base`. `numbering` is the file's, for a reader of records and
    /// rows (`nil` when the file numbers entities as the model does, or the bytes hold none).
    init(_ base: UnsafeRawBufferPointer, range: Range<Int>, fileOffset: Int = 0, path: String, numbering: EntityNumbering? = nil) {
        self.base = base
        self.position = range.lowerBound
        self.end = range.upperBound
        self.fileOffset = fileOffset
        self.path = path
        self.numbering = numbering
    }

    /// Points the reader at `range` of the same buffer.
    @inline(__always)
    mutating func move(to range: Range<Int>) {
        position = range.lowerBound
        end = range.upperBound
    }

    var offset: Int { fileOffset + position }
    var remaining: Int { end - position }

    func corrupt(_ reason: String) -> FileStoreError {
        FileStoreError(.corrupt, path: path, offset: offset, reason)
    }

    // Inlined, with the error built out of line: every value read goes through here, and
    // as a call it was the largest single cost of scanning rows (measured with callgrind).
    @inline(__always)
    mutating func need(_ n: Int) throws(FileStoreError) {
        guard n >= 0, position + n <= end else { throw endsEarly(n) }
    }

    @inline(never)
    private func endsEarly(_ n: Int) -> FileStoreError {
        corrupt("record data ends early (needed \(n) more bytes)")
    }

    @inline(__always)
    mutating func u8() throws(FileStoreError) -> UInt8 {
        try need(1)
        defer { position += 1 }
        return base[position]
    }

    @inline(__always)
    mutating func u16() throws(FileStoreError) -> UInt16 {
        try need(2)
        defer { position += 2 }
        return UInt16(base[position]) | UInt16(base[position + 1]) << 8
    }

    @inline(__always)
    mutating func u32() throws(FileStoreError) -> UInt32 {
        try need(4)
        defer { position += 4 }
        return base.loadUnaligned(fromByteOffset: position, as: UInt32.self).littleEndian
    }

    @inline(__always)
    mutating func u64() throws(FileStoreError) -> UInt64 {
        try need(8)
        defer { position += 8 }
        return base.loadUnaligned(fromByteOffset: position, as: UInt64.self).littleEndian
    }

    mutating func i32() throws(FileStoreError) -> Int32 { Int32(bitPattern: try u32()) }

    /// A row entry's header: u8 op, i32 entity, i64 primary key, i64 version (21 bytes).
    @inline(__always)
    mutating func entryHeader() throws(FileStoreError) -> (op: UInt8, entity: Int32, pk: Int64, version: Int64) {
        try need(21)
        defer { position += 21 }
        return (
            base[position],
            Int32(bitPattern: base.loadUnaligned(fromByteOffset: position + 1, as: UInt32.self).littleEndian),
            Int64(bitPattern: base.loadUnaligned(fromByteOffset: position + 5, as: UInt64.self).littleEndian),
            Int64(bitPattern: base.loadUnaligned(fromByteOffset: position + 13, as: UInt64.self).littleEndian)
        )
    }
    mutating func i64() throws(FileStoreError) -> Int64 { Int64(bitPattern: try u64()) }

    mutating func bytes(_ n: Int) throws(FileStoreError) -> UnsafeRawBufferPointer {
        try need(n)
        defer { position += n }
        return UnsafeRawBufferPointer(rebasing: base[position..<(position + n)])
    }

    /// A u32 length and that many bytes of UTF-8; invalid UTF-8 is damage.
    ///
    /// Decoded with the standard library's specialized UTF-8 fast path, then checked to be
    /// the very bytes stored: decoding repairs invalid input, and a repaired string never
    /// equals its input. (`String(validating:as:)` took the generic path, with run-time
    /// metadata lookups for every string read.)
    ///
    /// ASCII needs no check: decoding cannot repair it. (Most stored strings are ASCII, and
    /// the check after decoding was a fifth of reading one; measured with callgrind.)
    mutating func string() throws(FileStoreError) -> String {
        let n = Int(try u32())
        let raw = try bytes(n).assumingMemoryBound(to: UInt8.self)
        let s = String(decoding: raw, as: UTF8.self)
        if Self.isASCII(UnsafeRawBufferPointer(raw)) { return s }
        let unchanged =
            s.utf8.withContiguousStorageIfAvailable { decoded in
                decoded.count == n && (n == 0 || memcmp(decoded.baseAddress!, raw.baseAddress!, n) == 0)
            } ?? s.utf8.elementsEqual(raw)
        guard unchanged else { throw corrupt("a string is not valid UTF-8") }
        return s
    }

    /// Whether every byte is below 0x80, tested eight bytes at a time.
    @inline(__always)
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        var high: UInt64 = 0
        while i + 8 <= bytes.count {
            high |= bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < bytes.count {
            high |= UInt64(bytes[i])
            i += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    @inline(__always)
    mutating func skip(_ n: Int) throws(FileStoreError) {
        try need(n)
        position += n
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps a typed ``FileStoreError`` (the standard one rethrows
    /// untyped errors).
    func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws(FileStoreError) -> T) throws(FileStoreError) -> T {
        try withUnsafeBytes { buf in Result { () throws(FileStoreError) -> T in try body(buf) } }.get()
    }
}
