import Foundation
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// Damaged store files: each kind of damage gives a typed ``FileStoreError`` naming the file
/// and the byte offset; never a crash, never a silently shortened store.
@Suite("Damaged store files give typed errors") struct CorruptionTests {
    /// Writes a small, cleanly closed store (three transactions and a close record) and
    /// returns its bytes.
    @discardableResult
    static func makeCleanStore(_ url: URL) throws -> [UInt8] {
        let container = try FSSupport.container(at: url)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "Poetry"
            for i in 0..<3 {
                let b = Book(context: context)
                b.title = "Ode \(i)"
                b.pages = Int64(100 + i)
                b.shelf = shelf
            }
            try context.save()
            let author = Author(context: context)
            author.name = "Keats"
            for b in shelf.books { b.authors.insert(author) }
            try context.save()
            let b = Book(context: context)
            b.title = "Endymion"
            b.pages = 400
            b.published = Date(timeIntervalSince1970: 1_000_000)
            try context.save()
        }
        try FSSupport.close(container)
        return try FSSupport.bytes(url)
    }

    /// Opens the store strictly and reads every entity's rows (a strict open leaves most
    /// checksums to the first read: see `FileStore.verify`); returns the error of the open
    /// or the read, or nil when both succeed (the store is closed again).
    static func openError(_ url: URL) throws -> FileStoreError? {
        do {
            let store = try FileStore.open(at: url, model: try Fixtures.model())
            defer { try? store.close() }
            for entity in store.model.entities { _ = try store.fetchRows(entity: entity.index, filter: nil) }
            return nil
        } catch let e as FileStoreError {
            return e
        }
    }

    /// Expects opening `url` to fail with `kind` at `offset`, naming the file.
    static func expectDamage(
        _ url: URL, _ kind: FileStoreError.Kind, at offset: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        guard let error = try openError(url) else {
            Issue.record("the damaged store opened without an error", sourceLocation: sourceLocation)
            return
        }
        #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
        #expect(error.offset == offset, "\(error)", sourceLocation: sourceLocation)
        #expect(error.path == FSSupport.path(url), sourceLocation: sourceLocation)
        #expect(error.description.contains(FSSupport.path(url)), sourceLocation: sourceLocation)
        #expect(error.description.contains("byte \(offset)"), sourceLocation: sourceLocation)
        // A failed open may leave a -lock file (see openingADamagedStoreTwiceReportsTheSameDamage);
        // remove it so that the next case in the same folder is opened strictly again.
        try? FileManager.default.removeItem(atPath: url.path + "-lock")
    }

    @Test func theCleanStoreOpensAndHasTheExpectedLayout() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        #expect(records.count == 4)
        #expect(bytes[records[3] + 4] == 3, "the last record is a close record")
        // Its payload holds the live rows per entity (entity order: Author, Book, Cover,
        // Shelf): u16 count, then i32 entity + i64 rows each.
        let close = records[3]
        let length = Int(FSSupport.u32(bytes, at: close + 8))
        #expect(close + 24 + length == bytes.count, "the close record ends the file")
        var counts: [Int32: Int64] = [:]
        let n = Int(bytes[close + 20]) | Int(bytes[close + 21]) << 8
        #expect(length == 2 + 12 * n)
        for i in 0..<n {
            let at = close + 22 + 12 * i
            let entity = Int32(bitPattern: FSSupport.u32(bytes, at: at))
            counts[entity] = Int64(FSSupport.u32(bytes, at: at + 4)) | Int64(FSSupport.u32(bytes, at: at + 8)) << 32
        }
        #expect(counts.filter { $0.value > 0 } == [0: 1, 1: 4, 3: 1])
        #expect(FSSupport.u32(bytes, at: 60) == FSSupport.crc32(bytes[0..<60]))
        #expect(try Self.openError(folder.storeURL) == nil)
    }

    // MARK: Truncated

    @Test(arguments: [0, 1, 7, 8, 30, 60, 63])
    func truncatedInsideTheHeader(cut: Int) throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        try FSSupport.write(Array(bytes.prefix(cut)), to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .truncated, at: cut)
    }

    @Test func truncatedInsideARecord() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        for start in records.dropLast() {
            let length = Int(FSSupport.u32(bytes, at: start + 8))
            // Inside the record header, inside the payload, and one byte short of its end.
            for cut in [start + 1, start + 10, start + 20 + length / 2, start + 24 + length - 1] {
                try FSSupport.write(Array(bytes.prefix(cut)), to: folder.storeURL)
                try Self.expectDamage(folder.storeURL, .truncated, at: start)
            }
        }
        // Inside the close record.
        let close = records[records.count - 1]
        try FSSupport.write(Array(bytes.prefix(close + 12)), to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .truncated, at: close)
    }

    @Test func truncatedAtARecordBoundary() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        for boundary in FSSupport.recordOffsets(bytes) {
            try FSSupport.write(Array(bytes.prefix(boundary)), to: folder.storeURL)
            try Self.expectDamage(folder.storeURL, .truncated, at: boundary)
        }
    }

    /// A failed open must not leave a `-lock` file, or the next open would treat the damage
    /// as an interrupted session and cut it off silently.
    @Test func openingADamagedStoreTwiceReportsTheSameDamage() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        let damaged = Array(bytes.prefix(records[2] + 30))  // inside the last transaction
        try FSSupport.write(damaged, to: folder.storeURL)
        let first = try Self.openError(folder.storeURL)
        #expect(first?.kind == .truncated)
        let second = try Self.openError(folder.storeURL)
        #expect(second == first, "the second open of the same damaged file gave \(String(describing: second))")
        #expect(try FSSupport.bytes(folder.storeURL) == damaged, "opening a damaged store changed the file")
    }

    // MARK: Bit flips

    @Test(arguments: [16, 31, 32, 47, 50, 59, 60, 63])
    func bitFlipInTheHeaderIsCorrupt(position: Int) throws {
        let folder = try TemporaryFolder()
        var bytes = try Self.makeCleanStore(folder.storeURL)
        bytes[position] ^= 0x10
        try FSSupport.write(bytes, to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .corrupt, at: 60)
    }

    @Test(arguments: [0, 3, 7])
    func bitFlipInTheMagicIsNotAStore(position: Int) throws {
        let folder = try TemporaryFolder()
        var bytes = try Self.makeCleanStore(folder.storeURL)
        bytes[position] ^= 0x01
        try FSSupport.write(bytes, to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .notAStore, at: 0)
    }

    @Test func bitFlipInAMiddleRecordIsCorruptAtThatRecord() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        let middle = records[1]
        let length = Int(FSSupport.u32(bytes, at: middle + 8))
        // Marker, kind, sequence, first/middle/last payload byte, checksum.
        for position in [middle, middle + 4, middle + 13, middle + 20, middle + 20 + length / 2, middle + 19 + length, middle + 21 + length] {
            var damaged = bytes
            damaged[position] ^= 0x04
            try FSSupport.write(damaged, to: folder.storeURL)
            try Self.expectDamage(folder.storeURL, .corrupt, at: middle)
        }
        // The close record itself.
        var damaged = bytes
        damaged[records[3] + 14] ^= 0x80
        try FSSupport.write(damaged, to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .corrupt, at: records[3])
    }

    /// Record numbers must run on: a record dropped from the middle (or a copy of one put
    /// after it) is reported where the sequence breaks, after a clean close and after a
    /// crash alike, instead of the file opening without the dropped record's rows.
    @Test(arguments: [false, true]) func aMissingOrRepeatedRecordIsReported(crashed: Bool) throws {
        let folder = try TemporaryFolder()
        let bytes = try CorruptionTests.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        #expect(records.count >= 4, "three saves and a close record")
        let lock = folder.storeURL.path + "-lock"
        func expectBreak(_ damaged: [UInt8], at offset: Int) throws {
            try FSSupport.write(damaged, to: folder.storeURL)
            try? FileManager.default.removeItem(atPath: lock)
            if crashed { _ = FileManager.default.createFile(atPath: lock, contents: nil) }
            let error = try CorruptionTests.openError(folder.storeURL)
            #expect(error?.kind == .corrupt)
            #expect(error?.offset == offset + 12, "\(String(describing: error))")
        }
        var dropped = bytes
        dropped.removeSubrange(records[1]..<records[2])
        try expectBreak(dropped, at: records[1])
        var repeated = bytes
        repeated.insert(contentsOf: bytes[records[0]..<records[1]], at: records[1])
        try expectBreak(repeated, at: records[1])
        // The file as it was opens.
        try FSSupport.write(bytes, to: folder.storeURL)
        try? FileManager.default.removeItem(atPath: lock)
        #expect(try CorruptionTests.openError(folder.storeURL) == nil)
    }

    /// A damaged length that runs past the end of the file is reported, not cut: only a last
    /// record may be unfinished. (Recovery used to cut the file there, dropping every save
    /// after it.)
    @Test func aDamagedLengthWithSavesAfterItIsReportedNotCut() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        var damaged = Array(bytes.prefix(records[3]))  // as a crash leaves it: no close record
        FSSupport.putU32(0x7000_0000, into: &damaged, at: records[1] + 8)
        for crashed in [true, false] {
            try FSSupport.write(damaged, to: folder.storeURL)
            if crashed { _ = FileManager.default.createFile(atPath: folder.storeURL.path + "-lock", contents: nil) }
            let error = try #require(try Self.openError(folder.storeURL))
            #expect(error.kind == .corrupt && error.offset == records[1], "\(error)")
            #expect(try FSSupport.bytes(folder.storeURL) == damaged, "nothing was cut")
            try? FileManager.default.removeItem(atPath: folder.storeURL.path + "-lock")
        }
    }

    /// After a crash (a `-lock` file beside the store) only an unfinished last record is
    /// forgiven; damage in the middle is still reported, never silently dropped.
    @Test func afterACrashOnlyTheUnfinishedLastRecordIsCutOff() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        let lock = folder.storeURL.path + "-lock"

        var damaged = Array(bytes.prefix(records[3]))  // drop the close record: a crashed session
        damaged[records[1] + 22] ^= 0x01
        try FSSupport.write(damaged, to: folder.storeURL)
        _ = FileManager.default.createFile(atPath: lock, contents: nil)
        let error = try Self.openError(folder.storeURL)
        #expect(error?.kind == .corrupt)
        #expect(error?.offset == records[1])

        // An unfinished last transaction is cut off; the saves before it are all there.
        try FSSupport.write(Array(bytes.prefix(records[2] + 30)), to: folder.storeURL)
        _ = FileManager.default.createFile(atPath: lock, contents: nil)
        let container = try FSSupport.container(at: folder.storeURL)
        let books = try FSSupport.books(container)
        #expect(books.map(\.title).sorted() == ["Ode 0", "Ode 1", "Ode 2"])
        try FSSupport.close(container)
        let after = try FSSupport.bytes(folder.storeURL)
        #expect(FSSupport.recordOffsets(after) == Array(records[0...2]), "cut at the unfinished record, then a close record")
        #expect(after[records[2] + 4] == 3)
    }

    /// A tail crafted to make recovery quadratic — a plausible record header every 16 bytes,
    /// each claiming most of the rest of the file — is reported as damage, nothing cut, once
    /// the search for an intact record after it has checksummed its budget (four times the
    /// tail). Without the budget this 512 KiB tail meant checksumming about 8 GiB.
    @Test(.timeLimit(.minutes(2))) func aTailCraftedToDefeatRecoveryIsReportedNotSearchedForever() throws {
        let folder = try TemporaryFolder()
        let bytes = try Self.makeCleanStore(folder.storeURL)
        let records = FSSupport.recordOffsets(bytes)
        var damaged = Array(bytes.prefix(records[3]))  // a crashed session: no close record
        let tail = 512 << 10
        var crafted = [UInt8](repeating: 0xA5, count: tail)
        for p in stride(from: 0, to: tail - 64, by: 16) {
            FSSupport.putU32(FileStoreFormat.recordMagic, into: &crafted, at: p)
            FSSupport.putU32(UInt32(tail - p - FileStoreFormat.recordOverhead - 8), into: &crafted, at: p + 8)
        }
        damaged += crafted
        try FSSupport.write(damaged, to: folder.storeURL)
        _ = FileManager.default.createFile(atPath: folder.storeURL.path + "-lock", contents: nil)
        let error = try #require(try Self.openError(folder.storeURL))
        #expect(error.kind == .corrupt && error.offset == records[3], "\(error)")
        #expect(try FSSupport.bytes(folder.storeURL) == damaged, "nothing was cut")
    }

    // MARK: Wrong magic, newer version, random bytes

    @Test func wrongMagicIsNotAStore() throws {
        let folder = try TemporaryFolder()
        var bytes = try Self.makeCleanStore(folder.storeURL)
        bytes.replaceSubrange(0..<8, with: Array("SQLite f".utf8))
        try FSSupport.write(bytes, to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .notAStore, at: 0)

        // The same error comes out of loadPersistentStores, as the CoreDataError's underlying.
        let error = FSSupport.loadError { _ = try FSSupport.container(at: folder.storeURL) }
        #expect(error?.kind == .notAStore)
        #expect(error?.path == FSSupport.path(folder.storeURL))
        #expect(error?.offset == 0)
    }

    /// A version-1 file (CRC-32 record checksums) still opens, takes saves — appended with
    /// its own version's checksum — and reopens strictly: the format change to version 2
    /// (a faster record checksum) loses nobody's store.
    @Test func aVersionOneStoreOpensTakesSavesAndStaysVersionOne() throws {
        let folder = try TemporaryFolder()
        var bytes = try Self.makeCleanStore(folder.storeURL)
        #expect(FSSupport.u32(bytes, at: 8) == FileStoreFormat.version)
        FSSupport.downgrade(&bytes, to: 1)
        for record in FSSupport.recordOffsets(bytes) { FSSupport.fixRecordCRC(&bytes, recordAt: record) }
        try FSSupport.write(bytes, to: folder.storeURL)

        let container = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(container).count == 4)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let b = Book(context: context)
            b.title = "Lamia"
            b.pages = 50
            try context.save()
        }
        try FSSupport.close(container)

        let after = try FSSupport.bytes(folder.storeURL)
        #expect(FSSupport.u32(after, at: 8) == 1)
        // Every record, old and new, carries a CRC-32 (checked independently of the library).
        for record in FSSupport.recordOffsets(after) {
            let crcAt = record + 20 + Int(FSSupport.u32(after, at: record + 8))
            #expect(FSSupport.u32(after, at: crcAt) == FSSupport.crc32(after[record..<crcAt]), "record at \(record)")
        }
        #expect(try Self.openError(folder.storeURL) == nil)
        let reopened = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(reopened).map(\.title).sorted() == ["Endymion", "Lamia", "Ode 0", "Ode 1", "Ode 2"])
        try FSSupport.close(reopened)
    }

    @Test(arguments: [FileStoreFormat.version + 1, 7, UInt32.max])
    func newerFormatVersion(version: UInt32) throws {
        let folder = try TemporaryFolder()
        var bytes = try Self.makeCleanStore(folder.storeURL)
        FSSupport.putU32(version, into: &bytes, at: 8)
        FSSupport.fixHeaderCRC(&bytes)
        try FSSupport.write(bytes, to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .newerFormatVersion(found: version, supported: FileStoreFormat.version), at: 8)
        try? FileManager.default.removeItem(atPath: folder.storeURL.path + "-lock")
        let error = FSSupport.loadError { _ = try FSSupport.container(at: folder.storeURL) }
        #expect(error?.kind == .newerFormatVersion(found: version, supported: FileStoreFormat.version))
        #expect(error?.offset == 8)
    }

    /// A bit flip in the version field fails the header checksum: it is damage, not a file of
    /// a newer format. (It used to be reported as a newer format.)
    @Test func aBitFlipInTheHeaderVersionIsDamageNotANewerFormat() throws {
        let folder = try TemporaryFolder()
        var bytes = try CorruptionTests.makeCleanStore(folder.storeURL)
        bytes[8] ^= 0x01  // 2 → 3; the header checksum no longer matches
        try FSSupport.write(bytes, to: folder.storeURL)
        let error = try CorruptionTests.openError(folder.storeURL)
        #expect(error?.kind == .corrupt, "a header whose checksum fails is reported as \(String(describing: error?.kind))")
    }

    @Test(arguments: [1, 5, 63, 64, 100, 4096, 100_000])
    func randomBytesAreNotAStore(size: Int) throws {
        let folder = try TemporaryFolder()
        var random = FSRandom(seed: UInt64(size))
        var bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        if bytes[0] == UInt8(ascii: "P") { bytes[0] = 0 }
        try FSSupport.write(bytes, to: folder.storeURL)
        try Self.expectDamage(folder.storeURL, .notAStore, at: 0)
    }

    /// A checksum-valid record whose primary key is the largest Int64 (crafted damage) must be
    /// reported or tolerated, not trap. Runs in a child process so a trap cannot take the
    /// test run down.
    @Test func aChecksumValidRecordWithAnExtremeKeyDoesNotCrash() async throws {
        let folder = try TemporaryFolder()
        var bytes = try Self.makeCleanStore(folder.storeURL)
        let first = FSSupport.recordOffsets(bytes)[0]
        // Payload: u16 key count, (i32 entity, i64 next) per entity, u32 entries, then
        // put: u8 op, i32 entity, i64 pk, ...
        let keyCount = Int(bytes[first + 20]) | Int(bytes[first + 21]) << 8
        let firstPut = first + 20 + 2 + 12 * keyCount + 4
        #expect(bytes[firstPut] == 1, "the first entry is a put")
        for i in 0..<8 { bytes[firstPut + 5 + i] = i == 7 ? 0x7F : 0xFF }
        FSSupport.fixRecordCRC(&bytes, recordAt: first)
        try FSSupport.write(bytes, to: folder.storeURL)
        let path = folder.storeURL.path
        await #expect(processExitsWith: .success) { [path = path as String] in
            do {
                let store = try FileStore.open(at: URL(fileURLWithPath: path), model: try Fixtures.model())
                try store.close()
            } catch is FileStoreError {}
        }
    }

    // MARK: Fuzz

    /// Thousands of mutated copies of a valid store go to the opener: each opens (and is read
    /// and closed) or fails with a FileStoreError. Runs in a child process: a crash fails the
    /// test instead of ending the run; the child prints the case it is on.
    @Test func fuzzedStoreFilesGiveOnlyTypedErrors() async throws {
        let folder = try TemporaryFolder()
        try Self.makeCleanStore(folder.storeURL)
        let base = folder.url.appendingPathComponent("base.pkstore")
        try FileManager.default.moveItem(at: folder.storeURL, to: base)
        let dir = folder.url.path
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [dir = dir as String] in
            let outcome = try CorruptionTests.fuzz(folder: URL(fileURLWithPath: dir), cases: 2400, seed: 0x5EED)
            print("fuzz: \(outcome.opened) opened, \(outcome.rejected) rejected")
            if !outcome.unexpected.isEmpty {
                print("unexpected errors:\n" + outcome.unexpected.joined(separator: "\n"))
                exit(1)
            }
        }
        if let result {
            let output = String(decoding: result.standardOutputContent, as: UTF8.self)
            let summary = output.split(separator: "\n").filter { $0.hasPrefix("fuzz:") || $0.hasPrefix("unexpected") || $0.hasPrefix("case") }
            #expect(output.contains("fuzz: "), "the fuzz child did not finish: \(summary.suffix(3))")
            if output.contains("unexpected errors") { Issue.record("\(output.split(separator: "\n").suffix(10).joined(separator: "\n"))") }
            let rejected = output.split(separator: "\n").first { $0.hasPrefix("fuzz:") }
            if let rejected { print("CorruptionTests \(rejected)") }
            #expect(rejected.map { !$0.hasSuffix(" 0 rejected") } ?? false, "the mutations should mostly be rejected")
        }
    }

    struct FuzzOutcome {
        var opened = 0
        var rejected = 0
        var unexpected: [String] = []
    }

    /// Runs the fuzz cases against `folder/base.pkstore` (in the child process).
    static func fuzz(folder: URL, cases: Int, seed: UInt64) throws -> FuzzOutcome {
        let base = try FSSupport.bytes(folder.appendingPathComponent("base.pkstore"))
        let records = FSSupport.recordOffsets(base)
        let url = folder.appendingPathComponent("store.pkstore")
        let lock = url.path + "-lock"
        let model = try Fixtures.model()
        var random = FSRandom(seed: seed)
        var outcome = FuzzOutcome()
        let books = model.entitiesByName["Book"]?.index ?? 0
        let pages = model.entitiesByName["Book"]?.indexByName["pages"] ?? 0
        for n in 0..<cases {
            var bytes = base
            let kind = n % 7
            switch kind {
            case 0:  // flip a few bits
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
                }
            case 1:  // truncate
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
            case 2:  // insert random bytes
                let at = Int.random(in: 0...bytes.count, using: &random)
                bytes.insert(contentsOf: (0..<Int.random(in: 1...32, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, at: at)
            case 3:  // overwrite a range with garbage
                let at = Int.random(in: 0..<bytes.count, using: &random)
                for i in at..<min(bytes.count, at + Int.random(in: 1...64, using: &random)) { bytes[i] = UInt8.random(in: 0...255, using: &random) }
            case 4:  // random garbage file, sometimes behind a valid header
                let garbage = (0..<Int.random(in: 0...512, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                bytes = Bool.random(using: &random) ? Array(base.prefix(64)) + garbage : garbage
            case 5:  // mutate a record's payload and fix its checksum: the decoder sees the damage
                let r = records[Int.random(in: 0..<(records.count - 1), using: &random)]
                let length = Int(FSSupport.u32(bytes, at: r + 8))
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let i = r + 20 + Int.random(in: 0..<max(length, 1), using: &random)
                    if i < r + 20 + length { bytes[i] = UInt8.random(in: 0...255, using: &random) }
                }
                FSSupport.fixRecordCRC(&bytes, recordAt: r)
            default:  // drop or duplicate a whole record
                let i = Int.random(in: 0..<records.count, using: &random)
                let end = i + 1 < records.count ? records[i + 1] : bytes.count
                let record = Array(bytes[records[i]..<end])
                if Bool.random(using: &random) {
                    bytes.removeSubrange(records[i]..<end)
                } else {
                    bytes.insert(contentsOf: record, at: end)
                }
            }
            // Half the cases open as after a crash (a -lock file beside the store).
            let crashed = n % 2 == 1
            try? FileManager.default.removeItem(atPath: lock)
            if crashed { _ = FileManager.default.createFile(atPath: lock, contents: nil) }
            try FSSupport.write(bytes, to: url)
            // Unbuffered, so that the case a crash happened in is in the output.
            let line = Array("case \(n) kind \(kind) crashed \(crashed)\n".utf8)
            _ = line.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            do {
                let store = try FileStore.open(at: url, model: model)
                defer { try? store.close() }
                do {
                    for e in model.entities { _ = try store.fetchRows(entity: e.index, filter: nil) }
                    _ = try store.fetchRows(entity: books, filter: StoreFilter([.init(property: pages, .greaterOrEqual, .integer(101))]))
                    _ = try store.countRows(entity: books, filter: StoreFilter([.init(property: pages, .equal, .integer(400))]))
                } catch is FileStoreError {}
                try store.close()
                outcome.opened += 1
            } catch is FileStoreError {
                outcome.rejected += 1
            } catch {
                outcome.unexpected.append("case \(n) kind \(kind): \(type(of: error)): \(error)")
            }
        }
        return outcome
    }
}
