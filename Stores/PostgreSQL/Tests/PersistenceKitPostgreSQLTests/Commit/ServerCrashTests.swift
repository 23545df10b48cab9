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
        // Five crashes at random points: in the save's read of the shelf, in one of its round
        // trips, or between saves.
        for round in 0..<5 {
            next = try await Self.crashRound(round, from: next, stream: stream, shelf: shelf, container: container, server: server) {
                try await Task.sleep(for: .microseconds(Int.random(in: 0..<30_000)))
            }
        }
        // One crash inside a commit, which random points reach only now and then (a save's
        // COMMIT is one short round trip): a deferred trigger makes each COMMIT that writes
        // a book sleep on the server, and the server dies once a backend is seen sleeping.
        let admin = try AdminConnection(url: try server.url)
        try admin.run(
            """
            CREATE FUNCTION "public".pk_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER pk_slow_commit AFTER INSERT ON "public"."Book"
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "public".pk_slow_commit();
            """)
        next = try await Self.crashRound(
            5, from: next, acknowledgedFirst: 0, stream: stream, shelf: shelf, container: container, server: server
        ) {
            let deadline = ContinuousClock.now + .seconds(30)
            while try admin.column(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query = 'COMMIT'") == ["0"]
            {
                #expect(ContinuousClock.now < deadline, "no COMMIT was seen running its deferred trigger")
                if ContinuousClock.now >= deadline { break }
                try await Task.sleep(for: .milliseconds(2))
            }
        } beforeLastSave: {
            let restarted = try AdminConnection(url: try server.url)
            try restarted.run("DROP TRIGGER pk_slow_commit ON \"public\".\"Book\"; DROP FUNCTION \"public\".pk_slow_commit()")
        }
        try Self.expectWhole(server: server, outcomes: stream.outcomes.withLock { $0 }, upTo: next)
        #expect(Self.anyLostCommit(stream), "no crash landed inside a commit")
    }

    /// One round: a stream of saves numbered from `first` runs until `acknowledgedFirst` of
    /// them are acknowledged and `killWhen` returns; then the server dies, the stream ends with its first failed
    /// save, the server starts again, the database is checked against what each save was
    /// told, and the same store saves once more (its dropped connections replaced). Returns
    /// the next save's number.
    static func crashRound(
        _ round: Int, from first: Int, acknowledgedFirst: Int = 3, stream: Stream, shelf: NSManagedObjectID, container: NSPersistentContainer,
        server: PrivateServer, killWhen: () async throws -> Void, beforeLastSave: () throws -> Void = {}
    ) async throws -> Int {
        stream.stop.store(false, ordering: .releasing)
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
        let deadline = ContinuousClock.now + .seconds(30)
        while stream.outcomes.withLock({ o in (first..<(first + acknowledgedFirst)).filter { o[$0] == .acknowledged }.count })
            < acknowledgedFirst
        {
            #expect(ContinuousClock.now < deadline, "the saves did not start in round \(round)")
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        try await killWhen()
        try server.kill()
        stream.stop.store(true, ordering: .releasing)
        var next = await saver.value
        try server.start()
        try Self.expectWhole(server: server, outcomes: stream.outcomes.withLock { $0 }, upTo: next)
        try beforeLastSave()

        let result = await Self.save(next, shelf: shelf, in: container)
        var outcome = Outcome.acknowledged
        if case let .failure(error) = result {
            Issue.record("the first save after the restart in round \(round) failed (\(String(describing: Self.storeError(error)?.kind))): \(error)")
            outcome = .failed(Self.storeError(error)?.kind ?? .query, Self.storeError(error)?.commitOutcome)
        }
        stream.outcomes.withLock { $0[next] = outcome }
        next += 1
        return next
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
