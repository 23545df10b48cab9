import Foundation
import ModelActorKit
import Synchronization
import TestSupport
import Testing

// Regressions from a concurrency review; each test failed before its fix. The deadlock
// tests watch their threads with a timeout instead of hanging the run.

/// Enqueues `block` with the fire-and-forget `perform(_:)`.
private func enqueue(_ context: NSManagedObjectContext, _ block: @escaping @Sendable () -> Void) {
    context.perform(block)
}

/// The order in which blocks ran.
private final class RunOrder: Sendable {
    private let storage = TestMutex<[String]>([])
    func append(_ value: String) { storage.withLock { $0.append(value) } }
    var values: [String] { storage.withLock { $0 } }
}

private actor ImmediateActor: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor

    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }

    /// Enqueues a block, then asks for an immediate one from the queue itself.
    func immediate(_ order: RunOrder) async {
        #expect(modelContext.isExecutingOnQueue)
        enqueue(modelContext) { order.append("enqueued earlier") }
        await modelContext.perform(schedule: .immediate) { order.append("immediate") }
    }

    /// Inserts an object in an immediate block run inline; returns how many objects-did-change
    /// notifications the context posted by the time the block returned.
    func insertInline() async -> Int {
        let posted = TestMutex(0)
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextObjectsDidChange, object: modelContext, queue: nil
        ) { _ in posted.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(token) }
        let context = modelContext
        await context.perform(schedule: .immediate) { _ = Item(context: context) }
        return posted.withLock { $0 }
    }

    /// The same with the form that returns a value.
    func immediateValue(_ order: RunOrder) async -> Int {
        enqueue(modelContext) { order.append("enqueued earlier") }
        return await modelContext.perform(schedule: .immediate) { () -> Int in
            order.append("immediate")
            return 1
        }
    }
}

@Suite struct ConcurrencyReviewTests {
    // MARK: perform(schedule: .immediate) on the context's own queue runs at once

    @Test(.timeLimit(.minutes(1))) func immediatePerformFromAModelActorRunsAtOnce() async throws {
        let actor = ImmediateActor(container: try ActorFixtures.container())
        let order = RunOrder()
        await actor.immediate(order)
        await actor.modelExecutor.context.perform(schedule: .enqueued) {}
        #expect(order.values == ["immediate", "enqueued earlier"])
    }

    @Test(.timeLimit(.minutes(1))) func immediateValuePerformFromAModelActorRunsAtOnce() async throws {
        let actor = ImmediateActor(container: try ActorFixtures.container())
        let order = RunOrder()
        #expect(await actor.immediateValue(order) == 1)
        await actor.modelExecutor.context.perform(schedule: .enqueued) {}
        #expect(order.values == ["immediate", "enqueued earlier"])
    }

    @MainActor @Test(.timeLimit(.minutes(1))) func immediatePerformOnTheViewContextFromTheMainActorRunsAtOnce() async throws {
        let view = try ActorFixtures.container().viewContext
        let order = RunOrder()
        enqueue(view) { order.append("enqueued earlier") }
        await view.perform(schedule: .immediate) { order.append("immediate") }
        await view.perform(schedule: .enqueued) {}
        #expect(order.values == ["immediate", "enqueued earlier"])
    }

    @Test(.timeLimit(.minutes(1))) func immediatePerformFromElsewhereStillWaitsItsTurn() async throws {
        let context = try ActorFixtures.container().newBackgroundContext()
        let order = RunOrder()
        enqueue(context) { order.append("enqueued earlier") }
        await context.perform(schedule: .immediate) { order.append("immediate") }
        #expect(order.values == ["enqueued earlier", "immediate"])
    }

    /// An immediate block run inline ends like a queued one: pending changes processed,
    /// objects-did-change posted.
    @Test(.timeLimit(.minutes(1))) func anInlineImmediateBlockProcessesPendingChanges() async throws {
        let actor = ImmediateActor(container: try ActorFixtures.container())
        #expect(await actor.insertInline() == 1)
    }

    // MARK: releasing contexts and stores never deadlocks

    /// A context's deinit removes it from the coordinator's merge observers under a lock;
    /// walking that list retained other contexts, and the last release of one inside the
    /// lock ran its deinit there, which took the lock again.
    @Test func autoMergingContextsReleasedOnTwoThreadsDoNotDeadlock() throws {
        let container = try ActorFixtures.container()
        let progress = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread.detachNewThread {
                for _ in 0..<5_000 {
                    let c = container.newBackgroundContext()
                    c.performAndWait { c.automaticallyMergesChangesFromParent = true }
                    progress.add(1, ordering: .relaxed)
                }
                done.signal()
            }
        }
        let finished = done.wait(timeout: .now() + 120) == .success && done.wait(timeout: .now() + 30) == .success
        #expect(finished, "deadlocked after \(progress.load(ordering: .relaxed)) of 10000 contexts")
    }

    /// The same through turning merging on and off on one context while another thread
    /// drops contexts.
    @Test func togglingMergesWhileContextsAreReleasedDoesNotDeadlock() throws {
        let container = try ActorFixtures.container()
        let stop = Atomic<Bool>(false)
        let progress = Atomic<Int>(0)
        let bothDone = DispatchSemaphore(value: 0)
        let toggler = container.newBackgroundContext()
        Thread.detachNewThread {
            while !stop.load(ordering: .relaxed) {
                toggler.performAndWait {
                    toggler.automaticallyMergesChangesFromParent = true
                    toggler.automaticallyMergesChangesFromParent = false
                }
            }
            bothDone.signal()
        }
        Thread.detachNewThread {
            for _ in 0..<10_000 {
                let c = container.newBackgroundContext()
                c.performAndWait { c.automaticallyMergesChangesFromParent = true }
                progress.add(1, ordering: .relaxed)
            }
            stop.store(true, ordering: .relaxed)
            bothDone.signal()
        }
        let finished = bothDone.wait(timeout: .now() + 120) == .success && bothDone.wait(timeout: .now() + 30) == .success
        stop.store(true, ordering: .relaxed)
        #expect(finished, "deadlocked after \(progress.load(ordering: .relaxed)) of 10000 contexts")
    }

    /// Opening a store found in the process's table of open stores retained it; when the
    /// open then threw (another durability) and that was the last reference, the store's
    /// close ran inside the table's lock and took it again.
    @Test func openingAStoreAnotherThreadDropsDoesNotDeadlock() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("registry-\(UUID().uuidString).store")
        defer { for suffix in ["", "-lock", "-compact", "-new"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
        let progress = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for durability in [FileStore.Durability.full, .normal] {
            Thread.detachNewThread {
                for _ in 0..<3_000 {
                    _ = try? FileStore.open(at: url, model: model, options: .init(durability: durability))
                    progress.add(1, ordering: .relaxed)
                }
                done.signal()
            }
        }
        let finished = done.wait(timeout: .now() + 120) == .success && done.wait(timeout: .now() + 30) == .success
        #expect(finished, "deadlocked after \(progress.load(ordering: .relaxed)) of 6000 opens")
    }

    // MARK: test containers

    /// A test that keeps its store (say, to check its file) and ends: the next test
    /// container of that name must not be handed the old, still open store, rows and all.
    @Test func aStoreOutlivingItsTestContainerDoesNotLeakIntoTheNext() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let name = "outliving-store-\(UUID().uuidString)"
        var leftover: (any PersistentStore)?
        do {
            let first = try NSPersistentContainer.makeTest(model: model, testName: name)
            let context = first.newBackgroundContext()
            try context.performAndWait {
                Item(context: context).title = "old"
                try context.save()
            }
            leftover = first.persistentStoreCoordinator.persistentStores.first
        }
        let next = try NSPersistentContainer.makeTest(model: model, testName: name)
        let context = next.newBackgroundContext()
        let titles = try context.performAndWait { try context.fetch(Item.fetchRequest()).map(\.title) }
        #expect(titles == [])
        withExtendedLifetime(leftover) {}
    }
}
