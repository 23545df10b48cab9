import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

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

/// `perform(schedule: .immediate)` called from the context's own queue (a model actor's
/// method, or main-actor code for the view context) runs its block at once, ahead of blocks
/// enqueued earlier, and ends it as a queued block ends: pending changes processed. Called
/// from anywhere else it waits its turn. (From the queue itself it used to wait its turn too.)
@Suite("Immediate perform on the context's own queue") struct ImmediatePerformTests {
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
}
