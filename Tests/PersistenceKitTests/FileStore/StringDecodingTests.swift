import Foundation
import Testing
@testable import PersistenceKit

/// Stored strings are read back byte for byte: ASCII takes a fast path with no check after
/// decoding, everything else is checked, and invalid UTF-8 is damage, never repaired.
@Suite("Stored strings read back byte for byte") struct StringDecodingTests {
    /// Encodes `bytes` as a stored string (u32 length, then the bytes) and reads it back.
    private func read(_ bytes: [UInt8]) throws(FileStoreError) -> String {
        var writer = ByteWriter()
        writer.u32(UInt32(bytes.count))
        for b in bytes { writer.u8(b) }
        return try writer.bytes.withBytes { buf throws(FileStoreError) -> String in
            var r = ByteReader(buf, range: 0..<buf.count, path: "test")
            return try r.string()
        }
    }

    @Test func asciiOfEveryLengthAroundTheWordSize() throws {
        for n in 0...33 {
            let text = String((0..<n).map { Character(UnicodeScalar(UInt8(32 + $0 * 3 % 95))) })
            #expect(try read(Array(text.utf8)) == text)
            #expect(ByteReader.isASCII(UnsafeRawBufferPointer(start: nil, count: 0)))
        }
    }

    /// A byte with the high bit set at each position of strings of lengths around eight is
    /// seen as non-ASCII, whether it falls in a whole word or in the tail.
    @Test func everyPositionOfAHighByteIsSeen() {
        for n in 1...24 {
            for position in 0..<n {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: n)
                bytes[position] = 0xE9
                let ascii = bytes.withUnsafeBytes { ByteReader.isASCII($0) }
                #expect(!ascii, "length \(n), high byte at \(position)")
            }
        }
    }

    @Test func validMultibyteTextReadsBack() throws {
        for text in ["é", "naïve café", "日本語のテキスト", "emoji 👩‍💻 and e\u{301}", String(repeating: "ß", count: 40)] {
            #expect(try read(Array(text.utf8)) == text)
        }
    }

    @Test(arguments: [
        [0xFF] as [UInt8],  // never valid
        [0x61, 0x62, 0xC3],  // a sequence cut short at the end
        [0xC3, 0x28],  // a bad continuation byte
        Array("twelve bytes".utf8) + [0xED, 0xA0, 0x80],  // an encoded surrogate, after a whole word of ASCII
    ])
    func invalidUTF8IsDamageNotRepaired(bytes: [UInt8]) {
        let error = #expect(throws: FileStoreError.self) { try read(bytes) }
        #expect(error?.kind == .corrupt)
        #expect(error?.description.contains("UTF-8") == true)
    }
}
