import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An identifier of the calling thread, unique among live threads.
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
    #else
    UInt(pthread_self())
    #endif
}

/// The serial queue of one context: one FIFO of work, and one thread at a time running it.
///
/// # Design
/// A private queue is a lock-protected FIFO drained on Dispatch's global pool, not a
/// `DispatchQueue`: owning the exclusivity ourselves lets `sync` run the caller's block on
/// the caller's own thread once the queue is free (like `dispatch_sync`), so a blocked
/// caller never needs a second thread to make progress. That is what keeps 64 concurrent
/// `performAndWait` calls from the cooperative pool live on a 2-core machine, and what the
/// model-actor executor builds on. (When a blocked caller finds a drain ahead of it that
/// Dispatch has not started, it runs that drain on a rescue thread: see `waitForTurn`. So
/// does `QueueWatch` for any drain Dispatch has not started within a few milliseconds, so
/// that no queue waits behind other contexts' long work.)
///
/// When an actor job on one private queue ends by hopping to an idle private queue, the
/// thread that ran it drains the second queue next instead of going through Dispatch (see
/// `DrainScope`), as the runtime does between its own actors.
///
/// A main queue is the main dispatch queue: `async` enqueues there, `sync` runs inline on
/// the main thread and otherwise waits for the main thread to run the block.
///
/// # Invariants
/// - `active` is true exactly while one thread owns the queue (a drainer or a `sync` caller);
///   jobs are only taken by the owner.
/// - `owner` holds the owning thread's ID while it runs work, 0 otherwise. It is written
///   only by the owner (or under the lock when ownership ends), so a thread that reads its
///   own ID there really is the owner.
final class ContextQueue: Sendable {
    enum Kind: Sendable { case main, privateQueue }

    /// A `sync` caller waiting for its turn; the drainer hands the queue over by signalling.
    final class Handoff: Sendable {
        let semaphore = DispatchSemaphore(value: 0)
    }

    enum Job: Sendable {
        case block(@Sendable () -> Void)
        case handoff(Handoff)
        /// A Swift concurrency job of an actor whose executor is this queue.
        case executorJob(UnownedJob, UnownedSerialExecutor)
    }

    struct State {
        var jobs = FIFOBuffer<Job>()
        var active = false
    }

    let kind: Kind
    let label: String
    private let state = Lock(State())
    private let owner = Atomic<UInt>(0)
    /// True while a drain of this active, unowned queue has been handed to Dispatch and has
    /// not started. Whoever clears it (`claimPendingDrain`) runs that drain: the Dispatch work
    /// item, or a waiting `sync` caller that found Dispatch too slow to start it (see
    /// `waitForTurn`). A work item that finds it cleared returns at once.
    private let drainPending = Atomic<Bool>(false)
    /// The watcher's epoch when the pending drain was marked (see `QueueWatch`).
    private let pendingEpoch = Atomic<UInt64>(0)

    /// Set when the context records a change it has not processed yet: after an actor's job
    /// the queue then runs the context's hook (see `setAfterJobOnce`), as a `perform` block
    /// processes pending changes when it ends. A hint, cleared when the context processes
    /// its changes; a relaxed atomic, written and read by the queue's owner. Without it,
    /// actor jobs never process pending changes, so an actor method's inserts and deletes
    /// go unannounced, and delete rules wait, until the next save or fetch.
    let changesPending = Atomic<Bool>(false)
    /// Main queue only: a block that processes the context's pending changes is enqueued on
    /// the main queue and has not started. At most one is outstanding, so a program that
    /// never drains the main queue collects one block, not one per change.
    let mainQueueProcessingScheduled = Atomic<Bool>(false)
    private let afterJob = Lock<(@Sendable () -> Void)?>(nil)
    /// Whether `afterJob` is set: read on every actor job enqueued, without the lock.
    private let hasAfterJob = Atomic<Bool>(false)

    /// Sets what runs after an actor's job when changes are pending (the context's
    /// `processPendingChanges`), unless it is set already: `makeHook` runs for the first
    /// call only. Set before the first actor job is enqueued.
    func setAfterJobOnce(_ makeHook: () -> @Sendable () -> Void) {
        if hasAfterJob.load(ordering: .acquiring) { return }
        afterJob.withLock { hook in
            if hook == nil { hook = makeHook() }
        }
        hasAfterJob.store(true, ordering: .releasing)
    }

    private func afterExecutorJob() {
        guard changesPending.load(ordering: .relaxed) else { return }
        afterJob.withLock { $0 }?()
    }

    /// Jobs run per drain before the drainer yields its global-pool thread.
    private static let drainBatch = 128

    /// For the context: the least ``CommitClock`` reading of the fetches whose rows its
    /// faults hold (`NSManagedObjectContext.heldRowsSince`). Here, not on the context,
    /// because an object reads it for every fault it fires and holds its queue, not its
    /// context: reaching the context retained it, a slow-path retain (a context has a side
    /// table), ~250 instructions a fault. Read and written on the queue only; atomic so that
    /// the class stays `Sendable`.
    let heldRowsSince = Atomic<UInt64>(.max)
    /// Whether an observation domain instruments the queue's context
    /// (`NSManagedObjectContext.instrumentsObservation`). Here, not on the context, for the
    /// same reason as `heldRowsSince`: every read of an observable object tests it, and going
    /// through the context retained it (a context has a side table, so that retain is the
    /// runtime's slow path: measured as a third of an observed read).
    let instrumentsObservation = Atomic<Bool>(false)
    /// Whether the queue's context has an undo manager (`NSManagedObjectContext.undoManager`).
    /// Here, for the same reason as `heldRowsSince`: every attribute write tests it.
    let registersUndo = Atomic<Bool>(false)

    init(kind: Kind, label: String) {
        self.kind = kind
        self.label = label
        if kind == .privateQueue { QueueWatch.shared.register(self) }
    }

    /// Whether the calling thread is running this queue's work right now.
    var isCurrent: Bool {
        switch kind {
        case .main: Self.isOnMainQueue
        case .privateQueue: owner.load(ordering: .relaxed) == currentThreadID()
        }
    }

    private static let mainQueueKey: DispatchSpecificKey<UInt8> = {
        let key = DispatchSpecificKey<UInt8>()
        DispatchQueue.main.setSpecific(key: key, value: 1)
        return key
    }()

    /// Whether the caller runs on the main queue (the main actor's executor).
    ///
    /// `Thread.isMainThread` alone is wrong on Linux: once `dispatchMain()` runs (as it does
    /// under async `main` and the test runner), the main thread exits and a Dispatch worker
    /// thread drains the main queue. A queue-specific value marks the main queue wherever it
    /// runs. Checking only `Thread.isMainThread` makes main-actor code look off-queue and
    /// deadlocks `performAndWait` through `DispatchQueue.main.sync`.
    static var isOnMainQueue: Bool {
        Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueKey) != nil
    }

    /// Enqueues `block`; returns at once. Blocks run one at a time in FIFO order.
    func async(_ block: @escaping @Sendable () -> Void) {
        switch kind {
        case .main:
            DispatchQueue.main.async(execute: block)
        case .privateQueue:
            enqueue(.block(block))
        }
    }

    /// Enqueues an actor job in the same FIFO as perform blocks; never blocks.
    func enqueue(_ job: UnownedJob, executor: UnownedSerialExecutor) {
        switch kind {
        case .main:
            DispatchQueue.main.async { [self] in
                job.runSynchronously(on: executor)
                afterExecutorJob()
            }
        case .privateQueue:
            if activate(.executorJob(job, executor)), !DrainScope.deferIfEnding(job, on: self) { scheduleDrain() }
        }
    }

    private func enqueue(_ job: Job) {
        if activate(job) { scheduleDrain() }
    }

    /// Appends `job`; true when the queue was idle, so the caller must see that it gets drained.
    func activate(_ job: Job) -> Bool {
        state.withLock { s in
            s.jobs.append(job)
            if s.active { return false }
            s.active = true
            return true
        }
    }

    /// Runs `body` on this queue and returns its result: inline when the caller already owns
    /// the queue (reentrancy), otherwise after every block enqueued before it, on the
    /// caller's own thread (private queues) or on the main thread (main queue).
    func sync<T>(_ body: () throws -> T) rethrows -> T {
        switch kind {
        case .main:
            // Not `isCurrentOrHeldByMainActor`: its no leaves a job on the main queue, and
            // `DispatchQueue.main.sync` behind a job waits for the main thread instead of
            // running the block at once on this thread (measured: 1 µs → 12 µs for a view
            // context `performAndWait` from a background task).
            if Self.isOnMainQueue { return try body() }
            DrainScope.flushCurrent()  // as below: this thread is about to wait
            return try DispatchQueue.main.sync(execute: body)
        case .privateQueue:
            let me = currentThreadID()
            if owner.load(ordering: .relaxed) == me { return try body() }
            // A job ending on this thread may have left queues' drains to it (DrainScope):
            // hand them to Dispatch before this thread may wait, or it could wait for itself.
            DrainScope.flushCurrent()
            let handoff: Handoff? = state.withLock { s in
                if !s.active {
                    s.active = true
                    return nil
                }
                let h = Handoff()
                s.jobs.append(.handoff(h))
                return h
            }
            if let handoff {
                waitForTurn(handoff)
                // Taking the lock once orders this thread after the drainer that handed over
                // (it popped the handoff under the lock) in a way Thread Sanitizer can see;
                // the semaphore alone is not visible to it on Linux.
                state.withLock { _ in }
            }
            owner.store(me, ordering: .relaxed)
            defer { releaseOwnership() }
            return try body()
        }
    }

    #if DEBUG
    /// The drains this queue started on Dispatch's global pool, for tests that check work
    /// passed without one (debug builds only).
    let drainsScheduled = Atomic<Int>(0)
    #endif

    /// Starts a drain of this active queue on Dispatch's global pool.
    func scheduleDrain() {
        #if DEBUG
        drainsScheduled.add(1, ordering: .relaxed)
        #endif
        markDrainPending()
        DispatchQueue.global().async {
            if self.claimPendingDrain() { ContextQueue.runDrains(startingWith: self) }
        }
    }

    /// Marks a drain of this active, unowned queue as handed to Dispatch and not started.
    /// Only the holder of the right to drain may call it (the caller that activated the
    /// queue, or the drainer or `sync` owner letting it go), and gives that right up by it:
    /// anyone else would make a second drainer. Separate from `scheduleDrain` so that a test
    /// can stand for a Dispatch pool that never gets to the work item.
    func markDrainPending() {
        let watch = QueueWatch.shared
        pendingEpoch.store(watch.epoch.load(ordering: .relaxed), ordering: .relaxed)
        // Sequentially consistent, with the load below and the watcher's own pair (it parks,
        // then looks once more): either this sees the watcher parked and wakes it, or the
        // watcher's last look sees this drain pending. Acquire/release would allow both to
        // miss, and a pending drain to wait for Dispatch alone.
        drainPending.store(true, ordering: .sequentiallyConsistent)
        if watch.isParked.load(ordering: .sequentiallyConsistent) { watch.wake() }
    }

    /// Whether a drain was handed to Dispatch and has not started (for `QueueWatch`).
    var hasPendingDrain: Bool { drainPending.load(ordering: .relaxed) }

    /// Called by the watcher at epoch `now`: a drain pending since two looks ago or earlier
    /// (2–4 ms) is taken from Dispatch and run on a rescue thread.
    func rescueIfStalled(now: UInt64) {
        guard pendingEpoch.load(ordering: .relaxed) + 2 <= now, claimPendingDrain() else { return }
        #if DEBUG
        drainsWatched.add(1, ordering: .relaxed)
        #endif
        _ = startDrainOnRescueThread()
    }

    /// Takes the pending drain: true for exactly one caller per `markDrainPending`.
    private func claimPendingDrain() -> Bool {
        drainPending.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged
    }

    #if DEBUG
    /// The drains that waiting `sync` callers started on rescue threads (debug builds only),
    /// for tests.
    let drainsRescued = Atomic<Int>(0)
    /// The drains the watcher started on rescue threads (debug builds only), for tests.
    let drainsWatched = Atomic<Int>(0)
    /// Debug builds only, for tests: the rescue behaves as if no thread could be made.
    let failsToMakeThreads = Atomic<Bool>(false)
    #endif

    /// How long, in milliseconds, a waiting `sync` caller lets Dispatch start a pending drain
    /// before it starts the drain on a new thread; doubled on each further wait, up to
    /// `longestRescueGrace`, so that a caller waiting behind long work wakes rarely.
    private static let firstRescueGrace = 1
    private static let longestRescueGrace = 16

    /// Waits until the queue is handed to the caller of `sync`.
    ///
    /// # Why the timeout
    /// The waiter may be one of Dispatch's pool threads, and every other pool thread may be
    /// waiting too — model-actor methods or async code calling `performAndWait` on a busy
    /// context. The work ahead of this caller then waits for a drain that Dispatch has no
    /// thread for, and Dispatch adds threads only about every half second: six callers on
    /// Dispatch's threads behind a queued `perform` block waited 5 s (measured; 11 ms with
    /// this). So a caller still waiting after `firstRescueGrace` takes the pending drain, if
    /// Dispatch has not started it, and runs it on a new thread. Not on its own thread: a
    /// waiter on the main thread would then run actor jobs there, and one inside another
    /// queue's job would hold two queues. The drain hands the queue to this caller when it
    /// reaches its turn, as a Dispatch-started one would. After a rescue the next check comes
    /// after `firstRescueGrace` again: a rescued drain still yields after `drainBatch` jobs
    /// and hands the rest back to Dispatch. (Measured: with the checks left at 16 ms after a
    /// rescue, a caller behind 10,000 blocks waited 1.3 s.)
    private func waitForTurn(_ handoff: Handoff) {
        var grace = Self.firstRescueGrace
        var mayRescue = true
        while handoff.semaphore.wait(timeout: .now() + .milliseconds(grace)) == .timedOut {
            if mayRescue, claimPendingDrain() {
                #if DEBUG
                drainsRescued.add(1, ordering: .relaxed)
                #endif
                // When no thread can be made, this caller waits for Dispatch from then on, as
                // it did before rescues: taking each new ticket again would queue a work item
                // per check on a pool that has no thread for them.
                mayRescue = startDrainOnRescueThread()
                grace = Self.firstRescueGrace
            } else {
                grace = min(grace * 2, Self.longestRescueGrace)
            }
        }
    }

    /// Runs a drain whose ticket the caller took on a rescue thread (`RescueThreads`:
    /// reused and capped); or, when no thread exists or can be made, hands it back to
    /// Dispatch with a new ticket and returns false. A failed thread creation must not drop
    /// the drain: its ticket is taken, and the queue would hang for good (as it does with the
    /// address space capped).
    private func startDrainOnRescueThread() -> Bool {
        #if DEBUG
        if failsToMakeThreads.load(ordering: .relaxed) {
            scheduleDrain()
            return false
        }
        #endif
        if RescueThreads.shared.run(self) { return true }
        scheduleDrain()
        return false
    }

    /// Drains one global-pool thread runs in a row, per Dispatch work item, before it gives
    /// the thread back.
    ///
    /// A count, not a time slice. Measured with a 1 ms slice: other work on the pool — a
    /// `DispatchQueue.global().async`, a third model actor's call, a `Task.detached` start,
    /// `MainActor.run` — waited 6–14x longer behind two to four ping-ponging pairs of
    /// actors, while the pairs themselves got no measurably faster.
    private static let inlineDrainLimit = 64

    /// Drains `first`, then the queues its jobs left to this thread (see `DrainScope`), up to
    /// `inlineDrainLimit` drains; the rest go back to Dispatch so the thread is returned.
    static func runDrains(startingWith first: ContextQueue) {
        var scope = DrainScope()
        withUnsafeMutablePointer(to: &scope) { scope in
            DrainScope.install(scope)
            defer { DrainScope.install(nil) }
            var queue = first
            for _ in 0..<inlineDrainLimit {
                queue.drain(scope)
                guard !scope.pointee.deferred.isEmpty else { return }
                // Mostly one queue waits: taking the last one is then the same and skips the
                // shift that `removeFirst` makes (a few percent of a ping-pong hop).
                queue =
                    scope.pointee.deferred.count == 1
                    ? scope.pointee.deferred.removeLast() : scope.pointee.deferred.removeFirst()
            }
            queue.scheduleDrain()
            scope.pointee.flushDeferred()
        }
    }

    /// Runs queued jobs until the queue is empty, a batch is done, or a `sync` caller takes over.
    private func drain(_ scope: UnsafeMutablePointer<DrainScope>) {
        owner.store(currentThreadID(), ordering: .relaxed)
        var ran = 0
        while true {
            if ran == Self.drainBatch {
                // Keep ownership (active stays true) but give the pool thread back.
                owner.store(0, ordering: .relaxed)
                scheduleDrain()
                return
            }
            let job: Job? = state.withLock { s in
                if let j = s.jobs.popFirst() { return j }
                // Clear the owner under the lock: a new drainer can only start after this.
                owner.store(0, ordering: .relaxed)
                s.active = false
                return nil
            }
            guard let job else { return }
            // Queues deferred to this thread wait only while this one has nothing left.
            if !scope.pointee.deferred.isEmpty { scope.pointee.flushDeferred() }
            switch job {
            case let .block(block):
                block()
                ran += 1
            case let .executorJob(job, executor):
                scope.pointee.runningJob = DrainScope.identity(of: job)
                job.runSynchronously(on: executor)
                scope.pointee.runningJob = nil
                // The hook runs user code (objects-did-change observers): the queues a hop
                // left to this thread go to Dispatch first, or an observer that blocks (on
                // the main queue, a lock) waits for anyone waiting for them, and deadlocks
                // with main-actor code calling performAndWait on the queue the actor's job
                // had hopped to.
                if changesPending.load(ordering: .relaxed), !scope.pointee.deferred.isEmpty {
                    scope.pointee.flushDeferred()
                }
                afterExecutorJob()
                ran += 1
            case let .handoff(h):
                owner.store(0, ordering: .relaxed)
                h.semaphore.signal()  // ownership passes to the waiting `sync` caller
                return
            }
        }
    }

    /// Ends a `sync` caller's turn: the queue goes idle, passes straight to the next waiting
    /// `sync` caller, or a drainer resumes the backlog.
    private func releaseOwnership() {
        enum Next { case idle, drain, handOff(Handoff) }
        let next: Next = state.withLock { s in
            owner.store(0, ordering: .relaxed)
            guard let first = s.jobs.first else {
                s.active = false
                return .idle
            }
            guard case let .handoff(h) = first else { return .drain }
            _ = s.jobs.popFirst()
            return .handOff(h)
        }
        switch next {
        case .idle: break
        case .drain: scheduleDrain()
        // Straight to the waiter, as `dispatch_sync` passes a queue from one waiter to the
        // next. Passed through a drain on Dispatch's global pool instead, while its threads
        // are blocked in `sync` calls — 32 actors waiting for one shared context — each pass
        // waits for Dispatch to add a thread (measured: 16 s in all).
        case let .handOff(h): h.semaphore.signal()
        }
    }
}
