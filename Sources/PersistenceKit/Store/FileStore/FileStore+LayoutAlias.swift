import Foundation

// A store whose rows already fit a newer model is not rewritten to migrate it. When a model
// only appends optional attributes without default values to its entities, and adds
// entities, every stored row is a prefix of a row of the new layout (rows may end early: see
// `RowShapes`), so the migration writes a sidecar, `Name.store-layout`, saying that the
// layout hash in the header stands for the new layout. Opening a 1,000,000-object store
// after such a change then costs what opening it unchanged does, where a rewrite took
// seconds.
//
// Two forms (Docs/StoreFormat.md):
// - 44 bytes: `PKLAYOUT`, the header's layout hash (16), the layout it stands for (16), and
//   a CRC-32 of the first 40 bytes. The file numbers entities as the new model does.
// - `PKLAYOU2`, the two hashes, u32 n and n i32 (the model's index of each stored entity
//   index: see EntityNumbering.swift), u32 m and m bytes of the new model's version hashes
//   (a model section, FileStoreFormat+Model.swift), and a CRC-32 of all bytes before it.
// Either is written beside its final name, synced and renamed, so it is there whole or not
// at all; one that does not name the header's hash (the header changed since: a compaction
// writes the current layout into the header and removes the sidecar) or fails its checksum
// is ignored.

extension FileStore {
    /// The suffix of the layout sidecar.
    static let layoutAliasSuffix = "-layout"
    private static let layoutAliasMagic = Array("PKLAYOUT".utf8)
    private static let numberedAliasMagic = Array("PKLAYOU2".utf8)

    /// What a store file's rows are, as its header and layout sidecar say together.
    struct StoredLayout {
        /// The layout hash (16 bytes) of the model whose rows the file holds.
        var hash: Data
        /// How the file numbers entities, when not as that model does.
        var numbering: EntityNumbering?
        /// The model section the sidecar carries (the model the file's rows are of).
        var model: StoreModelSection?
    }

    /// The layout whose rows the store at `path` holds, given its header's layout hash: the
    /// sidecar's when the sidecar names that header hash and is whole, else the header's own.
    static func effectiveLayout(header: Data, path: String) -> StoredLayout {
        let plain = StoredLayout(hash: header, numbering: nil, model: nil)
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path + layoutAliasSuffix)), data.count >= 44 else { return plain }
        let bytes = [UInt8](data)
        let magic = Array(bytes.prefix(8))
        guard magic == layoutAliasMagic || magic == numberedAliasMagic, Data(bytes[8..<24]) == header else { return plain }
        let body = bytes.count - 4
        let stored = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: body, as: UInt32.self).littleEndian }
        guard stored == bytes.withUnsafeBytes({ CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<body])) }) else { return plain }
        let layout = Data(bytes[24..<40])
        if magic == layoutAliasMagic {
            return bytes.count == 44 ? StoredLayout(hash: layout, numbering: nil, model: nil) : plain
        }
        // The numbered form: a checksum-valid sidecar that does not parse is ignored too.
        return bytes.withUnsafeBytes { buf -> StoredLayout in
            var r = ByteReader(buf, range: 40..<body, path: path + layoutAliasSuffix, numbering: nil)
            guard let n = try? r.u32(), n <= 1 << 20, r.remaining >= Int(n) * 4 else { return plain }
            var toModel: [Int32] = []
            for _ in 0..<n {
                guard let e = try? r.i32() else { return plain }
                toModel.append(e)
            }
            guard let numbering = EntityNumbering(toModel: toModel), let m = try? r.u32(), Int(m) == r.remaining,
                let model = try? StoreModelSection.decode(&r), r.remaining == 0
            else { return plain }
            return StoredLayout(hash: layout, numbering: numbering.isIdentity ? nil : numbering, model: model)
        }
    }

    /// The layout hash of ``effectiveLayout(header:path:)``.
    static func effectiveLayoutHash(header: Data, path: String) -> Data {
        effectiveLayout(header: header, path: path).hash
    }

    /// Records that the store at `path`, whose header holds layout hash `header`, holds rows
    /// of the layout `current`, numbering entities as `numbering` says (`nil`: as the model
    /// of `current` does), of the model `model` describes (written beside its name, synced,
    /// renamed, folder synced). Without a numbering or a model section it writes the 44-byte
    /// form, which builds that know no other form read too.
    static func writeLayoutAlias(
        path: String, header: Data, current: Data, numbering: EntityNumbering? = nil, model: StoreModelSection? = nil
    ) throws(FileStoreError) {
        var w = ByteWriter(capacity: 128)
        let numbered = numbering != nil || model != nil
        w.raw(numbered ? numberedAliasMagic : layoutAliasMagic)
        w.raw(header.prefix(16))
        w.raw(current.prefix(16))
        if numbered {
            let toModel = numbering?.toModel ?? []
            w.u32(UInt32(toModel.count))
            for e in toModel { w.i32(e) }
            let lengthAt = w.count
            w.u32(0)
            model?.encode(into: &w)
            w.patch32(UInt32(w.count - lengthAt - 4), at: lengthAt)
        }
        let crc = w.withUnsafeBytes { CRC32.checksum($0) }
        w.u32(crc)
        try writeWhole(
            w.bytes, to: path + layoutAliasSuffix, through: path + layoutAliasSuffix + "-new",
            in: (path as NSString).deletingLastPathComponent, fs: PosixFileSystem(), "writing the layout sidecar")
    }
}
