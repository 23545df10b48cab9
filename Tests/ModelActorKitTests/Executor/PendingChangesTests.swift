import Foundation
import ModelActorKit
import Synchronization
import TestSupport
import Testing

// Core Data's `perform` processes pending changes when its block ends; a model actor's job
// and an awaited `perform` must end the same way. Neither did, before the executor
// and `perform` were made to.

/// Counts a context's objects-did-change notifications, and the inserted objects they list.
private final class DidChangeCounter: Sendable {
    private let count = TestMutex(0)
    private let inserted = TestMutex(0)
    private let token = TestMutex<(any NSObjectProtocol)?>(nil)

    init(_ context: NSManagedObjectContext) {
        let t = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil
        ) { [count, inserted] note in
            count.withLock { $0 += 1 }
            let objects = note.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject> ?? []
            inserted.withLock { $0 += objects.count }
        }
        token.withLock { $0 = t }
    }

    var value: Int { count.withLock { $0 } }
    var insertedTotal: Int { inserted.withLock { $0 } }

    deinit {
        if let t = token.withLock({ $0 }) { NotificationCenter.default.removeObserver(t) }
    }
}

private actor PendingChangesActor: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor

    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }

    func insertOne() { _ = Item(context: modelContext) }
    func deleteAll() throws { for item in try modelContext.fetch(Item.fetchRequest()) { modelContext.delete(item) } }
    func nothing() {}
    func deletedCount() -> Int { modelContext.deletedObjects.count }

    func make() throws -> NSManagedObjectID {
        let item = Item(context: modelContext)
        try modelContext.save()
        return item.objectID
    }

    /// Whether the object was registered (and so refreshed).
    func refresh(_ id: NSManagedObjectID) -> Bool {
        guard let object = modelContext.registeredObject(for: id) else { return false }
        modelContext.refresh(object, mergeChanges: false)
        return true
    }
}

@Suite("A model actor's job ends with its pending changes processed") struct PendingChangesTests {
    /// Waits until every job enqueued on `actor`'s queue so far has ended, and returns
    /// `counter` as it stood then. Not `await actor.nothing()`: Swift does not leave an
    /// actor's executor between two awaited calls into it from one task, so such a call runs
    /// in the same job as the one before and the caller resumes before that job's end.
    /// (Tests that used it as a barrier read the count too early in most runs.)
    /// Read inside the barrier block, not after it: a `perform` block processes pending
    /// changes when it ends, so a count read after it passed even with actor jobs that
    /// processed nothing (a build without the executor's end-of-job hook passed that way).
    private func settle(_ actor: some NSModelActor, _ counter: DidChangeCounter) async -> (value: Int, inserted: Int) {
        await actor.modelExecutor.context.perform(schedule: .enqueued) { (counter.value, counter.insertedTotal) }
    }

    @Test(.timeLimit(.minutes(1))) func anActorJobEndsWithItsChangesProcessed() async throws {
        let container = try ActorFixtures.container()
        let actor = PendingChangesActor(container: container)
        let counter = DidChangeCounter(actor.modelExecutor.context)
        await actor.insertOne()
        #expect(await settle(actor, counter).value == 1, "the job that inserted ended without processing its changes")
        try await actor.deleteAll()
        #expect(await settle(actor, counter).value == 2)
        #expect(await actor.deletedCount() == 0, "an inserted object deleted is no longer pending")
        await actor.nothing()
        #expect(await settle(actor, counter).value == 2, "a job without changes announces nothing")
    }

    @Test(.timeLimit(.minutes(1))) func aRefreshInAnActorMethodIsAnnouncedWhenTheJobEnds() async throws {
        let container = try ActorFixtures.container()
        let actor = PendingChangesActor(container: container)
        let id = try await actor.make()
        let counter = DidChangeCounter(actor.modelExecutor.context)
        #expect(await actor.refresh(id))
        #expect(await settle(actor, counter).value == 1)
    }

    @Test(.timeLimit(.minutes(1))) func consecutiveCallsIntoAnActorAreAnnouncedTogether() async throws {
        // What the runtime does today: the two calls share one job, so one announcement
        // lists both inserts. Were the runtime to hop between them, two announcements
        // would list one each; either way nothing is lost or announced twice.
        let container = try ActorFixtures.container()
        let actor = PendingChangesActor(container: container)
        let counter = DidChangeCounter(actor.modelExecutor.context)
        await actor.insertOne()
        await actor.insertOne()
        let settled = await settle(actor, counter)
        #expect(settled.inserted == 2)
        #expect((1...2).contains(settled.value))
    }

    /// Whether the awaited `perform` that `insert` makes returned while its block's
    /// objects-did-change was still being posted.
    private func returnedBeforeAnnouncement(
        _ insert: @escaping @Sendable (NSManagedObjectContext) async throws -> Void
    ) async throws -> Bool? {
        let container = try ActorFixtures.container(name: "pending-\(UUID().uuidString)")
        let context = container.newBackgroundContext()
        let returned = DispatchSemaphore(value: 0)
        let early = TestMutex<Bool?>(nil)
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil
        ) { _ in
            // `perform` cannot have returned while this observer runs, so the wait times out;
            // before the fix the caller resumed inside the block and signalled at once.
            let signalled = returned.wait(timeout: .now() + 0.5) == .success
            early.withLock { $0 = signalled }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try await insert(context)
        returned.signal()
        await context.perform(schedule: .enqueued) {}  // the announcement has run by now
        return early.withLock { $0 }
    }

    @Test(.timeLimit(.minutes(1))) func anAwaitedPerformReturnsAfterItsChangesAreAnnounced() async throws {
        let plain = try await returnedBeforeAnnouncement { context in
            await context.perform(schedule: .enqueued) { _ = Item(context: context) }
        }
        #expect(plain == false)
        let returningValue = try await returnedBeforeAnnouncement { context in
            let count = try await context.perform(schedule: .enqueued) { () throws -> Int in
                _ = Item(context: context)
                return context.insertedObjects.count
            }
            #expect(count == 1)
        }
        #expect(returningValue == false)
    }
}
