import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

// Liveness of a context's queue when threads block on it (each test failed before the
// queue did what it checks). The first checks that waiting callers pass a queue among themselves
// without a drain on Dispatch's global pool (counted in debug builds): a drain must wait for
// a free pool thread, which under load took seconds per pass. (A heavier form of it —
// 32 model actors blocking pool threads on one shared context, 16 s before the queue passed
// itself on — is not a test: it starved the pool for the rest of the suite under Thread
// Sanitizer.)

/// A count several threads update.
final class Tally: Sendable {
    private let value = Atomic<Int>(0)
    @discardableResult func add(_ n: Int) -> Int { value.add(n, ordering: .relaxed).newValue }
    var count: Int { value.load(ordering: .relaxed) }
}

/// An actor whose method inserts (so its job ends by processing pending changes) and then
/// calls an actor on another context.
actor HoppingInserter: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    init(container: NSPersistentContainer, context: NSManagedObjectContext) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: context)
    }
    func touch() {}
    func insertThenCall(_ other: HoppingInserter) async {
        _ = Item(context: modelContext)
        await other.touch()
    }
}

@Suite("Liveness of a context's queue when threads block on it") struct QueueLivenessTests {
    /// Two plain threads take turns on one context with performAndWait: the queue passes
    /// from one waiter to the next directly, as `dispatch_sync` passes a serial queue, with
    /// no drain on Dispatch's global pool (each pass went through one, and while the pool's
    /// threads were busy — blocked by unrelated work for 3 s — 40 turns took 4.9 s).
    @Test(.timeLimit(.minutes(5))) func performAndWaitPassesStraightToTheNextWaiter() throws {
        let container = try ActorFixtures.container()
        let shared = container.newBackgroundContext()
        let done = DispatchGroup()
        let inside = Tally()
        let overlaps = Tally()
        for _ in 0..<2 {
            done.enter()
            Thread.detachNewThread {
                for _ in 0..<20 {
                    shared.performAndWait {
                        if inside.add(1) != 1 { overlaps.add(1) }
                        usleep(1_000)
                        inside.add(-1)
                    }
                }
                done.leave()
            }
        }
        done.wait()
        #expect(shared.queue.drainsScheduled.load(ordering: .relaxed) == 0)
        #expect(overlaps.count == 0)
    }

    /// A `performAndWait` caller behind work whose drain Dispatch has not started, as when
    /// every pool thread is blocked, starts that drain on a thread of its own: the work ahead
    /// runs first (FIFO), then the caller's block. Here the pool never gets to the drain, so
    /// without that the caller would wait forever; in the real case it waited for Dispatch to
    /// add a thread (5 s for six callers in a scratch run).
    @Test(.timeLimit(.minutes(1))) func aWaiterStartsADrainDispatchHasNotStarted() throws {
        let container = try ActorFixtures.container()
        let context = container.newBackgroundContext()
        let queue = context.queue
        let ranAhead = Tally()
        #expect(queue.activate(.block { ranAhead.add(1) }))
        queue.markDrainPending()  // handed to Dispatch, which never starts it
        let seenByCaller = context.performAndWait { ranAhead.count }
        #expect(seenByCaller == 1)
        // The caller's rescue or, when the caller was held up past the watcher's bound (a
        // loaded machine), the watcher's: one drain, started off Dispatch either way.
        #expect(queue.drainsRescued.load(ordering: .relaxed) + queue.drainsWatched.load(ordering: .relaxed) == 1)
    }

    /// The same, when no thread can be made: the drain goes back to Dispatch with a new
    /// ticket, and its work item runs it. (The thread's failure used to be
    /// dropped, the ticket was gone, and the caller waited forever.)
    @Test(.timeLimit(.minutes(1))) func aWaiterThatCannotMakeAThreadHandsTheDrainBackToDispatch() throws {
        let container = try ActorFixtures.container()
        let context = container.newBackgroundContext()
        let queue = context.queue
        queue.failsToMakeThreads.store(true, ordering: .relaxed)
        let ranAhead = Tally()
        #expect(queue.activate(.block { ranAhead.add(1) }))
        queue.markDrainPending()  // handed to Dispatch, which never starts this one
        let seenByCaller = context.performAndWait { ranAhead.count }
        #expect(seenByCaller == 1)
        // The caller tries once and then leaves the drain to Dispatch; the watcher may have
        // tried too (each failed try hands the drain back with a new ticket).
        #expect(queue.drainsRescued.load(ordering: .relaxed) <= 1)
        #expect(queue.drainsRescued.load(ordering: .relaxed) + queue.drainsWatched.load(ordering: .relaxed) >= 1)
    }

    /// X's job on context A inserts, then calls Y on idle context B: B's drain is left to X's
    /// thread, which first ends X's job by posting A's objects-did-change. An observer of it
    /// waits for the main queue while main-actor code calls B.performAndWait: the observer's
    /// round trip completes (B's drain was held through the observer: a deadlock, broken
    /// here only by the observer's 20 s timeout).
    ///
    /// Run in a process of its own. The scenario blocks a pool thread until the main actor
    /// gets to it, and in the parallel suite the main actor can be busy with other tests for
    /// long: one run in four on a 2-core machine stalled the whole suite until the
    /// observer's 150 s backstop gave up, and then failed here with 18 other tests timing out
    /// (a ~6-minute `swift test` with 14–19 issues).
    @Test(.timeLimit(.minutes(8))) func anObserverOfAnActorsChangesMayWaitForTheMainQueue() async {
        await #expect(processExitsWith: .success) {
            // The exit code says which stage failed: 1 the round trip, 2 the container,
            // 3 the observer never ran.
            exit(await QueueLivenessTests.observerRoundTripScenario())
        }
    }

    /// The scenario of the test above: 0 when the observer's round trip completed, else the
    /// stage that failed (see the test).
    @MainActor static func observerRoundTripScenario() async -> Int32 {
        guard let container = try? ActorFixtures.container() else { return 2 }
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let x = HoppingInserter(container: container, context: a)
        let y = HoppingInserter(container: container, context: b)
        let observing = DispatchSemaphore(value: 0)
        let mainEntering = DispatchSemaphore(value: 0)
        let roundTrip = TestMutex<Bool?>(nil)
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextObjectsDidChange, object: a, queue: nil
        ) { _ in
            observing.signal()
            // Backstops only, long: under Thread Sanitizer with the whole suite on two cores
            // the main actor once took over 30 s to get here (the clean-clone CI run).
            guard mainEntering.wait(timeout: .now() + 150) == .success else { return }
            // Main is in B.performAndWait by then; if it came later, the round trip only
            // succeeds without testing anything.
            usleep(50_000)
            let back = DispatchSemaphore(value: 0)
            DispatchQueue.main.async { back.signal() }  // what DispatchQueue.main.sync waits for
            let ok = back.wait(timeout: .now() + 20) == .success
            roundTrip.withLock { $0 = ok }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let task = Task.detached { await x.insertThenCall(y) }
        // Waited for off the main actor, which must stay free until then.
        let observed = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            Thread { c.resume(returning: observing.wait(timeout: .now() + 150) == .success) }.start()
        }
        guard observed else { return 3 }
        mainEntering.signal()
        b.performAndWait { _ = b.hasChanges }  // main-actor code using B at that moment
        await task.value
        for _ in 0..<3_600 where roundTrip.withLock({ $0 }) == nil { try? await Task.sleep(for: .milliseconds(50)) }
        return roundTrip.withLock { $0 } == true ? 0 : 1
    }
}
