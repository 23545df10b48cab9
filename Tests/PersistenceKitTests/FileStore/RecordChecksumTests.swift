import Testing
@testable import PersistenceKit

/// ``RecordChecksum``: the format-version-2 record checksum. Pins known answers (the on-disk
/// format depends on them) and checks that damage of the kinds a store file suffers changes
/// the result, on sizes on both sides of the 8-byte word, 64-byte stripe and 1024-byte block
/// boundaries.
@Suite("The record checksum of format version 2") struct RecordChecksumTests {
    /// Sizes around every boundary of the algorithm: empty, partial word, word, short path
    /// limit, one stripe, stripe plus tail, a block of stripes, and several blocks plus tail.
    static let sizes = [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 127, 128, 1000, 1023, 1024, 1025, 1088, 1089, 4096 + 13]

    /// `count` deterministic pseudo-random bytes (xorshift64; a different `seed` gives
    /// different bytes).
    static func pattern(_ count: Int, seed: UInt64 = 0x9E37_79B9) -> [UInt8] {
        var x = seed
        return (0..<count).map { _ in
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            return UInt8(truncatingIfNeeded: x >> 24)
        }
    }

    /// The checksum of all of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { RecordChecksum.checksum($0) }
    }

    /// Values computed by this implementation when format version 2 was defined (and
    /// reproduced by an independent Python transcription of the algorithm). If this
    /// test fails, the algorithm changed, and stores written before the change no longer
    /// verify: restore the algorithm, or introduce a new format version.
    @Test func knownAnswers() {
        let expected: [(size: Int, checksum: UInt32)] = [
            (0, 0x7DB7_0739), (1, 0x9001_69B6), (7, 0x06AA_D1A5), (8, 0xE012_2690),
            (63, 0x5A49_1807), (64, 0xBD90_DE0E), (65, 0x44E7_B43A), (1000, 0xA57E_9F28),
            (1089, 0x7DA8_1A4E), (4109, 0xEC57_6625),
        ]
        for (size, value) in expected {
            #expect(Self.checksum(Self.pattern(size)) == value, "size \(size)")
        }
        #expect(Self.checksum(Array("PersistenceKit record".utf8)) == 0xDD2E_9C29)
        #expect(Self.checksum([UInt8](repeating: 0, count: 4096)) == 0xCD3C_D7D3)
    }

    /// Flipping any one bit changes the checksum: every bit of inputs up to 128 bytes, and
    /// for larger ones every bit of the first and last 128 bytes and of the 64 bytes
    /// around each block boundary, plus one bit of every 5th byte in between. Both on
    /// pseudo-random and on all-zero contents.
    @Test(arguments: sizes) func everySingleBitFlipIsDetected(size: Int) {
        for original in [Self.pattern(size), [UInt8](repeating: 0, count: size)] {
            let reference = Self.checksum(original)
            var damaged = original
            for byte in 0..<size {
                let nearBoundary = byte < 128 || byte >= size - 128 || (byte + 32) % 1024 < 64
                let bits = nearBoundary ? Array(0..<8) : (byte % 5 == 0 ? [byte % 8] : [])
                for bit in bits {
                    damaged[byte] ^= 1 << bit
                    #expect(Self.checksum(damaged) != reference, "size \(size), byte \(byte), bit \(bit)")
                    damaged[byte] ^= 1 << bit
                }
            }
        }
    }

    /// Zero bytes still count: all-zero buffers of every length up to 1100 (and a few longer
    /// ones) have pairwise different checksums, so neither appended nor dropped zero bytes go
    /// unnoticed.
    @Test func allZeroBuffersOfDifferentLengthsDiffer() {
        let lengths = Array(0...1100) + [2047, 2048, 2049, 4109]
        var seen: [UInt32: Int] = [:]
        for length in lengths {
            let value = Self.checksum([UInt8](repeating: 0, count: length))
            if let other = seen[value] {
                Issue.record("lengths \(other) and \(length) both give \(value)")
            }
            seen[value] = length
        }
    }

    /// Truncating a record, or extending it with 1 to 9 zero bytes, changes its checksum.
    @Test(arguments: sizes) func truncationAndZeroExtensionAreDetected(size: Int) {
        let original = Self.pattern(size)
        let reference = Self.checksum(original)
        for extra in 1...9 {
            #expect(Self.checksum(original + [UInt8](repeating: 0, count: extra)) != reference, "size \(size) + \(extra) zeros")
        }
        for shorter in [size - 1, size - 8, size - 64, size / 2, 0] where shorter >= 0 && shorter < size {
            #expect(Self.checksum(Array(original[0..<shorter])) != reference, "size \(size) truncated to \(shorter)")
        }
    }

    /// The checksum depends only on the bytes, not on where they are in memory: the same
    /// bytes at 16 different alignments give the same value.
    @Test(arguments: sizes) func alignmentDoesNotMatter(size: Int) {
        let original = Self.pattern(size, seed: 42)
        let reference = Self.checksum(original)
        var storage = [UInt8](repeating: 0xA5, count: size + 16)
        for shift in 0..<16 {
            storage.replaceSubrange(shift..<(shift + size), with: original)
            let value = storage.withUnsafeBytes { RecordChecksum.checksum(UnsafeRawBufferPointer(rebasing: $0[shift..<(shift + size)])) }
            #expect(value == reference, "size \(size), shift \(shift)")
        }
    }

    /// Swapping two different 8-byte words changes the checksum: neighbours in one stripe,
    /// the same lane in different stripes of one block (full or partial) and in different
    /// blocks, and words in the tail.
    @Test func swappingTwoWordsIsDetected() throws {
        let cases: [(size: Int, first: Int, second: Int)] = [
            (16, 0, 8), (63, 0, 48), (63, 8, 55), (64, 0, 56), (65, 0, 57), (128, 0, 64), (128, 8, 72),
            (129, 0, 121), (1089, 0, 1024), (1089, 64, 1088 - 7), (4109, 0, 8), (4109, 0, 4096),
            (4109, 1024, 2048), (4109, 24, 1048), (4109, 4040, 4101), (4109, 8, 8 + 3 * 64),
            (1300, 1024 + 16, 1024 + 16 + 2 * 64),
        ]
        for (size, first, second) in cases {
            let original = Self.pattern(size, seed: 7)
            var swapped = original
            let a = Array(original[first..<(first + 8)])
            let b = Array(original[second..<(second + 8)])
            try #require(a != b)
            swapped.replaceSubrange(first..<(first + 8), with: b)
            swapped.replaceSubrange(second..<(second + 8), with: a)
            #expect(Self.checksum(swapped) != Self.checksum(original), "size \(size), words at \(first) and \(second)")
        }
    }

    /// Different short contents give different checksums: the empty input and all 256
    /// one-byte inputs are pairwise different.
    @Test func allOneByteInputsDiffer() {
        var values: Set<UInt32> = [Self.checksum([])]
        for byte in 0...255 { values.insert(Self.checksum([UInt8(byte)])) }
        #expect(values.count == 257)
    }
}
