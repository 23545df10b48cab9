import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

/// Calls that record the thread they ran on, and a synchronous wait on
/// work started on another actor.
extension ProbeActor {
    func signal(_ semaphore: DispatchSemaphore) { semaphore.signal() }

    /// Starts work on `other` with `Task.immediate` (which runs here until it suspends, then
    /// enqueues itself on `other` with no task current) and waits for it synchronously.
    func startImmediatelyThenWait(for other: ProbeActor) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Task.immediate { await other.signal(done) }
        return done.wait(timeout: .now() + 20) == .success
    }

    /// Calls `other` and back `remaining` times; returns the thread of every call, in order.
    func relay(_ other: ProbeActor, remaining: Int) async -> [UInt] {
        probe.enter(remaining)
        _ = modelContext.hasChanges  // traps off the context's queue
        probe.leave()
        let here = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        if remaining == 0 { return [here] }
        return [here] + (await other.relay(self, remaining: remaining - 1))
    }
}

@Suite("Hand-off of a drain between model actors") struct ActorHandoffTests {
    /// A hop from one model actor to an idle one continues on the thread that ran the
    /// caller's job, as the runtime does between plain actors (no Dispatch round trip).
    @Test func hopBetweenIdleModelActorsStaysOnOneThread() async throws {
        let container = try ActorFixtures.container()
        let a = ProbeActor(container: container, context: container.newBackgroundContext(), probe: OverlapProbe())
        let b = ProbeActor(container: container, context: container.newBackgroundContext(), probe: OverlapProbe())
        let threads = await a.relay(b, remaining: 20)  // 21 calls, under the 64-drain bound
        #expect(threads.count == 21)
        #expect(Set(threads).count == 1)
    }

    /// A relay that goes on and on gives its pool thread back: after 64 drains on one thread
    /// the next drain goes through Dispatch (counted in debug builds), so other work on the
    /// pool is not shut out.
    @Test(.timeLimit(.minutes(1))) func longRelayGivesItsThreadBack() async throws {
        let container = try ActorFixtures.container()
        let probes = [OverlapProbe(), OverlapProbe()]
        let a = ProbeActor(container: container, context: container.newBackgroundContext(), probe: probes[0])
        let b = ProbeActor(container: container, context: container.newBackgroundContext(), probe: probes[1])
        #expect(await a.relay(b, remaining: 399).count == 400)
        let scheduled = [a, b].reduce(0) { $0 + $1.modelExecutor.context.queue.drainsScheduled.load(ordering: .relaxed) }
        // One drain started the relay; on the way out alone, each 64 calls on one thread were
        // followed by a new drain through Dispatch.
        #expect(scheduled >= 1 + 400 / 64)
        #expect(probes.allSatisfy { $0.overlapCount == 0 })
    }

    /// The handoff keeps each context exclusive: actors relaying between two contexts while
    /// perform blocks and performAndWait hammer the same contexts never overlap on either.
    @Test(.timeLimit(.minutes(1))) func handoffKeepsContextsExclusive() async throws {
        let container = try ActorFixtures.container()
        let contexts = [container.newBackgroundContext(), container.newBackgroundContext()]
        let probes = [OverlapProbe(), OverlapProbe()]
        let a = ProbeActor(container: container, context: contexts[0], probe: probes[0])
        let b = ProbeActor(container: container, context: contexts[1], probe: probes[1])
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<20 { _ = await a.relay(b, remaining: 50) } }
            }
            for side in 0..<2 {
                let context = contexts[side], probe = probes[side]
                group.addTask {
                    for i in 0..<300 {
                        context.perform {
                            probe.enter(-1 - i)
                            probe.leave()
                        }
                        if i % 3 == 0 {
                            context.performAndWait {
                                probe.enter(-1 - i)
                                probe.leave()
                            }
                        }
                    }
                }
            }
        }
        for context in contexts { await context.perform(schedule: .enqueued) {} }
        #expect(probes[0].overlapCount == 0)
        #expect(probes[1].overlapCount == 0)
        // 4 × 20 relays of 51 calls alternate a, b, a, …: 26 calls on a and 25 on b each.
        #expect(probes[0].recorded.filter { $0 >= 0 }.count == 80 * 26)
        #expect(probes[1].recorded.filter { $0 >= 0 }.count == 80 * 25)
    }

    /// Work a job starts on another model actor and then waits for is never left to the
    /// waiting thread. `Task.immediate` enqueues its task with no task current while
    /// the starting job keeps running; the hand-off once took that for the job's end.
    @Test(.timeLimit(.minutes(1))) func jobThatWaitsForWorkItStartedDoesNotDeadlock() async throws {
        let container = try ActorFixtures.container()
        let a = ProbeActor(container: container, context: container.newBackgroundContext(), probe: OverlapProbe())
        let b = ProbeActor(container: container, context: container.newBackgroundContext(), probe: OverlapProbe())
        #expect(await a.startImmediatelyThenWait(for: b))
    }

    /// An isolated deinit (a job without a task) that releases an actor whose
    /// own isolated deinit runs on another idle context, and waits for it, does not deadlock.
    @Test(.timeLimit(.minutes(1))) func isolatedDeinitWaitingForAnotherDeinitDoesNotDeadlock() async throws {
        let container = try ActorFixtures.container()
        let outcome = DeinitOutcome()
        do {
            // Both made and dropped here, so the waiter holds the only reference to the inner one.
            _ = DeinitWaiter(
                container: container,
                holding: DeinitSignaller(
                    container: container, executor: NSModelObjectContextExecutor(context: container.newBackgroundContext()),
                    signal: outcome.innerDone),
                outcome: outcome)
        }
        // Awaited, not waited for: a blocked pool thread could starve the deinit under test.
        var results = outcome.results.makeAsyncIterator()
        #expect(await results.next() == true)
    }
}

/// What `DeinitWaiter`'s deinit saw: whether the inner deinit finished in time.
final class DeinitOutcome: Sendable {
    let innerDone = DispatchSemaphore(value: 0)
    let results: AsyncStream<Bool>
    let report: AsyncStream<Bool>.Continuation
    init() { (results, report) = AsyncStream.makeStream(of: Bool.self) }
}

/// A model actor whose isolated deinit signals.
actor DeinitSignaller: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    let signal: DispatchSemaphore
    init(container: NSPersistentContainer, executor: NSModelObjectContextExecutor, signal: DispatchSemaphore) {
        modelContainer = container
        modelExecutor = executor
        self.signal = signal
    }
    isolated deinit { signal.signal() }
}

/// A model actor whose isolated deinit releases a `DeinitSignaller` and waits for its deinit.
actor DeinitWaiter: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    var held: DeinitSignaller?
    let outcome: DeinitOutcome
    init(container: NSPersistentContainer, holding held: DeinitSignaller, outcome: DeinitOutcome) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
        self.held = held
        self.outcome = outcome
    }
    isolated deinit {
        held = nil  // the signaller's deinit job goes to its own (idle) context queue
        outcome.report.yield(outcome.innerDone.wait(timeout: .now() + 20) == .success)
    }
}
