import Foundation
import ModelActorKit
import Synchronization
import TestSupport
import Testing

// Liveness of a context's queue when threads block on it (found in review: the first and
// the last test failed before their fixes; the second is the form the review met the first
// in, which took 16 s there and depends on how Dispatch adds threads). What they check — that
// work finishes without waiting for a thread Dispatch has yet to add — is observed by
// whether it is done before blocked pool threads come back, or within a bound.

/// A count several threads update.
final class Tally: Sendable {
    private let value = Atomic<Int>(0)
    @discardableResult func add(_ n: Int) -> Int { value.add(n, ordering: .relaxed).newValue }
    var count: Int { value.load(ordering: .relaxed) }
}

/// An actor on its own context that uses another, shared context through performAndWait, as
/// Core Data allows from any queue.
actor SharedContextCaller: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }

    func useShared(_ shared: NSManagedObjectContext, entered: Tally) {
        entered.add(1)
        shared.performAndWait { _ = shared.hasChanges }
    }
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

@Suite struct QueueLivenessTests {
    /// Two plain threads take turns on one context with performAndWait while Dispatch's
    /// global pool is busy with unrelated blocking work: the queue passes from one waiter to
    /// the next directly, as `dispatch_sync` passes a serial queue: all turns are over before
    /// the pool's threads are free again (each pass went through a drain on the global pool
    /// and waited for a free thread: 4.9 s with the pool blocked for 3 s).
    @Test(.timeLimit(.minutes(1))) func performAndWaitPassesStraightToTheNextWaiter() throws {
        let container = try ActorFixtures.container()
        let shared = container.newBackgroundContext()
        // Blocks that hold the global pool's threads (one per core) for 2 s.
        let blockers = DispatchGroup()
        let blockersDone = Tally()
        for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
            DispatchQueue.global().async(group: blockers) {
                sleep(2)
                blockersDone.add(1)
            }
        }
        usleep(100_000)
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
        #expect(blockersDone.count == 0, "the 40 turns waited for the blocked global pool")
        #expect(overlaps.count == 0)
        blockers.wait()
    }

    /// 32 model actors, each on its own context, call performAndWait once on a shared
    /// context that a plain thread holds until the pool threads running their jobs are all
    /// waiting: they get it in turn, promptly (each turn waited for Dispatch to add a thread:
    /// 16 s).
    @Test(.timeLimit(.minutes(1))) func actorJobsWaitingForASharedContextGetItInTurn() async throws {
        let container = try ActorFixtures.container()
        let shared = container.newBackgroundContext()
        let actors = (0..<32).map { _ in SharedContextCaller(container: container) }
        let entered = Tally()
        let held = DispatchSemaphore(value: 0)
        let holder = Thread {
            shared.performAndWait {
                held.signal()
                while entered.count < 2 { usleep(1_000) }  // two jobs are waiting
                usleep(100_000)
            }
        }
        holder.start()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                held.wait()
                c.resume()
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        await withTaskGroup(of: Void.self) { group in
            for a in actors { group.addTask { await a.useShared(shared, entered: entered) } }
        }
        let elapsed = clock.now - start
        #expect(elapsed < .seconds(10), "32 one-line performAndWait calls took \(elapsed)")
    }

    /// X's job on context A inserts, then calls Y on idle context B: B's drain is left to X's
    /// thread, which first ends X's job by posting A's objects-did-change. An observer of it
    /// waits for the main queue while main-actor code calls B.performAndWait: the observer's
    /// round trip completes (B's drain was held through the observer: a deadlock, broken
    /// here only by the observer's 5 s timeout).
    @MainActor @Test(.timeLimit(.minutes(1))) func anObserverOfAnActorsChangesMayWaitForTheMainQueue() async throws {
        let container = try ActorFixtures.container()
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
            guard mainEntering.wait(timeout: .now() + 30) == .success else { return }
            // Main is in B.performAndWait by then; if it came later, the round trip only
            // succeeds without testing anything.
            usleep(50_000)
            let back = DispatchSemaphore(value: 0)
            DispatchQueue.main.async { back.signal() }  // what DispatchQueue.main.sync waits for
            let ok = back.wait(timeout: .now() + 5) == .success
            roundTrip.withLock { $0 = ok }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let task = Task.detached { await x.insertThenCall(y) }
        // Waited for off the main actor, which must stay free until then.
        let observed = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            Thread { c.resume(returning: observing.wait(timeout: .now() + 30) == .success) }.start()
        }
        try #require(observed)
        mainEntering.signal()
        b.performAndWait { _ = b.hasChanges }  // main-actor code using B at that moment
        await task.value
        for _ in 0..<200 where roundTrip.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(50)) }
        #expect(roundTrip.withLock { $0 } == true, "the observer's main-queue round trip timed out")
    }
}
