import Foundation
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// A child process saves in a loop and is killed with SIGKILL at a random moment; the parent
/// reopens the store after every kill and checks that every save the child acknowledged
/// (over its standard output, a pipe) is there, and that no save is partly there.
///
/// Each save inserts five Books whose `pages` is the save's batch number, sets the single
/// "counter" Shelf's name to the batch number, and rewrites the titles of a few earlier books
/// (suffix `~batch`). So after any crash: every batch has 0 or 5 books, the counter equals the
/// highest batch present, and no title names a batch above the counter.
@Suite("A process killed while saving loses no acknowledged save", .serialized) struct CrashTests {
    /// How many kills each variant runs; 350 in total.
    static let fullKills = 150
    static let normalKills = 100
    static let compactingKills = 100
    /// A fresh store every this many kills, so the store never grows large.
    static let killsPerStore = 10

    @Test func killedWhileSavingWithFullDurability() async throws {
        try await runKills(Self.fullKills, variant: "full")
    }

    @Test func killedWhileSavingWithNormalDurability() async throws {
        try await runKills(Self.normalKills, variant: "normal")
    }

    /// A tiny compaction threshold and many rewrites: kills also land inside compactions.
    @Test func killedWhileSavingAndCompacting() async throws {
        try await runKills(Self.compactingKills, variant: "compacting")
    }

    // MARK: Parent

    private func runKills(_ kills: Int, variant: String) async throws {
        var folder: TemporaryFolder? = nil
        var totalAcknowledged = 0
        var killsAfterAnAck = 0
        var compactions = 0
        defer {
            // The kills must land while saves are happening, not only before the first one.
            #expect(totalAcknowledged > kills, "only \(totalAcknowledged) saves acknowledged in \(kills) kills")
            #expect(killsAfterAnAck > kills / 2, "only \(killsAfterAnAck) of \(kills) kills came after a save returned")
            if variant == "compacting" { #expect(compactions > 0, "the children never compacted") }
            print(
                "CrashTests \(variant): \(kills) kills, \(totalAcknowledged) acknowledged saves, "
                    + "\(killsAfterAnAck) kills after a save, \(compactions) compactions")
        }
        for iteration in 0..<kills {
            if iteration % Self.killsPerStore == 0 {
                folder = nil
                let fresh = try TemporaryFolder("CrashTests\(variant)")
                try Self.seed(fresh.storeURL)
                folder = consume fresh
            }
            guard let url = folder?.storeURL else { return }
            let path = url.path
            let base = Int64(iteration + 1) * 1_000_000
            let delay = UInt32.random(in: 2_000...30_000)
            // Mostly the clock starts once a save returned (kills land in later saves); every
            // fifth child starts it at once (kills also land in opening and recovery).
            let early = iteration % 5 == 0
            let result = await #expect(processExitsWith: .signal(SIGKILL), observing: [\.standardOutputContent]) {
                [path = path as String, variant = variant as String, base = base as Int64, delay = delay as UInt32, early = early as Bool] in
                try CrashTests.child(path: path, variant: variant, base: base, delayMicroseconds: delay, armEarly: early)
            }
            guard let result else { return }
            let acknowledged = Self.acknowledgements(result.standardOutputContent)
            totalAcknowledged += acknowledged.count
            compactions += Self.compactions(result.standardOutputContent)
            if !acknowledged.isEmpty { killsAfterAnAck += 1 }
            let ok = try Self.verify(url, acknowledged: acknowledged, base: base, iteration: iteration, variant: variant)
            if !ok { return }
        }
    }

    /// Creates the store with its counter shelf and closes it cleanly.
    static func seed(_ url: URL) throws {
        let container = try FSSupport.container(at: url)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let counter = Shelf(context: context)
            counter.name = "0"
            try context.save()
        }
        try FSSupport.close(container)
    }

    /// The batches of the lines `ack <batch> <compactions>` the child wrote.
    static func acknowledgements(_ output: [UInt8]) -> [Int64] {
        ackLines(output).compactMap { $0.count == 3 ? Int64($0[1]) : nil }
    }

    /// The compactions the child's store ran before its last acknowledged save.
    static func compactions(_ output: [UInt8]) -> Int {
        ackLines(output).last.flatMap { $0.count == 3 ? Int($0[2]) : nil } ?? 0
    }

    static func ackLines(_ output: [UInt8]) -> [[Substring]] {
        // A kill can cut the last line short; only complete lines count.
        String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { $0.split(separator: " ") }.filter { $0.first == "ack" }
    }

    /// Reopens the store after a kill and checks the invariants. Returns false after a failure.
    static func verify(_ url: URL, acknowledged: [Int64], base: Int64, iteration: Int, variant: String) throws -> Bool {
        let where_ = "variant \(variant), kill #\(iteration)"
        let container: NSPersistentContainer
        do {
            container = try FSSupport.container(at: url)
        } catch {
            Issue.record("reopening after \(where_) failed: \(error)")
            return false
        }
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let books = try context.fetch(Book.fetchRequest())
            let shelves = try context.fetch(Shelf.fetchRequest())
            var perBatch: [Int64: Int] = [:]
            for b in books { perBatch[b.pages, default: 0] += 1 }
            var ok = true
            func check(_ condition: Bool, _ message: @autoclosure () -> String) {
                if !condition {
                    Issue.record("\(where_): \(message())")
                    ok = false
                }
            }
            for (batch, count) in perBatch where count != 5 {
                check(false, "batch \(batch) is partly there: \(count) of 5 books")
            }
            for batch in acknowledged {
                check(perBatch[batch] == 5, "acknowledged batch \(batch) has \(perBatch[batch] ?? 0) of 5 books")
            }
            for b in books {
                check(b.title.hasPrefix("b\(b.pages)-"), "book of batch \(b.pages) has a foreign title \(b.title)")
            }
            check(shelves.count == 1, "expected the one counter shelf, found \(shelves.count)")
            let counter = Int64(shelves.first?.name ?? "") ?? -1
            let highest = perBatch.keys.max() ?? 0
            check(counter == highest, "the counter says batch \(counter) but the highest batch present is \(highest)")
            // Titles rewritten by a save that is not there must not be visible.
            for b in books {
                if let r = b.title.split(separator: "~").last, b.title.contains("~"), let by = Int64(r) {
                    check(by <= counter, "title \(b.title) was rewritten by batch \(by), which is not in the store")
                }
            }
            // This session's batches are consecutive from base+1: none may be missing in between.
            let session = perBatch.keys.filter { $0 > base }.sorted()
            if let last = session.last {
                check(session.count == Int(last - base), "batches of this session are not consecutive: \(session)")
            }
            return ok
        }
    }

    // MARK: Child

    /// Runs in the child process: opens the store, arms a SIGKILL, and saves until killed.
    static func child(path: String, variant: String, base: Int64, delayMicroseconds: UInt32, armEarly: Bool) throws {
        func arm() {
            DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(delayMicroseconds))) {
                kill(getpid(), SIGKILL)
            }
        }
        if armEarly { arm() }
        let url = URL(fileURLWithPath: path)
        let model = try Fixtures.model()
        let context: NSManagedObjectContext
        let store: FileStore
        switch variant {
        case "compacting":
            store = try FileStore.open(at: url, model: model, options: FileStore.Options(compactionThreshold: 2048))
            context = try FSSupport.context(for: store, model: model)
        default:
            let container = try FSSupport.container(at: url, model: model, durability: variant)
            store = try #require(FSSupport.fileStores(container).first)
            context = container.newBackgroundContext()
        }
        try context.performAndWait {
            let counter = try #require(try context.fetch(Shelf.fetchRequest()).first)
            var books = try context.fetch(Book.fetchRequest())
            let rewrites = variant == "compacting" ? 8 : 2
            var batch = base
            var generator = SystemRandomNumberGenerator()
            while true {
                batch += 1
                for i in 0..<5 {
                    let book = Book(context: context)
                    book.title = "b\(batch)-\(i)"
                    book.pages = batch
                    books.append(book)
                }
                counter.name = String(batch)
                for _ in 0..<rewrites {
                    guard let book = books.randomElement(using: &generator), book.pages < batch else { continue }
                    let original = book.title.split(separator: "~").first.map(String.init) ?? book.title
                    book.title = original + "~\(batch)"
                }
                try context.save()
                let line = Array("ack \(batch) \(store.compactionCount)\n".utf8)
                _ = line.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
                // The clock starts after the first acknowledged save, not after opening: a
                // slow machine (CI runs this under Thread Sanitizer) once took longer than the
                // delay to open and save once, so too few kills landed after a save.
                if !armEarly && batch == base + 1 { arm() }
            }
        }
    }
}
