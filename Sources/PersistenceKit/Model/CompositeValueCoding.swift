import Foundation

/// The stored form of a composite attribute's value: a `.data` value holding a small,
/// versioned binary encoding of its element values (see `Docs/StoreFormat.md`).
///
/// ```
/// version (u8, 1) · count (u32) · count × [key (u32 length + UTF-8) · value (a tagged value,
/// as in a row)]
/// ```
///
/// Entries are written in ascending key order (by UTF-8 bytes), so equal values have equal
/// bytes; absent (`nil`) elements are not written.
enum CompositeValueCoding {
    /// The version byte written first.
    static let version: UInt8 = 1

    /// Encodes element values by element name; `.null` entries are left out.
    static func encode(_ entries: [String: StoreValue]) -> Data {
        let present = entries.filter { !$0.value.isNull }.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        var w = ByteWriter(capacity: 16 + present.count * 24)
        w.u8(version)
        w.u32(UInt32(present.count))
        for (key, value) in present {
            w.string(key)
            FileStoreFormat.encode(value, into: &w)
        }
        return Data(w.bytes)
    }

    /// Decodes what ``encode(_:)`` wrote; `nil` for bytes that are not such an encoding.
    static func decode(_ data: Data) -> [String: StoreValue]? {
        data.withUnsafeBytes { buf -> [String: StoreValue]? in
            var r = ByteReader(buf, range: 0..<buf.count, path: "composite value", numbering: nil)
            do throws(FileStoreError) {
                guard try r.u8() == version else { return nil }
                let count = Int(try r.u32())
                var entries: [String: StoreValue] = [:]
                entries.reserveCapacity(min(count, 64))
                for _ in 0..<count {
                    let key = try r.string()
                    let value = try FileStoreFormat.decodeValue(&r)
                    switch value {
                    case .reference, .references: return nil
                    default: entries[key] = value
                    }
                }
                guard r.position == buf.count else { return nil }
                return entries
            } catch {
                return nil
            }
        }
    }
}
