import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

// The model-actor guarantees under the concurrency features that came after the executor:
// task-executor preferences (SE-0417), `isolated deinit`, `nonisolated(nonsending)` and
// `@concurrent` functions. No guarantee failed under them; these tests keep it so when the
// executor or the runtime changes.

/// A task executor with one thread of its own, running jobs in the order they come.
final class DedicatedThreadTaskExecutor: TaskExecutor {
    private let jobs = TestMutex<[UnownedJob]>([])  // not `Mutex`: Thread Sanitizer cannot see its futex on Linux
    private let available = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let thread = Atomic<UInt>(0)
    private let started = DispatchSemaphore(value: 0)

    /// The executor's thread (`pthread_self()`).
    var threadID: UInt { thread.load(ordering: .acquiring) }

    init() {
        Thread.detachNewThread { [self] in run() }
        started.wait()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        available.signal()
    }

    /// Ends the thread once the jobs enqueued so far have run.
    func stop() {
        stopped.store(true, ordering: .releasing)
        available.signal()
    }

    private func run() {
        thread.store(currentThreadID(), ordering: .releasing)
        started.signal()
        while true {
            available.wait()
            guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                if stopped.load(ordering: .acquiring) { return }
                continue
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Where a piece of code ran, relative to one context.
struct QueueSpot: Sendable {
    var thread: UInt
    var onMain: Bool
    var ownsQueue: Bool
    /// Running the context's work: off the main thread and owning the queue.
    var isOnQueue: Bool { ownsQueue && !onMain }

    init(_ context: NSManagedObjectContext) {
        thread = currentThreadID()
        onMain = Thread.isMainThread || NSManagedObjectContext.isOnMainQueue
        ownsQueue = context.isExecutingOnQueue
        if ownsQueue { _ = context.hasChanges }  // the queue check traps off the queue in debug builds
    }
}

actor SpotActor: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    let probe: OverlapProbe

    init(container: NSPersistentContainer, context: NSManagedObjectContext? = nil, probe: OverlapProbe = OverlapProbe()) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: context ?? container.newBackgroundContext())
        self.probe = probe
    }

    func here() -> QueueSpot {
        probe.enter(0)
        defer { probe.leave() }
        return QueueSpot(modelContext)
    }

    /// This actor, the other, and this one again.
    func roundTrip(_ other: SpotActor) async -> [QueueSpot] {
        let first = here()
        let second = await other.here()
        return [first, second, here()]
    }

    func viaNonsending(_ other: SpotActor) async -> [QueueSpot] {
        await spotsNonsending(modelContext, other: other)
    }

    func viaConcurrent() async -> (inside: QueueSpot, after: QueueSpot) {
        let inside = await spotConcurrent(modelExecutor.context)
        return (inside, here())
    }
}

nonisolated(nonsending) func spotsNonsending(_ context: NSManagedObjectContext, other: SpotActor) async -> [QueueSpot] {
    let before = QueueSpot(context)
    let elsewhere = await other.here()
    return [before, elsewhere, QueueSpot(context)]
}

@concurrent func spotConcurrent(_ context: NSManagedObjectContext) async -> QueueSpot {
    QueueSpot(context)
}

actor DeinitReportingActor: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    let report: AsyncStream<QueueSpot>.Continuation

    init(container: NSPersistentContainer, report: AsyncStream<QueueSpot>.Continuation) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
        self.report = report
    }

    func touch() {}

    isolated deinit {
        report.yield(QueueSpot(modelContext))
        report.finish()
    }
}

/// Task-executor preferences, isolated deinits and nonsending and concurrent functions on
/// model actors.
@Suite("Model actors under task-executor preferences, isolated deinit and nonsending functions", .timeLimit(.minutes(1))) struct ConcurrencyFeatureInteractionTests {
    /// A task that prefers a task executor of its own still runs model-actor methods and
    /// `perform` blocks on the context's queue, and comes back to its executor's thread.
    @Test func aTaskExecutorPreferenceKeepsActorMethodsOnTheQueue() async throws {
        let container = try ActorFixtures.container()
        let a = SpotActor(container: container), b = SpotActor(container: container)
        let executor = DedicatedThreadTaskExecutor()
        defer { executor.stop() }
        struct Seen: Sendable {
            var before: UInt, inActor: QueueSpot, after: UInt, trip: [QueueSpot], inPerform: QueueSpot
        }
        let seen = await withTaskExecutorPreference(executor) { () async -> Seen in
            let before = currentThreadID()
            let inActor = await a.here()
            let after = currentThreadID()
            let trip = await a.roundTrip(b)
            let context = b.modelExecutor.context
            let inPerform = await context.perform(schedule: .enqueued) { QueueSpot(context) }
            return Seen(before: before, inActor: inActor, after: after, trip: trip, inPerform: inPerform)
        }
        #expect(seen.before == executor.threadID)
        #expect(seen.inActor.isOnQueue)
        #expect(seen.inActor.thread != executor.threadID)
        #expect(seen.after == executor.threadID)
        #expect(seen.trip.allSatisfy { $0.isOnQueue })
        #expect(seen.inPerform.isOnQueue)
    }

    /// Guarantee 4 with task-executor traffic beside it: 64 blocking `performAndWait` callers
    /// and four preferring tasks that hop between two actors, one of them on the shared
    /// context, all finish and never overlap.
    @Test func blockingCallersAndPreferringTasksShareAContext() async throws {
        let container = try ActorFixtures.container()
        let shared = container.newBackgroundContext()
        let probe = OverlapProbe()
        let a = SpotActor(container: container, context: shared, probe: probe)
        let b = SpotActor(container: container)
        let executor = DedicatedThreadTaskExecutor()
        defer { executor.stop() }
        let allOnQueue = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    shared.performAndWait {
                        probe.enter(1)
                        defer { probe.leave() }
                        return shared.isExecutingOnQueue
                    }
                }
            }
            for _ in 0..<4 {
                group.addTask(executorPreference: executor) {
                    var ok = true
                    for _ in 0..<25 { ok = await a.roundTrip(b).allSatisfy { $0.isOnQueue } && ok }
                    return ok
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(allOnQueue)
        #expect(probe.overlapCount == 0)
    }

    /// An `isolated deinit` of a model actor runs on its context's queue, off the main thread.
    @MainActor @Test func anIsolatedDeinitRunsOnTheQueue() async throws {
        let container = try ActorFixtures.container()
        let (reports, continuation) = AsyncStream.makeStream(of: QueueSpot.self)
        var actor: DeinitReportingActor? = DeinitReportingActor(container: container, report: continuation)
        await actor?.touch()
        actor = nil
        var seen: [QueueSpot] = []
        for await spot in reports { seen.append(spot) }
        #expect(seen.count == 1)
        #expect(seen.allSatisfy { $0.isOnQueue })
    }

    /// A `nonisolated(nonsending)` function called from an actor method runs on the actor's
    /// queue, before and after awaiting another actor; a `@concurrent` one leaves it.
    @Test func nonsendingFunctionsStayAndConcurrentOnesLeave() async throws {
        let container = try ActorFixtures.container()
        let a = SpotActor(container: container), b = SpotActor(container: container)
        #expect(await a.viaNonsending(b).allSatisfy { $0.isOnQueue })
        let (inside, after) = await a.viaConcurrent()
        #expect(!inside.ownsQueue)
        #expect(after.isOnQueue)
    }
}
