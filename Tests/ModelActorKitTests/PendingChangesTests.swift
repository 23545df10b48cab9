import Foundation
import ModelActorKit
import Synchronization
import TestSupport
import Testing

// Core Data's `perform` processes pending changes when its block ends; a model actor's job
// and an awaited `perform` must end the same way. Both failed before their fixes (found in a
// concurrency review).

/// Counts a context's objects-did-change notifications.
private final class DidChangeCounter: Sendable {
    private let count = TestMutex(0)
    private let token = TestMutex<(any NSObjectProtocol)?>(nil)

    init(_ context: NSManagedObjectContext) {
        let t = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil
        ) { [count] _ in count.withLock { $0 += 1 } }
        token.withLock { $0 = t }
    }

    var value: Int { count.withLock { $0 } }

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
}

@Suite struct PendingChangesTests {
    @Test(.timeLimit(.minutes(1))) func anActorJobEndsWithItsChangesProcessed() async throws {
        let container = try ActorFixtures.container()
        let actor = PendingChangesActor(container: container)
        let counter = DidChangeCounter(actor.modelExecutor.context)
        await actor.insertOne()
        await actor.nothing()  // a later job on the same queue: the first one has ended
        #expect(counter.value == 1, "the job that inserted ended without processing its changes")
        try await actor.deleteAll()
        await actor.nothing()
        #expect(counter.value == 2)
        #expect(await actor.deletedCount() == 0, "an inserted object deleted is no longer pending")
        await actor.nothing()
        #expect(counter.value == 2, "a job without changes announces nothing")
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

