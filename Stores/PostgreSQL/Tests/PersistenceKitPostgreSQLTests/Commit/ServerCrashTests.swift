import Foundation
import PersistenceKit
import Synchronization
import Testing

@testable import PersistenceKitPostgreSQL

/// The whole server stops, as in a crash, while a process saves: each save in flight gets
/// the store's typed error saying whether it committed, and once the server is back the
/// data is whole and the same store saves again without being reopened.
@Suite("PostgreSQL store: the server crashes mid-save", .enabled(if: PrivateServer.isConfigured, PrivateServer.skipReason))
struct ServerCrashTests {
    /// What became of one save of the stream.
    enum Outcome: Sendable, Equatable {
        /// `save()` returned: the save must be in the database.
        case acknowledged
        /// `save()` threw this store error (`kind`, and for a lost commit its outcome).
        case failed(PostgreSQLStoreError.Kind, PostgreSQLStoreError.CommitOutcome?)
    }

    /// The stream's shared state: the saves' outcomes by number, and the flag that stops it.
    final class Stream: Sendable {
        let outcomes = Mutex<[Int: Outcome]>([:])
        let stop = Atomic<Bool>(false)
    }

    /// Saves `n`: two books `n-a` and `n-b` put on the shelf (whose to-many end the store
    /// updates in the same transaction), and the shelf renamed `n`.
    static func save(_ n: Int, shelf: NSManagedObjectID, in container: NSPersistentContainer) async -> Result<Void, any Error> {
        let ctx = container.newBackgroundContext()
        ctx.mergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
        return await ctx.perform {
            Result {
                guard let s = try ctx.existingObject(with: shelf) as? Shelf else { return }
                for side in ["a", "b"] {
                    let b = Book(context: ctx)
                    b.title = "\(n)-\(side)"
                    b.shelf = s
                }
                s.name = "\(n)"
                try ctx.save()
            }
        }
    }

    /// The store error behind a failed save.
    static func storeError(_ error: any Error) -> PostgreSQLStoreError? {
        (error as? CoreDataError)?.underlying as? PostgreSQLStoreError ?? error as? PostgreSQLStoreError
    }

    @Test("Crashes at random points of a stream of saves: every acknowledged save is whole, no save is half there, links agree")
    func crashesMidSave() async throws {
        let server = try PrivateServer()
        let model = try Models.bookshelf()
        PostgreSQLStore.register()
        let container = NSPersistentContainer(name: "Crash", managedObjectModel: model)
        let description = NSPersistentStoreDescription(url: try server.url, type: NSPostgreSQLStoreType)
        description.setOption("false", forKey: PostgreSQLStore.listensOptionKey)
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        let setup = container.newBackgroundContext()
        let shelf = try await setup.perform {
            let s = Shelf(context: setup)
            s.name = "start"
            try setup.save()
            return s.objectID
        }

        let stream = Stream()
        var next = 0
        // Five crashes, and more (up to twelve) until one has landed inside a commit rather
        // than in the save's read of the shelf or between saves.
        var round = 0
        while round < 5 || (round < 12 && !Self.anyLostCommit(stream)) {
            defer { round += 1 }
            stream.stop.store(false, ordering: .releasing)
            let first = next
            let saver = Task.detached { () -> Int in
                var n = first
                while !stream.stop.load(ordering: .acquiring) {
                    let result = await Self.save(n, shelf: shelf, in: container)
                    let outcome: Outcome
                    switch result {
                    case .success: outcome = .acknowledged
                    case let .failure(error):
                        let e = Self.storeError(error)
                        outcome = .failed(e?.kind ?? .query, e?.commitOutcome)
                        #expect(e != nil, "a save failed with an error that is not the store's: \(error)")
                    }
                    stream.outcomes.withLock { $0[n] = outcome }
                    n += 1
                    // The server is down: the stream ends with its first failed save.
                    if outcome != .acknowledged { break }
                }
                return n
            }
            // The stream runs (three saves acknowledged), then the server dies at a random
            // point of the saves that follow.
            let deadline = ContinuousClock.now + .seconds(10)
            while stream.outcomes.withLock({ o in (first..<(first + 3)).filter { o[$0] == .acknowledged }.count }) < 3 {
                #expect(ContinuousClock.now < deadline, "the saves did not start in round \(round)")
                if ContinuousClock.now >= deadline { break }
                try await Task.sleep(for: .milliseconds(2))
            }
            try await Task.sleep(for: .microseconds(Int.random(in: 0..<30_000)))
            try server.kill()
            stream.stop.store(true, ordering: .releasing)
            next = await saver.value
            try server.start()
            try Self.expectWhole(server: server, outcomes: stream.outcomes.withLock { $0 }, upTo: next)

            // The same store saves again: its dropped connections are replaced.
            let result = await Self.save(next, shelf: shelf, in: container)
            var outcome = Outcome.acknowledged
            if case let .failure(error) = result {
                Issue.record("the first save after the restart failed (\(String(describing: Self.storeError(error)?.kind))): \(error)")
                outcome = .failed(Self.storeError(error)?.kind ?? .query, Self.storeError(error)?.commitOutcome)
            }
            stream.outcomes.withLock { $0[next] = outcome }
            next += 1
        }
        try Self.expectWhole(server: server, outcomes: stream.outcomes.withLock { $0 }, upTo: next)
        #expect(Self.anyLostCommit(stream), "no crash landed inside a commit")
    }

    /// Whether a save of the stream lost its connection while committing.
    static func anyLostCommit(_ stream: Stream) -> Bool {
        stream.outcomes.withLock { $0.values.contains { if case .failed(.connectionLostDuringCommit, _) = $0 { true } else { false } } }
    }

    /// Checks the database against what the saves were told: an acknowledged save (or one
    /// reported committed) is there whole, one reported not committed (or that failed before
    /// its transaction) is absent, one whose outcome is unknown is wholly there or absent;
    /// every book's shelf is stored (the shelf's to-many is read from the books).
    static func expectWhole(server: PrivateServer, outcomes: [Int: Outcome], upTo end: Int) throws {
        let admin = try AdminConnection(url: try server.url)
        let titles = Set(try admin.column("SELECT title FROM \"public\".\"Book\""))
        for n in 0..<end {
            let present = [titles.contains("\(n)-a"), titles.contains("\(n)-b")]
            #expect(present[0] == present[1], "save \(n) is half there")
            let outcome = outcomes[n]
            switch outcome {
            case .acknowledged?, .failed(.connectionLostDuringCommit, .committed?)?:
                #expect(present[0], "save \(n) (\(String(describing: outcome))) is missing")
            case .failed(.connectionLostDuringCommit, .unknown?)?:
                break
            default:
                #expect(!present[0], "save \(n) (\(String(describing: outcome))) is in the database")
            }
        }
        #expect(titles.count % 2 == 0)
        // The shelf's books are read from the books' `shelf` column: a book naming a shelf
        // that is not stored would be a link on one side only.
        let listed = try admin.column(
            "SELECT b._pk::text FROM \"public\".\"Book\" b JOIN \"public\".\"Shelf\" s ON s._pk = b.shelf").sorted()
        let naming = try admin.column("SELECT _pk::text FROM \"public\".\"Book\" WHERE shelf IS NOT NULL").sorted()
        #expect(listed == naming, "a book names a shelf that is not stored")
        #expect(naming.count == titles.count)
    }
}
