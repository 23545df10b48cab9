import Foundation

// From format version 5 a store file's first record (kind 5, right after the header)
// describes the model its rows are of: each entity's version hash and the model's version
// identifiers, so that the metadata of a closed file carries `NSStoreModelVersionHashesKey`
// as Core Data's does. Creating a store writes it (in the same all-or-nothing write as the
// header), and so does compaction (in the new file, before the checkpoint). A migration
// without a rewrite leaves the file alone: the layout sidecar carries the new model's
// section (FileStore+LayoutAlias.swift) until a compaction writes it into the file.
//
// ```
// section  u32 entity count, then per entity (ascending names): u32 length, UTF-8 name,
//          u32 length, version hash bytes;
//          u32 identifier count, then per identifier (ascending): u32 length, UTF-8
// ```
// The record is not applied to the row tables and takes no record number of its own: its
// number is 0 at creation and the checkpoint's in a compacted file, and the run of numbers
// is checked from the record after it.

/// The model a store file's rows are of, as its model record or layout sidecar describes it.
struct StoreModelSection: Equatable, Sendable {
    /// Entity name → ``NSEntityDescription/versionHash``.
    var versionHashes: [String: Data]
    /// The model's version identifiers that are strings, in ascending order.
    var versionIdentifiers: [String]

    /// The section of `model`.
    init(_ model: NSManagedObjectModel) {
        versionHashes = model.entityVersionHashesByName
        versionIdentifiers = model.versionIdentifiers.compactMap { $0.base as? String }.sorted()
    }

    init(versionHashes: [String: Data], versionIdentifiers: [String]) {
        self.versionHashes = versionHashes
        self.versionIdentifiers = versionIdentifiers
    }

    func encode(into w: inout ByteWriter) {
        w.u32(UInt32(versionHashes.count))
        for (name, hash) in versionHashes.sorted(by: { $0.key < $1.key }) {
            w.string(name)
            w.u32(UInt32(hash.count))
            w.raw(hash)
        }
        w.u32(UInt32(versionIdentifiers.count))
        for identifier in versionIdentifiers { w.string(identifier) }
    }

    /// The section's bytes.
    var encoded: [UInt8] {
        var w = ByteWriter(capacity: 64 + versionHashes.count * 64)
        encode(into: &w)
        return w.bytes
    }

    /// Reads a section; `corrupt` when it runs past its bytes or names an entity twice.
    static func decode(_ r: inout ByteReader) throws(FileStoreError) -> StoreModelSection {
        var hashes: [String: Data] = [:]
        let entities = Int(try r.u32())
        try r.need(entities * 8)
        for _ in 0..<entities {
            let name = try r.string()
            let hash = Data(try r.bytes(Int(try r.u32())))
            guard hashes.updateValue(hash, forKey: name) == nil else { throw r.corrupt("the model record names entity \(name) twice") }
        }
        var identifiers: [String] = []
        let count = Int(try r.u32())
        try r.need(count * 4)
        for _ in 0..<count { identifiers.append(try r.string()) }
        return StoreModelSection(versionHashes: hashes, versionIdentifiers: identifiers)
    }
}

extension FileStoreFormat {
    /// The model record a new file starts with (format 5).
    static func modelRecord(_ model: NSManagedObjectModel, sequence: UInt64) -> [UInt8] {
        record(.model, sequence: sequence, payload: StoreModelSection(model).encoded, version: version)
    }
}

extension FileStoreFormat {
    /// Where the records after the header and a model record begin in `buf`, a whole file
    /// or its start.
    static func dataStart(_ buf: UnsafeRawBufferPointer) -> Int {
        guard buf.count >= headerSize + recordOverhead,
            buf.loadUnaligned(fromByteOffset: headerSize, as: UInt32.self).littleEndian == recordMagic,
            buf[headerSize + 4] == RecordKind.model.rawValue
        else { return headerSize }
        return headerSize + recordOverhead + Int(buf.loadUnaligned(fromByteOffset: headerSize + 8, as: UInt32.self).littleEndian)
    }
}

extension FileStore {
    /// The model section of the closed or open store file at `url` (see
    /// ``modelSection(at:header:)``); `nil` also when its header cannot be read.
    static func modelSection(at url: URL) -> StoreModelSection? {
        let path = resolvedPath(of: url)
        guard let header = try? readHeader(at: path) else { return nil }
        return modelSection(at: path, header: header)
    }

    /// The model section of the store file at `path` whose header is `header`: the layout
    /// sidecar's when it stands for the header, else the file's model record; `nil` for a
    /// file without one (format 4 and older) or whose record is damaged.
    static func modelSection(at path: String, header: FileStoreFormat.Header) -> StoreModelSection? {
        let layout = effectiveLayout(header: header.modelHash, path: path)
        if layout.hash != header.modelHash { return layout.model }
        guard header.version >= 5, let file = try? PosixFileSystem().openForReading(path) else { return nil }
        defer { file.close() }
        let at = FileStoreFormat.headerSize
        guard let head = try? file.read(at: at, count: FileStoreFormat.recordHeaderSize), head.count == FileStoreFormat.recordHeaderSize
        else { return nil }
        return head.withUnsafeBytes { h -> StoreModelSection? in
            guard h.loadUnaligned(as: UInt32.self).littleEndian == FileStoreFormat.recordMagic,
                h[4] == FileStoreFormat.RecordKind.model.rawValue
            else { return nil }
            let length = Int(h.loadUnaligned(fromByteOffset: 8, as: UInt32.self).littleEndian)
            guard length <= 1 << 26, let rest = try? file.read(at: at + FileStoreFormat.recordHeaderSize, count: length + 4),
                rest.count == length + 4
            else { return nil }
            let record = head + rest
            return record.withUnsafeBytes { buf -> StoreModelSection? in
                let crcAt = FileStoreFormat.recordHeaderSize + length
                let stored = buf.loadUnaligned(fromByteOffset: crcAt, as: UInt32.self).littleEndian
                let body = UnsafeRawBufferPointer(rebasing: buf[0..<crcAt])
                guard stored == FileStoreFormat.recordChecksum(body, version: header.version) else { return nil }
                var r = ByteReader(buf, range: FileStoreFormat.recordHeaderSize..<crcAt, path: path, numbering: nil)
                guard let section = try? StoreModelSection.decode(&r), r.remaining == 0 else { return nil }
                return section
            }
        }
    }
}
