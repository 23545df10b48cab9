/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), slicing-by-8 for speed: the
/// store checksums every record when it is written and every byte when a store opens.
enum CRC32 {
    private static let tables: [[UInt32]] = {
        var t = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (0xEDB8_8320 ^ (c >> 1)) : (c >> 1) }
            t[0][i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 { t[k][i] = (t[k - 1][i] >> 8) ^ t[0][Int(t[k - 1][i] & 0xFF)] }
        }
        return t
    }()

    /// The checksum of `bytes[range]`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        let t = tables
        var crc: UInt32 = 0xFFFF_FFFF
        var i = 0
        let n = bytes.count
        t[0].withUnsafeBufferPointer { t0 in
            t[1].withUnsafeBufferPointer { t1 in
                t[2].withUnsafeBufferPointer { t2 in
                    t[3].withUnsafeBufferPointer { t3 in
                        t[4].withUnsafeBufferPointer { t4 in
                            t[5].withUnsafeBufferPointer { t5 in
                                t[6].withUnsafeBufferPointer { t6 in
                                    t[7].withUnsafeBufferPointer { t7 in
                                        while i + 8 <= n {
                                            let lo = crc ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8
                                                | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
                                            let hi = UInt32(bytes[i + 4]) | UInt32(bytes[i + 5]) << 8
                                                | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 24
                                            crc = t7[Int(lo & 0xFF)] ^ t6[Int((lo >> 8) & 0xFF)]
                                                ^ t5[Int((lo >> 16) & 0xFF)] ^ t4[Int(lo >> 24)]
                                                ^ t3[Int(hi & 0xFF)] ^ t2[Int((hi >> 8) & 0xFF)]
                                                ^ t1[Int((hi >> 16) & 0xFF)] ^ t0[Int(hi >> 24)]
                                            i += 8
                                        }
                                        while i < n {
                                            crc = t0[Int((crc ^ UInt32(bytes[i])) & 0xFF)] ^ (crc >> 8)
                                            i += 1
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return ~crc
    }
}
