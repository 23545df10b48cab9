import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

// The context queue's guarantees: FIFO order, reentrant and exclusive performAndWait,
// async perform(schedule:), no starvation of the cooperative pool, and the main queue.
// Every test asserts order and thread identity directly; none sleeps.

/// A thread-safe append-only log of values.
private final class QueueLog<Element: Sendable>: Sendable {
    private let items = TestMutex<[Element]>([])
    func append(_ e: Element) { items.withLock { $0.append(e) } }
    var values: [Element] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}

/// Counts how many blocks are inside a critical region at once and remembers the maximum.
private final class OverlapDetector: Sendable {
    private let inside = Atomic<Int>(0)
    private let maximum = Atomic<Int>(0)
    private let entries = Atomic<Int>(0)

    func enter() {
        let now = inside.add(1, ordering: .sequentiallyConsistent).newValue
        _ = maximum.max(now, ordering: .sequentiallyConsistent)
        _ = entries.add(1, ordering: .relaxed)
    }

    func leave() { _ = inside.subtract(1, ordering: .sequentiallyConsistent) }

    var maxInside: Int { maximum.load(ordering: .sequentiallyConsistent) }
    var entryCount: Int { entries.load(ordering: .sequentiallyConsistent) }
}

/// Whether the caller runs on the main dispatch queue (the main actor's executor).
///
/// `Thread.isMainThread` is not usable for this on Linux: under the test runner (and any
/// async `main`) the process's main thread parks in `dispatchMain()` and a Dispatch worker
/// thread drains the main queue, so main-actor code sees `Thread.isMainThread == false`.
/// A queue-specific value set by the test itself marks the main queue wherever it runs.
private func onMainQueue() -> Bool {
    DispatchQueue.getSpecific(key: mainQueueMarker) != nil
}

private let mainQueueMarker: DispatchSpecificKey<UInt8> = {
    let key = DispatchSpecificKey<UInt8>()
    DispatchQueue.main.setSpecific(key: key, value: 1)
    return key
}()

/// A shareable atomic integer (a local `Atomic` cannot be captured by escaping closures).
private final class Counter: Sendable {
    private let value = Atomic<UInt>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    func store(_ v: UInt) { value.store(v, ordering: .relaxed) }
    var load: UInt { value.load(ordering: .relaxed) }
}

private struct QueueTestError: Error, Equatable {
    let code: Int
}

/// Enqueues a `perform` block. A synchronous wrapper: in an async function a bare
/// `context.perform { }` resolves to the async overload (as with Core Data on Apple platforms).
private func enqueue(_ context: NSManagedObjectContext, _ block: @escaping @Sendable () -> Void) {
    context.perform(block)
}

/// Waits until every block enqueued on `context` so far has run (FIFO makes this exact).
private func drain(_ context: NSManagedObjectContext) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        context.perform { c.resume() }
    }
}

@Suite("Context queues: perform, performAndWait and the main queue") struct QueueTests {
    // MARK: FIFO

    @Test func tenThousandPerformBlocksRunInFIFOOrder() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = QueueLog<Int>()
        let offQueue = Counter()
        for i in 0..<10_000 {
            enqueue(context) {
                if !context.queue.isCurrent { offQueue.increment() }
                log.append(i)
            }
        }
        await drain(context)
        #expect(log.count == 10_000)
        #expect(log.values == Array(0..<10_000))
        #expect(offQueue.load == 0)
    }

    @Test func performAndWaitAfterPerformsRunsAfterAllOfThem() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = QueueLog<Int>()
        // More than one drain batch, so the hand-over to the waiting caller crosses batches.
        for i in 0..<1_000 { context.perform { log.append(i) } }
        let seen = context.performAndWait { log.values }
        #expect(seen == Array(0..<1_000))
        // And blocks enqueued after the performAndWait still run, in order.
        for i in 1_000..<1_300 { context.perform { log.append(i) } }
        let all = context.performAndWait { log.values }
        #expect(all == Array(0..<1_300))
    }

    @Test func performOrderIsPreservedPerProducerWithConcurrentProducers() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = QueueLog<(producer: Int, index: Int)>()
        let producers = 8, perProducer = 1_000
        await withTaskGroup(of: Void.self) { group in
            for p in 0..<producers {
                group.addTask {
                    for i in 0..<perProducer { enqueue(context) { log.append((p, i)) } }
                }
            }
        }
        await drain(context)
        let values = log.values
        #expect(values.count == producers * perProducer)
        for p in 0..<producers {
            #expect(values.filter { $0.producer == p }.map(\.index) == Array(0..<perProducer))
        }
    }

    // MARK: performAndWait

    @Test func performAndWaitReturnsTheBlocksValueAndRunsOnTheQueue() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (onQueue, count): (Bool, Int) = try context.performAndWait {
            let book = Book(context: context)
            book.title = "Dune"
            #expect(context.hasChanges)
            try context.save()
            return (context.queue.isCurrent, try context.count(for: Book.fetchRequest()))
        }
        #expect(onQueue)
        #expect(count == 1)
        #expect(!context.queue.isCurrent)
    }

    @Test func performAndWaitRethrowsTheBlocksError() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        #expect(throws: QueueTestError(code: 7)) {
            try context.performAndWait { () throws -> Int in throw QueueTestError(code: 7) }
        }
        // The queue is free again after the throw.
        let after = context.performAndWait { context.queue.isCurrent }
        #expect(after)
        let log = QueueLog<Int>()
        context.perform { log.append(1) }
        context.performAndWait { log.append(2) }
        #expect(log.values == [1, 2])
    }

    @Test func nestedPerformAndWaitOnTheSameContextRunsInline() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = QueueLog<String>()
        let outerThread = Counter()
        let innerThread = Counter()
        context.performAndWait {
            outerThread.store(currentThreadID())
            log.append("outer-begin")
            let value = context.performAndWait {
                innerThread.store(currentThreadID())
                log.append("inner")
                _ = context.hasChanges  // on the queue: must not trap
                return 42
            }
            #expect(value == 42)
            log.append("outer-end")
        }
        #expect(log.values == ["outer-begin", "inner", "outer-end"])
        #expect(outerThread.load != 0)
        #expect(outerThread.load == innerThread.load)
    }

    @Test func nestedPerformAndWaitInsideAPerformBlockRunsInline() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = QueueLog<String>()
        enqueue(context) {
            log.append("perform-begin")
            context.performAndWait { log.append("nested") }
            log.append("perform-end")
        }
        await drain(context)
        #expect(log.values == ["perform-begin", "nested", "perform-end"])
    }

    @Test func nestedPerformAndWaitAcrossTwoContextsABA() throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let log = QueueLog<String>()
        let result: Int = a.performAndWait {
            log.append("A")
            return b.performAndWait {
                log.append("B")
                #expect(b.queue.isCurrent)
                #expect(a.queue.isCurrent)  // still owned by this thread
                return a.performAndWait {
                    log.append("A again")
                    _ = a.hasChanges
                    return 3
                } + (b.hasChanges ? 100 : 0)
            }
        }
        #expect(result == 3)
        #expect(log.values == ["A", "B", "A again"])
        #expect(!a.queue.isCurrent && !b.queue.isCurrent)
    }

    @Test func nestedABAFromInsideAPerformBlock() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let log = QueueLog<String>()
        enqueue(a) {
            b.performAndWait {
                a.performAndWait {
                    log.append(a.queue.isCurrent && b.queue.isCurrent ? "both" : "not both")
                }
            }
        }
        await drain(a)
        #expect(log.values == ["both"])
    }

    @Test func performBlocksAndPerformAndWaitNeverOverlap() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let detector = OverlapDetector()
        @Sendable func critical() {
            detector.enter()
            // A little work on the context's state while "inside".
            _ = context.hasChanges
            var x = 0
            for i in 0..<200 { x &+= i }
            precondition(x > 0)
            detector.leave()
        }
        let tasks = 16, perTask = 200
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<tasks {
                group.addTask {
                    for i in 0..<perTask {
                        if (i + t) % 2 == 0 {
                            enqueue(context) { critical() }
                        } else {
                            context.performAndWait { critical() }
                        }
                    }
                }
            }
        }
        // Plus threads outside the cooperative pool.
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for i in 0..<100 {
                if i % 3 == 0 { context.perform { critical() } } else { context.performAndWait { critical() } }
            }
        }
        await drain(context)
        #expect(detector.entryCount == tasks * perTask + 400)
        #expect(detector.maxInside == 1)
    }

    // MARK: perform(schedule:) async

    @Test func asyncPerformImmediateReturnsAValueFromTheQueue() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (onQueue, title) = await context.perform(schedule: .immediate) {
            let book = Book(context: context)
            book.title = "Emma"
            return (context.queue.isCurrent, book.title)
        }
        #expect(onQueue)
        #expect(title == "Emma")
        let inserted = await context.perform { context.insertedObjects.count }
        #expect(inserted == 1)
    }

    @Test func asyncPerformEnqueuedRunsAfterEarlierBlocks() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = QueueLog<Int>()
        for i in 0..<500 { enqueue(context) { log.append(i) } }
        let seen = await context.perform(schedule: .enqueued) { () -> [Int] in
            #expect(context.queue.isCurrent)
            return log.values
        }
        #expect(seen == Array(0..<500))
        let seenImmediate = await context.perform(schedule: .immediate) { log.count }
        #expect(seenImmediate == 500)
    }

    @Test(arguments: [NSManagedObjectContext.ScheduledTaskType.immediate, .enqueued])
    func asyncPerformThrows(schedule: NSManagedObjectContext.ScheduledTaskType) async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        await #expect(throws: QueueTestError(code: 9)) {
            try await context.perform(schedule: schedule) { () throws(QueueTestError) -> Int in
                throw QueueTestError(code: 9)
            }
        }
        // Typed throws reach the caller as the declared type.
        do {
            _ = try await context.perform(schedule: schedule) { () throws(QueueTestError) -> Int in
                throw QueueTestError(code: 10)
            }
            Issue.record("expected a throw")
        } catch {
            let typed: QueueTestError = error  // statically QueueTestError
            #expect(typed.code == 10)
        }
        // The queue still works afterwards.
        let value = try await context.perform(schedule: schedule) { () throws(QueueTestError) -> Int in 5 }
        #expect(value == 5)
    }

    @Test func asyncPerformSavesAndFetches() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id = try await context.perform(schedule: .enqueued) {
            let b = Book(context: context)
            b.title = "Ulysses"
            try context.save()
            return b.objectID
        }
        #expect(!id.isTemporaryID)
        let other = container.newBackgroundContext()
        let title = try await other.perform {
            try (other.existingObject(with: id) as? Book)?.title
        }
        #expect(title == "Ulysses")
    }

    // MARK: Starvation

    @Test func sixtyFourConcurrentPerformAndWaitOnOwnContextsComplete() async throws {
        let container = try Fixtures.container()
        let results = await withTaskGroup(of: Int.self, returning: [Int].self) { group in
            for t in 0..<64 {
                group.addTask {
                    let context = container.newBackgroundContext()
                    return context.performAndWait {
                        let b = Book(context: context)
                        b.pages = Int64(t)
                        return context.queue.isCurrent ? Int(b.pages) : -1
                    }
                }
            }
            var all: [Int] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.sorted() == Array(0..<64))
    }

    @Test func sixtyFourConcurrentPerformAndWaitOnASharedContextComplete() async throws {
        let container = try Fixtures.container()
        let shared = container.newBackgroundContext()
        let detector = OverlapDetector()
        // Some plain perform blocks in the FIFO too, so waiters queue behind real work.
        for _ in 0..<256 { enqueue(shared) { detector.enter(); detector.leave() } }
        let results = await withTaskGroup(of: Int.self, returning: [Int].self) { group in
            for t in 0..<64 {
                group.addTask {
                    shared.performAndWait {
                        detector.enter()
                        defer { detector.leave() }
                        let b = Book(context: shared)
                        b.pages = Int64(t)
                        return Int(b.pages)
                    }
                }
            }
            var all: [Int] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.sorted() == Array(0..<64))
        let inserted = shared.performAndWait { shared.insertedObjects.count }
        #expect(inserted == 64)
        #expect(detector.maxInside == 1)
        #expect(detector.entryCount == 256 + 64)
    }

    @Test func sixtyFourConcurrentTasksMixingSharedAndOwnContextsComplete() async throws {
        let container = try Fixtures.container()
        let shared = [container.newBackgroundContext(), container.newBackgroundContext()]
        let done = Counter()
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<64 {
                group.addTask {
                    let own = container.newBackgroundContext()
                    let s = shared[t % 2]
                    // own → shared nesting, and a blocking wait on a shared queue.
                    own.performAndWait {
                        s.performAndWait {
                            _ = s.hasChanges
                            _ = own.hasChanges
                        }
                    }
                    done.increment()
                }
            }
        }
        #expect(done.load == 64)
    }

    // MARK: Main queue

    @MainActor @Test func viewContextPerformBlocksRunOnTheMainThread() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        #expect(view.concurrencyType == .mainQueueConcurrencyType)
        let log = QueueLog<Int>()
        let offMain = Counter()
        for i in 0..<200 {
            enqueue(view) {
                if !onMainQueue() { offMain.increment() }
                log.append(i)
            }
        }
        await drain(view)
        #expect(log.values == Array(0..<200))
        #expect(offMain.load == 0)
    }

    @MainActor @Test func viewContextIsUsableDirectlyOnTheMainActor() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        #expect(onMainQueue())
        let b = Book(context: view)
        b.title = "Main"
        #expect(view.hasChanges)
        try view.save()
        #expect(!view.hasChanges)
        // performAndWait on the main thread runs inline.
        let inline = view.performAndWait { onMainQueue() && view.queue.isCurrent }
        #expect(inline)
    }

    /// Main-actor code inside another queue's `sync` (a serial queue used as a lock, or a
    /// global queue) still holds the main queue: the view context and its objects are usable
    /// there, and the queue checks (on in debug builds) do not trap.
    @MainActor @Test func viewContextIsUsableInsideAnotherQueuesSyncOnTheMainActor() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        for queue in [DispatchQueue(label: "lock"), DispatchQueue.global()] {
            let (title, held, thread) = try queue.sync {
                let b = Book(context: view)
                b.title = "Inside sync"
                try view.save()
                return (b.title, view.queue.isCurrentOrHeldByMainActor, pthread_self())
            }
            #expect(title == "Inside sync")
            #expect(held)
            #expect(pthread_equal(thread, pthread_self()) != 0)
        }
        #expect(try view.count(for: Book.fetchRequest()) == 2)
        // Off the main actor the second look says no, as the first does — also when the main
        // queue runs the operation it leaves there at once, on another thread (a background
        // save takes that path).
        let offMain = await Task.detached {
            (0..<200).filter { _ in view.queue.isCurrentOrHeldByMainActor || view.queue.isCurrent }.count
        }.value
        #expect(offMain == 0)
    }

    @Test func viewContextPerformFromBackgroundRunsOnTheMainThread() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let results = await Task.detached {
            let fromSync = view.performAndWait { onMainQueue() && view.queue.isCurrent && !view.hasChanges }
            let fromAsync = await view.perform(schedule: .enqueued) { onMainQueue() }
            let fromImmediate = await view.perform(schedule: .immediate) { onMainQueue() }
            let callerOnMain = onMainQueue() || view.queue.isCurrent
            return [fromSync, fromAsync, fromImmediate, !callerOnMain]
        }.value
        #expect(results == [true, true, true, true])
    }

    @Test func viewContextPerformAndWaitExcludesQueuedPerformBlocks() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let log = QueueLog<Int>()
        let seen = await Task.detached {
            for i in 0..<100 { enqueue(view) { log.append(i) } }
            return view.performAndWait { log.values }
        }.value
        #expect(seen == Array(0..<100))
    }
}

/// The drain handoff between queues (DrainScope): a queue left to this thread by an ending
/// actor job must not be waited for by this same thread.
@Suite("Drain hand-off between queues") struct DrainScopeTests {
    /// A `sync` caller that holds a deferred drain of the very queue it waits for hands
    /// that drain to Dispatch first; the block enqueued before still runs first (FIFO).
    @Test(.timeLimit(.minutes(1))) func syncFlushesDeferredDrainsBeforeWaiting() {
        let queue = ContextQueue(kind: .privateQueue, label: "deferred")
        let log = QueueLog<String>()
        var scope = DrainScope()
        withUnsafeMutablePointer(to: &scope) { scope in
            DrainScope.install(scope)
            defer { DrainScope.install(nil) }
            // What an ending actor job leaves behind: an active queue nobody drains yet.
            #expect(queue.activate(.block { log.append("enqueued first") }))
            scope.pointee.deferred.append(queue)
            queue.sync { log.append("sync body") }
            #expect(scope.pointee.deferred.isEmpty)
        }
        #expect(log.values == ["enqueued first", "sync body"])
    }

    /// Outside an actor job, nothing is deferred: an enqueue from a perform block's code is
    /// drained by Dispatch, so the block may wait for it.
    @Test(.timeLimit(.minutes(1))) func blocksOwnEnqueuesAreNotDeferred() async {
        let first = ContextQueue(kind: .privateQueue, label: "first")
        let second = ContextQueue(kind: .privateQueue, label: "second")
        let log = QueueLog<String>()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            first.async {
                let ran = DispatchSemaphore(value: 0)
                second.async {
                    log.append("second")
                    ran.signal()
                }
                ran.wait()  // would never return if `second` waited for this thread
                log.append("first")
                done.resume()
            }
        }
        #expect(log.values == ["second", "first"])
    }
}
