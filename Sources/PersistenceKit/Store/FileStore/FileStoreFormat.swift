import Foundation

/// The byte layout of a store file; `Docs/StoreFormat.md` describes it in prose.
///
/// ```
/// header   64 bytes: "PKSTORE\0", format version u32, header size u32, store UUID (16),
///                    model layout hash (16), 12 reserved, CRC-32 of bytes 0..<60
/// record*  "PKRC" u32, kind u8, 3 reserved, payload length u32, sequence u64, payload,
///          checksum of everything before it in the record (from version 2:
///          `RecordChecksum`; version 1: CRC-32)
/// ```
/// From version 3, rows hold null in their derived to-many columns (see `DerivedEnds`).
/// From version 4, transaction and checkpoint payloads may end with a history section, and
/// history-deletion records may follow (see FileStoreFormat+History.swift). From version 5,
/// the first record describes the model (see FileStoreFormat+Model.swift).
/// All integers are little-endian.
enum FileStoreFormat {
    static let magic: [UInt8] = Array("PKSTORE".utf8) + [0]
    /// The version new files are written with.
    static let version: UInt32 = 5
    /// The oldest version this code reads (and appends to, with that version's checksum).
    static let oldestReadableVersion: UInt32 = 1
    static let headerSize = 64
    static let recordMagic: UInt32 = 0x4352_4B50  // "PKRC"
    /// Bytes before a record's payload.
    static let recordHeaderSize = 20
    /// Bytes of a record that are not payload (header and trailing checksum).
    static let recordOverhead = 24
    /// Largest payload a record may declare; anything larger is damage.
    static let maxPayload = 1 << 31 - 1

    enum RecordKind: UInt8 {
        /// One committed transaction.
        case transaction = 1
        /// Every live row, written by compaction.
        case checkpoint = 2
        /// Marks a clean close; the file of a cleanly closed store ends with one.
        case close = 3
        /// Persistent history was deleted through a transaction (format 4): payload u64 token.
        case historyDeletion = 4
        /// The model the rows are of (format 5): only as the first record; never applied.
        case model = 5
    }

    enum Op: UInt8 {
        case put = 1
        case delete = 2
    }

    static func header(storeID: UUID, modelHash: Data) -> [UInt8] {
        var w = ByteWriter(capacity: headerSize)
        w.raw(magic)
        w.u32(version)
        w.u32(UInt32(headerSize))
        withUnsafeBytes(of: storeID.uuid) { w.raw($0) }
        w.raw(modelHash.prefix(16))
        w.raw(repeatElement(0, count: 16 - min(16, modelHash.count)))
        w.raw(repeatElement(0, count: 12))
        w.u32(w.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<60])) })
        return w.bytes
    }

    /// What a store file's header says.
    struct Header {
        var version: UInt32
        var storeID: String
        /// The first 16 bytes of the layout hash of the model the store was created with.
        var modelHash: Data
    }

    /// Reads and checks the header at the start of `buf` (the whole file, or at least its
    /// first `headerSize` bytes): magic, format version, checksum, header size.
    static func readHeader(_ buf: UnsafeRawBufferPointer, path: String) throws(FileStoreError) -> Header {
        let size = buf.count
        let magicCount = min(size, 8)
        guard Array(buf[0..<magicCount]) == Array(magic[0..<magicCount]) else {
            throw FileStoreError(.notAStore, path: path, offset: 0, "the file is not a PersistenceKit store (wrong magic bytes).")
        }
        guard size >= headerSize else {
            throw FileStoreError(.truncated, path: path, offset: size, "the file ends inside its 64-byte header.")
        }
        var r = ByteReader(buf, range: 8..<headerSize, path: path, numbering: nil)
        let version = try r.u32()
        // The checksum first: every format version keeps the version at byte 8 and the
        // header's checksum at byte 60, so a mismatch is damage whatever the version says.
        // Checked after the version, one flipped bit there would be reported as a file from
        // a newer PersistenceKit.
        let storedCRC = buf.loadUnaligned(fromByteOffset: 60, as: UInt32.self).littleEndian
        guard storedCRC == CRC32.checksum(UnsafeRawBufferPointer(rebasing: buf[0..<60])) else {
            throw FileStoreError(.corrupt, path: path, offset: 60, "the header checksum does not match: the header is damaged.")
        }
        guard version <= Self.version else {
            throw FileStoreError(
                .newerFormatVersion(found: version, supported: Self.version), path: path, offset: 8,
                "the store was written by format version \(version); this PersistenceKit reads up to version "
                    + "\(Self.version). Use a newer PersistenceKit.")
        }
        guard version >= oldestReadableVersion else {
            throw FileStoreError(.corrupt, path: path, offset: 8, "the format version \(version) is not one PersistenceKit wrote: the header is damaged.")
        }
        guard try r.u32() == UInt32(headerSize) else {
            throw FileStoreError(.corrupt, path: path, offset: 12, "the header size is wrong: the header is damaged.")
        }
        let id = Array(buf[16..<32])
        let storeID = UUID(
            uuid: (id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12], id[13], id[14], id[15])
        ).uuidString
        return Header(version: version, storeID: storeID, modelHash: Data(buf[32..<48]))
    }

    /// A clean-close payload (format 2): u16 entity count, then per entity i32 index and
    /// i64 live rows, in entity order.
    static func encodeCounts(_ counts: [Int32: Int], numbering: EntityNumbering?) -> [UInt8] {
        var w = ByteWriter(capacity: 2 + 12 * counts.count)
        w.u16(UInt16(counts.count))
        // In ascending stored index order, as the format says.
        let stored = counts.map { pair in (entity: numbering?.stored(pair.key) ?? pair.key, rows: pair.value) }
        for (entity, rows) in stored.sorted(by: { $0.entity < $1.entity }) {
            w.i32(entity)
            w.i64(Int64(rows))
        }
        return w.bytes
    }

    /// Reads a clean-close payload; `nil` when it is empty (format 1, or counts unknown).
    static func decodeCounts(_ r: inout ByteReader, entityCount: Int32) throws(FileStoreError) -> [Int32: Int]? {
        guard r.remaining > 0 else { return nil }
        var counts: [Int32: Int] = [:]
        for _ in 0..<Int(try r.u16()) {
            let entity = try r.entity()
            let rows = try r.i64()
            guard entity >= 0, entity < entityCount, rows >= 0, rows < 1 << 62, counts[entity] == nil else {
                throw r.corrupt("the clean-close record's row counts are malformed")
            }
            counts[entity] = Int(rows)
        }
        guard r.remaining == 0 else { throw r.corrupt("the clean-close record has trailing bytes") }
        return counts
    }

    /// The checksum a record of a file of format `version` carries over `bytes`.
    static func recordChecksum(_ bytes: UnsafeRawBufferPointer, version: UInt32) -> UInt32 {
        version >= 2 ? RecordChecksum.checksum(bytes) : CRC32.checksum(bytes)
    }

    /// A whole record around `payload`.
    static func record(_ kind: RecordKind, sequence: UInt64, payload: [UInt8], version: UInt32) -> [UInt8] {
        var w = beginRecord(capacity: payload.count)
        w.raw(payload)
        return finishRecord(&w, kind, sequence: sequence, version: version)
    }

    /// A writer that holds room for a record header; append the payload, then call
    /// ``sealRecord(_:_:sequence:version:)`` (or ``finishRecord(_:_:sequence:version:)`` for
    /// the bytes as an array). Writing the payload in place saves copying it into a second
    /// buffer (measured: a 7 MB copy per 100,000-row save).
    static func beginRecord(capacity: Int) -> ByteWriter {
        var w = ByteWriter(capacity: capacity + recordOverhead)
        w.raw(repeatElement(0, count: recordHeaderSize))
        return w
    }

    /// The record as an array: header filled in, checksum appended. For small records; a
    /// save writes its record straight from the writer (``sealRecord(_:_:sequence:version:)``).
    static func finishRecord(_ w: inout ByteWriter, _ kind: RecordKind, sequence: UInt64, version: UInt32) -> [UInt8] {
        sealRecord(&w, kind, sequence: sequence, version: version)
        return w.bytes
    }

    /// Fills in the header of the record `w` holds and appends its checksum; the record is
    /// then `w`'s bytes.
    static func sealRecord(_ w: inout ByteWriter, _ kind: RecordKind, sequence: UInt64, version: UInt32) {
        w.patch32(recordMagic, at: 0)
        w.patch8(kind.rawValue, at: 4)
        w.patch32(UInt32(w.count - recordHeaderSize), at: 8)
        w.patch32(UInt32(truncatingIfNeeded: sequence), at: 12)
        w.patch32(UInt32(truncatingIfNeeded: sequence >> 32), at: 16)
        let sum = w.withUnsafeBytes { recordChecksum($0, version: version) }
        w.u32(sum)
    }

    // MARK: Values

    enum Tag: UInt8 {
        case null = 0, integer, double, float, boolFalse, boolTrue, string, date, data, uuid, uri, decimal, reference,
            references
    }

    /// The tag `encode` writes for `value`.
    static func tag(of value: StoreValue) -> UInt8 {
        switch value {
        case .null: Tag.null.rawValue
        case .integer: Tag.integer.rawValue
        case .double: Tag.double.rawValue
        case .float: Tag.float.rawValue
        case let .bool(b): b ? Tag.boolTrue.rawValue : Tag.boolFalse.rawValue
        case .string: Tag.string.rawValue
        case .date: Tag.date.rawValue
        case .data: Tag.data.rawValue
        case .uuid: Tag.uuid.rawValue
        case .uri: Tag.uri.rawValue
        case .decimal: Tag.decimal.rawValue
        case .reference: Tag.reference.rawValue
        case .references: Tag.references.rawValue
        }
    }

    /// About how many bytes `encode(values)` writes: exact for fixed-size values and native
    /// strings, a guess for the rest. Used to size a save's buffer once (growing it copied
    /// the record and touched twice the memory it needed).
    static func estimatedSize(_ values: [StoreValue]) -> Int {
        var n = 2
        for v in values {
            switch v {
            case .null, .bool: n += 1
            case .integer, .double, .date: n += 9
            case .float: n += 5
            case let .string(s): n += 5 + s.utf8.count
            case let .data(d): n += 5 + d.count
            case .uuid: n += 17
            case .uri, .decimal: n += 64
            case .reference: n += 13
            case let .references(rs): n += 5 + 12 * rs.count
            }
        }
        return n
    }

    static func encode(_ values: [StoreValue], into w: inout ByteWriter) {
        w.u16(UInt16(values.count))
        // Numbers and nulls are written here, read in place from the array; the rest go
        // through `encode(_:into:)`. (A call per value, each with a copy and a destroy of
        // the value, was 40% of encoding a row; measured with callgrind.)
        values.withUnsafeBufferPointer { buffer in
            for i in buffer.indices {
                switch buffer[i] {
                case let .integer(x):
                    w.u8(Tag.integer.rawValue)
                    w.i64(x)
                case let .double(x):
                    w.u8(Tag.double.rawValue)
                    w.u64(x.bitPattern)
                case .null: w.u8(Tag.null.rawValue)
                case let .string(x):
                    // Here too: through `encode(_:into:)` each string was copied once more.
                    w.u8(Tag.string.rawValue)
                    w.string(x)
                default: encode(buffer[i], into: &w)
                }
            }
        }
    }

    static func encode(_ v: StoreValue, into w: inout ByteWriter) {
        switch v {
        case .null: w.u8(Tag.null.rawValue)
        case let .integer(x):
            w.u8(Tag.integer.rawValue)
            w.i64(x)
        case let .double(x):
            w.u8(Tag.double.rawValue)
            w.u64(x.bitPattern)
        case let .float(x):
            w.u8(Tag.float.rawValue)
            w.u32(x.bitPattern)
        case let .bool(x): w.u8(x ? Tag.boolTrue.rawValue : Tag.boolFalse.rawValue)
        case let .string(s):
            w.u8(Tag.string.rawValue)
            w.string(s)
        case let .date(d):
            w.u8(Tag.date.rawValue)
            w.u64(d.timeIntervalSinceReferenceDate.bitPattern)
        case let .data(d):
            w.u8(Tag.data.rawValue)
            w.u32(UInt32(d.count))
            w.raw(d)
        case let .uuid(u):
            w.u8(Tag.uuid.rawValue)
            withUnsafeBytes(of: u.uuid) { w.raw($0) }
        case let .uri(u):
            w.u8(Tag.uri.rawValue)
            w.string(u.absoluteString)
        case let .decimal(d):
            w.u8(Tag.decimal.rawValue)
            w.string(d.description)
        case let .reference(r):
            w.u8(Tag.reference.rawValue)
            w.entity(r.entity)
            w.i64(r.primaryKey)
        case let .references(rs):
            w.u8(Tag.references.rawValue)
            w.u32(UInt32(rs.count))
            for r in rs {
                w.entity(r.entity)
                w.i64(r.primaryKey)
            }
        }
    }

    /// Decodes a row of the entity whose columns are `shape`: at most one value per column
    /// (a row may end early: see `StoreRow.value(at:)`), each of a kind its column admits
    /// (see ``RowShapes``), or `corrupt` at the offending offset.
    static func decodeValues(_ r: inout ByteReader, shape: [RowShapes.Column]) throws(FileStoreError) -> [StoreValue] {
        let n = Int(try r.u16())
        guard n <= shape.count else {
            r.position -= 2
            throw r.corrupt("a row holds \(n) values where its entity has \(shape.count) properties")
        }
        // Not `Array(unsafeUninitializedCapacity:)`: its closure captures `r`, which then is
        // boxed and checked for exclusivity on every read (measured: +10% instructions for
        // 500 indexed fetches of 100 rows, against the growth path it would have saved).
        var result: [StoreValue] = []
        result.reserveCapacity(n)
        // By index, reading the two fields each value needs: iterating the columns copied
        // each whole column (24 bytes since sub-entity targets joined it) per value.
        for i in 0..<n {
            let at = r.position
            try r.need(1)
            guard shape[i].admits(tag: r.base[at]) else { throw r.corrupt("value tag \(r.base[at]) does not fit its property") }
            let value = try decodeValue(&r)
            if shape[i].target >= 0, !shape[i].admits(value) {
                r.position = at
                throw r.corrupt("a reference names an entity its relationship does not lead to")
            }
            result.append(value)
        }
        return result
    }

    /// Decodes only value `column` of an encoded row (`.null` when the row is shorter).
    static func decodeValue(at column: Int, _ r: inout ByteReader) throws(FileStoreError) -> StoreValue {
        let n = Int(try r.u16())
        guard column < n else { return .null }
        for _ in 0..<column { try skipValue(&r) }
        return try decodeValue(&r)
    }

    // Switches on the raw tag: `Tag(rawValue:)` stayed an out-of-line call per value, a
    // tenth of matching rows in a filtered scan (measured with callgrind).
    @inline(__always)
    static func skipValue(_ r: inout ByteReader) throws(FileStoreError) {
        switch try r.u8() {
        case Tag.null.rawValue, Tag.boolFalse.rawValue, Tag.boolTrue.rawValue: break
        case Tag.integer.rawValue, Tag.double.rawValue, Tag.date.rawValue: try r.skip(8)
        case Tag.float.rawValue: try r.skip(4)
        case Tag.string.rawValue, Tag.data.rawValue, Tag.uri.rawValue, Tag.decimal.rawValue: try r.skip(Int(try r.u32()))
        case Tag.uuid.rawValue: try r.skip(16)
        case Tag.reference.rawValue: try r.skip(12)
        case Tag.references.rawValue: try r.skip(Int(try r.u32()) * 12)
        default: throw r.corrupt("unknown value tag")
        }
    }

    static func decodeValue(_ r: inout ByteReader) throws(FileStoreError) -> StoreValue {
        // The common kinds by raw tag first, as in `skipValue` (`Tag(rawValue:)` is a call).
        let raw = try r.u8()
        switch raw {
        case Tag.integer.rawValue: return .integer(try r.i64())
        case Tag.double.rawValue: return .double(Double(bitPattern: try r.u64()))
        case Tag.string.rawValue: return .string(try r.string())
        case Tag.null.rawValue: return .null
        default: break
        }
        guard let tag = Tag(rawValue: raw) else { throw r.corrupt("unknown value tag") }
        switch tag {
        case .null: return .null
        case .integer: return .integer(try r.i64())
        case .double: return .double(Double(bitPattern: try r.u64()))
        case .float: return .float(Float(bitPattern: try r.u32()))
        case .boolFalse: return .bool(false)
        case .boolTrue: return .bool(true)
        case .string: return .string(try r.string())
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.u64())))
        case .data:
            let n = Int(try r.u32())
            return .data(Data(try r.bytes(n)))
        case .uuid:
            let b = try r.bytes(16)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .uri:
            let s = try r.string()
            guard let url = URL(string: s) else { throw r.corrupt("a URI value does not parse") }
            return .uri(url)
        case .decimal:
            let s = try r.string()
            if s == "NaN" { return .decimal(.nan) }  // `Decimal.nan.description`, which `Decimal(string:)` refuses
            guard let d = Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) else {
                throw r.corrupt("a decimal value does not parse")
            }
            return .decimal(d)
        case .reference:
            return .reference(StoreRowID(entity: try r.entity(), primaryKey: try r.i64()))
        case .references:
            let n = Int(try r.u32())
            try r.need(n * 12)
            var rows: [StoreRowID] = []
            rows.reserveCapacity(n)
            for _ in 0..<n { rows.append(StoreRowID(entity: try r.entity(), primaryKey: try r.i64())) }
            return .references(rows)
        }
    }
}
