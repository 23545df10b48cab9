import Foundation

// A store whose rows already fit a newer model is not rewritten to migrate it. When a model
// only appends optional attributes without default values to its entities, every stored
// row is a prefix of a row of the new layout (rows may end early: see `RowShapes`), so the
// migration writes a sidecar, `Name.store-layout`, saying that the layout hash in the
// header stands for the new layout. Opening a 1,000,000-object store after such a change
// then costs what opening it unchanged does, where a rewrite took seconds.
//
// The sidecar is 44 bytes: `PKLAYOUT`, the header's layout hash (16), the layout it stands
// for (16), and a CRC-32 of the first 40 bytes. It is written beside its final name, synced
// and renamed, so it is there whole or not at all; one that does not name the header's
// hash (the header changed since: a compaction writes the current layout into the header
// and removes the sidecar) or fails its checksum is ignored.

extension FileStore {
    /// The suffix of the layout sidecar.
    static let layoutAliasSuffix = "-layout"
    private static let layoutAliasMagic = Array("PKLAYOUT".utf8)

    /// The layout whose rows the store at `path` holds, given its header's layout hash: the
    /// sidecar's layout when the sidecar names that header hash, else the header's own.
    static func effectiveLayoutHash(header: Data, path: String) -> Data {
        guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: path + layoutAliasSuffix)), bytes.count == 44,
            Array(bytes.prefix(8)) == layoutAliasMagic, bytes.subdata(in: 8..<24) == header
        else { return header }
        let stored = bytes.subdata(in: 40..<44).withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        let computed = bytes.prefix(40).withUnsafeBytes { CRC32.checksum($0) }
        return stored == computed ? bytes.subdata(in: 24..<40) : header
    }

    /// Records that the store at `path`, whose header holds layout hash `header`, holds rows
    /// of the layout `current` (written beside its name, synced, renamed, folder synced).
    static func writeLayoutAlias(path: String, header: Data, current: Data) throws(FileStoreError) {
        var bytes = layoutAliasMagic + Array(header.prefix(16)) + Array(current.prefix(16))
        let crc = bytes.withUnsafeBytes { CRC32.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { bytes += $0 }
        try writeWhole(
            bytes, to: path + layoutAliasSuffix, through: path + layoutAliasSuffix + "-new",
            in: (path as NSString).deletingLastPathComponent, fs: PosixFileSystem(), "writing the layout sidecar")
    }
}
