import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

/// Records whether two pieces of work ever overlapped.
final class OverlapProbe: Sendable {
    private let inside = Atomic<Int>(0)
    private let overlaps = Atomic<Int>(0)
    private let order = TestMutex<[Int]>([])

    func enter(_ tag: Int) {
        if inside.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue != 1 {
            overlaps.wrappingAdd(1, ordering: .relaxed)
        }
        order.withLock { $0.append(tag) }
    }

    func leave() { inside.wrappingSubtract(1, ordering: .sequentiallyConsistent) }

    var overlapCount: Int { overlaps.load(ordering: .relaxed) }
    var recorded: [Int] { order.withLock { $0 } }
}

/// An append-only log shared between threads.
final class OrderLog: Sendable {
    private let storage = TestMutex<[Int]>([])
    func append(_ value: Int) { storage.withLock { $0.append(value) } }
    var values: [Int] { storage.withLock { $0 } }
}

actor ProbeActor: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    let probe: OverlapProbe

    init(container: NSPersistentContainer, context: NSManagedObjectContext, probe: OverlapProbe) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: context)
        self.probe = probe
    }

    func work(_ tag: Int) {
        probe.enter(tag)
        // Touch the context: this traps if the job is not on the context's queue.
        _ = modelContext.hasChanges
        for _ in 0..<50 { _ = Thread.isMainThread }
        probe.leave()
    }

    /// Calls performAndWait on the actor's own context from inside the actor.
    func performAndWaitInline() -> (sameThread: Bool, result: Int) {
        let outer = pthread_self()
        let inner = modelContext.performAndWait { () -> (pthread_t, Int) in (pthread_self(), 42) }
        return (pthread_equal(outer, inner.0) != 0, inner.1)
    }

    func pong(_ other: ProbeActor, remaining: Int) async -> Int {
        if remaining == 0 { return 0 }
        return await other.pong(self, remaining: remaining - 1) + 1
    }
}

/// The guarantees of `NSModelObjectContextExecutor` (Docs/ModelActors.md, numbered as there):
/// one context's actor jobs, `perform` blocks and `performAndWait` calls never overlap and
/// keep FIFO order; model actors calling each other never deadlock; `performAndWait` inside
/// the actor runs inline and blocking callers do not starve the pool; the actor's isolation
/// checks pass exactly on its context's queue; `withContext` runs synchronously inside the
/// actor's isolation.
@Suite("Executor guarantees of a model actor") struct ExecutorGuaranteeTests {
    /// Guarantee 2: actor jobs, perform blocks and performAndWait on one context never
    /// overlap, and perform blocks keep FIFO order.
    @Test func actorJobsPerformAndPerformAndWaitExcludeEachOther() async throws {
        let container = try ActorFixtures.container()
        let context = container.newBackgroundContext()
        let probe = OverlapProbe()
        let actor = ProbeActor(container: container, context: context, probe: probe)
        let fifo = OrderLog()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 0..<500 { await actor.work(i) }
            }
            group.addTask {
                for i in 0..<500 {
                    context.perform {
                        probe.enter(10_000 + i)
                        fifo.append(i)
                        probe.leave()
                    }
                }
            }
            group.addTask {
                for i in 0..<200 {
                    context.performAndWait {
                        probe.enter(20_000 + i)
                        probe.leave()
                    }
                }
            }
        }
        await context.perform(schedule: .enqueued) {}  // everything enqueued before has run
        #expect(probe.overlapCount == 0)
        #expect(fifo.values == Array(0..<500))
        #expect(probe.recorded.count == 1200)
    }

    /// Guarantee 3: two model actors calling each other back and forth never deadlock.
    @Test(.timeLimit(.minutes(1))) func actorsPingPongWithoutDeadlock() async throws {
        let container = try ActorFixtures.container()
        let probe = OverlapProbe()
        let a = ProbeActor(container: container, context: container.newBackgroundContext(), probe: probe)
        let b = ProbeActor(container: container, context: container.newBackgroundContext(), probe: probe)
        let hops = await a.pong(b, remaining: 1000)
        #expect(hops == 1000)
    }

    /// Guarantee 4: performAndWait from inside the actor runs inline on the same thread.
    @Test func performAndWaitInsideActorRunsInline() async throws {
        let container = try ActorFixtures.container()
        let actor = ProbeActor(container: container, context: container.newBackgroundContext(), probe: OverlapProbe())
        let (sameThread, result) = await actor.performAndWaitInline()
        #expect(sameThread)
        #expect(result == 42)
    }

    /// Guarantee 4: 64 concurrent tasks blocking in performAndWait — on their own contexts
    /// and on one shared context — all finish, even though the cooperative pool has only as
    /// many threads as cores.
    @Test(.timeLimit(.minutes(1))) func sixtyFourBlockingCallersDoNotStarveThePool() async throws {
        let container = try ActorFixtures.container()
        let shared = container.newBackgroundContext()
        let done = OrderLog()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask {
                    let context = i.isMultiple(of: 2) ? shared : container.newBackgroundContext()
                    let n = context.performAndWait { () -> Int in
                        let item = Item(context: context)
                        item.count = Int64(i)
                        return context.insertedObjects.count
                    }
                    #expect(n >= 1)
                    done.append(i)
                }
            }
        }
        #expect(done.values.sorted() == Array(0..<64))
    }

    /// Guarantee 5: inside a perform block of the actor's context, the actor's isolation
    /// checks succeed.
    @Test func assumeIsolatedSucceedsInsidePerformBlock() async throws {
        let container = try ActorFixtures.container()
        let context = container.newBackgroundContext()
        let actor = ProbeActor(container: container, context: context, probe: OverlapProbe())
        let value: Int = await context.perform {
            actor.preconditionIsolated()
            return actor.assumeIsolated { isolated in
                isolated.modelContext === context ? 7 : 0
            }
        }
        #expect(value == 7)
    }

    /// Guarantee 5: on another queue, the isolation check traps.
    @Test func assumeIsolatedTrapsOnAnotherQueue() async throws {
        await #expect(processExitsWith: .failure) {
            let container = try ActorFixtures.container()
            let actor = ProbeActor(container: container, context: container.newBackgroundContext(), probe: OverlapProbe())
            let other = container.newBackgroundContext()
            other.performAndWait {
                actor.preconditionIsolated()
            }
        }
    }

    /// Guarantee 6: withContext runs synchronously inside the actor's isolation.
    @Test func withContextIsSynchronousAndIsolated() async throws {
        let container = try ActorFixtures.container()
        let store = ItemStore(container: container)
        let onQueue = await store.withContext { context in
            context.isExecutingOnQueue
        }
        #expect(onQueue)
    }

    /// The async form sends work in and a non-Sendable result out.
    @Test func isolatedWithContextReturnsNonSendableResult() async throws {
        let container = try ActorFixtures.container()
        let store = ItemStore(container: container)
        _ = try await store.createItem(title: "x")
        let item = try await store.withIsolatedContext({ _, context in
            try context.fetch(Item.fetchRequest()).first
        })
        #expect(item != nil)
    }

    /// `await context.perform { }` with a Void block waits for the block (it must not resolve
    /// to the fire-and-forget overload).
    @Test func awaitPerformWithVoidBlockWaits() async throws {
        let container = try ActorFixtures.container()
        let context = container.newBackgroundContext()
        let log = OrderLog()
        for i in 0..<50 {
            await context.perform { log.append(i) }
            #expect(log.values.count == i + 1)
        }
    }

    /// Main-actor code inside another queue's `sync` still holds the main queue, so an
    /// isolation check of a model actor over the view context passes there: off the main
    /// queue the executor answers "unknown" and `checkIsolated` looks again. (The executor
    /// used to answer a definite no, and the runtime trapped.)
    @MainActor @Test func viewContextActorIsIsolatedInsideAnotherQueuesSync() async throws {
        let container = try ActorFixtures.container()
        let actor = ProbeActor(container: container, context: container.viewContext, probe: OverlapProbe())
        #expect(actor.modelExecutor.isIsolatingCurrentContext() == true)
        DispatchQueue.global().sync { actor.preconditionIsolated() }
        DispatchQueue(label: "lock").sync { actor.preconditionIsolated() }
        let offMain = await Task.detached { actor.modelExecutor.isIsolatingCurrentContext() }.value
        #expect(offMain == nil)
        let privateActor = ProbeActor(container: container, context: container.newBackgroundContext(), probe: OverlapProbe())
        #expect(privateActor.modelExecutor.isIsolatingCurrentContext() == false)
    }
}
