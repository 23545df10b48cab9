import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

/// Spins (CPU-bound, holding its thread) until `until()` holds or `limit` passes; whether
/// `until()` held.
func spin(for limit: Duration, until done: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let end = clock.now.advanced(by: limit)
    while clock.now < end {
        if done() { return true }
    }
    return done()
}

/// A flag several threads read.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// Enqueues `body` once on each context with the plain `perform(_:)` — from this thread, not
/// from tasks: with the pool full, tasks would not even start to enqueue theirs — and waits
/// until every block has run.
func runOnEach(_ contexts: [NSManagedObjectContext], _ body: @escaping @Sendable () -> Void) async {
    let finished = Tally()
    let count = contexts.count
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        for context in contexts {
            context.perform {
                body()
                if finished.add(1) == count { done.resume() }
            }
        }
    }
}

/// Work on a context's queue starts promptly however long other contexts' blocks run: a
/// drain Dispatch has not started within a few milliseconds gets a thread of its own
/// (`QueueWatch`), as Dispatch gives a serial queue an overcommit thread.
@Suite("No queue waits behind other contexts' long work", .serialized) struct LongWorkLivenessTests {
    /// `count` contexts each get one CPU-bound block that runs until every block has
    /// started. On two cores the pool runs two; without a thread for each waiting queue the
    /// first blocks spin to their limit, finishing before the others start.
    @Test(.timeLimit(.minutes(2)), arguments: [8, 64])
    func everyLongBlockStartsBeforeAnyFinishes(count: Int) async throws {
        let container = try ActorFixtures.container()
        let contexts = (0..<count).map { _ in container.newBackgroundContext() }
        let started = Tally()
        let sawEveryStart = Tally()
        await runOnEach(contexts) {
            started.add(1)
            if spin(for: .seconds(20), until: { started.count == count }) { sawEveryStart.add(1) }
        }
        #expect(sawEveryStart.count == count, "\(count - sawEveryStart.count) of \(count) blocks finished before every block had started")
        #expect(RescueThreads.shared.mostAlive.load(ordering: .relaxed) <= RescueThreads.cap)
    }

    /// A model actor's job runs while long blocks on other contexts hold the whole pool: the
    /// actor's method ends the blocks, so they end by it, not by their time limit.
    @Test(.timeLimit(.minutes(2))) func aModelActorRunsWhileLongBlocksHoldThePool() async throws {
        let container = try ActorFixtures.container()
        let answered = Flag()
        let spinners = (0..<4).map { _ in container.newBackgroundContext() }
        let stoppedByTheActor = Tally()
        let allSpinning = Tally()
        let store = FlaggingStore(container: container)
        async let spun: Void = runOnEach(spinners) {
            allSpinning.add(1)
            if spin(for: .seconds(20), until: { answered.isSet }) { stoppedByTheActor.add(1) }
        }
        // The call waits for the pool only to come back to this task: the actor's own job
        // sets the flag on a thread of its own.
        await store.set(answered, once: { allSpinning.count == 4 })
        await spun
        #expect(stoppedByTheActor.count == 4, "the actor's job ran only after long blocks gave the pool back")
    }

    /// Hundreds of contexts each blocking a thread: rescue threads never pass their cap, are
    /// reused, and every block runs.
    @Test(.timeLimit(.minutes(2))) func aStormOfBlockedQueuesStaysUnderTheThreadCap() async throws {
        let container = try ActorFixtures.container()
        let contexts = (0..<300).map { _ in container.newBackgroundContext() }
        let ran = Tally()
        await runOnEach(contexts) {
            usleep(20_000)  // blocks its thread, as a synchronous call into I/O would
            ran.add(1)
        }
        #expect(ran.count == 300)
        #expect(RescueThreads.shared.mostAlive.load(ordering: .relaxed) <= RescueThreads.cap)
    }
}

/// A model actor that sets a flag once a condition holds (spinning until it does, up to 20 s).
actor FlaggingStore: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }
    func set(_ flag: Flag, once ready: @Sendable () -> Bool) {
        _ = spin(for: .seconds(20), until: ready)
        flag.set()
    }
}
