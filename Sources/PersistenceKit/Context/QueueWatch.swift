import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Gives a private queue whose drain Dispatch has not started within a few milliseconds a
/// thread of its own, as Dispatch gives a serial queue an overcommit thread.
///
/// Private queues drain on Dispatch's global pool (that is what makes model-actor hops
/// cheap), and the pool does not grow for CPU-bound work: eight contexts each given one long
/// `perform` block on two cores ran two at a time, the last starting after every other had
/// finished, and a model actor waited behind them all. So one watcher thread, while any
/// drain is pending, looks every `tick` at the private queues: a drain still pending after
/// two ticks (2–4 ms) is claimed (the queue's ticket: exactly one of Dispatch's work item,
/// a waiting `sync` caller and this watcher runs it) and run on a rescue thread
/// (`RescueThreads`: reused, and capped, so a storm of stuck queues cannot make a storm of
/// threads).
///
/// A hop pays one relaxed load of the epoch and one of `isParked` (see
/// `ContextQueue.markDrainPending`): the watcher is woken only when it parked, after
/// `idleTicksBeforeParking` ticks without a pending drain.
final class QueueWatch: Sendable {
    static let shared = QueueWatch()

    /// How often the watcher looks, while any drain is pending.
    static let tick = 2  // ms
    /// Ticks without a pending drain before the watcher parks until the next one.
    static let idleTicksBeforeParking = 50

    /// Counts the watcher's looks; a queue notes it when its drain becomes pending.
    let epoch = Atomic<UInt64>(2)
    /// Whether the watcher is parked (or not started): the next pending drain wakes it.
    let isParked = Atomic<Bool>(true)
    /// Every private queue, strongly: a queue only this list holds is dropped at the next
    /// look (no weak references: one would give every queue a side table, and every retain
    /// of a queue, one per hop, the runtime's slow path).
    private let queues = Lock<[ContextQueue]>([])
    private let wakeup = NSCondition()
    /// Guarded by `wakeup`: the watcher thread exists.
    private let running = Atomic<Bool>(false)

    /// Adds a private queue to those the watcher looks at.
    func register(_ queue: ContextQueue) {
        queues.withLock { $0.append(queue) }
    }

    /// Wakes the watcher, or starts it.
    func wake() {
        wakeup.lock()
        defer { wakeup.unlock() }
        isParked.store(false, ordering: .sequentiallyConsistent)
        if running.load(ordering: .relaxed) {
            wakeup.signal()
            return
        }
        running.store(true, ordering: .relaxed)
        if !startThread({ QueueWatch.shared.watch() }) {
            // No thread now: the next pending drain tries again; Dispatch still runs them.
            running.store(false, ordering: .relaxed)
            isParked.store(true, ordering: .sequentiallyConsistent)
        }
    }

    /// The watcher thread's loop.
    private func watch() {
        var idleTicks = 0
        while true {
            wakeup.lock()
            if isParked.load(ordering: .sequentiallyConsistent) {
                while isParked.load(ordering: .sequentiallyConsistent) { wakeup.wait() }
            } else {
                _ = wakeup.wait(until: Date(timeIntervalSinceNow: Double(Self.tick) / 1000))
            }
            wakeup.unlock()
            if look() {
                idleTicks = 0
            } else {
                idleTicks += 1
                if idleTicks >= Self.idleTicksBeforeParking {
                    idleTicks = 0
                    // Parked first, then one more look: a drain marked pending before it saw
                    // the flag set is found by this look, one marked after wakes the watcher.
                    isParked.store(true, ordering: .sequentiallyConsistent)
                    if look() { isParked.store(false, ordering: .sequentiallyConsistent) }
                }
            }
        }
    }

    /// One look at every queue; whether any drain was pending.
    private func look() -> Bool {
        let now = epoch.add(1, ordering: .relaxed).newValue
        let list = queues.withLock { list -> [ContextQueue] in
            var i = 0
            while i < list.count {
                if isKnownUniquelyReferenced(&list[i]) {
                    list.swapAt(i, list.count - 1)
                    list.removeLast()
                } else {
                    i += 1
                }
            }
            return list
        }
        var pending = false
        for queue in list where queue.hasPendingDrain {
            pending = true
            queue.rescueIfStalled(now: now)
        }
        return pending
    }
}

/// The threads that run rescued drains: made when needed up to `cap`, reused, and gone after
/// a second without work. At the cap, a rescued drain waits for the first thread to free up.
final class RescueThreads: @unchecked Sendable {
    // @unchecked Sendable: `work`, `live` and `idle` are read and written only between
    // `condition.lock()` and `unlock()`.
    static let shared = RescueThreads()
    /// At most this many rescue threads at once.
    static let cap = 128
    private let condition = NSCondition()
    private var work: [ContextQueue] = []
    private var live = 0
    private var idle = 0
    /// The most threads alive at once, for tests.
    let mostAlive = Atomic<Int>(0)

    /// Runs `queue`'s drain, whose ticket the caller took, on a rescue thread. `false` when
    /// no thread exists and none can be made: the caller then hands the drain back to Dispatch.
    func run(_ queue: ContextQueue) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        work.append(queue)
        // An idle thread for each waiting drain: wake one. (Not `idle > 0`: a signalled
        // thread counts as idle until it wakes, so a burst of drains would all be left to
        // the few threads idle at its start, each running its drains one after another.)
        if work.count <= idle {
            condition.signal()
            return true
        }
        if live >= Self.cap { return true }  // taken by the first thread that frees up
        live += 1
        if startThread({ RescueThreads.shared.serve() }) {
            mostAlive.store(max(mostAlive.load(ordering: .relaxed), live), ordering: .relaxed)
            return true
        }
        live -= 1
        if live > 0 { return true }  // taken by a thread that lives, when it frees up
        work.removeLast()
        return false
    }

    /// A rescue thread's loop.
    private func serve() {
        while true {
            condition.lock()
            while work.isEmpty {
                idle += 1
                let signalled = condition.wait(until: Date(timeIntervalSinceNow: 1))
                idle -= 1
                if !signalled && work.isEmpty {
                    live -= 1
                    condition.unlock()
                    return
                }
            }
            let queue = work.removeFirst()
            condition.unlock()
            ContextQueue.runDrains(startingWith: queue)
        }
    }
}

/// Starts a detached thread running `body`; false when none can be made.
///
/// `pthread_create`, not `Thread.detachNewThread`: on Linux Foundation drops a failed thread
/// creation silently, and work handed to that thread would be lost.
func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    let retained = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    // The start routine's parameter is optional on Linux only; it is `retained`, never nil.
    #if canImport(Darwin)
    var thread: pthread_t?
    let result = pthread_create(&thread, &attributes, { ThreadBody.run($0) }, retained)
    #else
    var thread = pthread_t()
    let result = pthread_create(&thread, &attributes, { ThreadBody.run($0!) }, retained)
    #endif
    guard result == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(retained).release()
        return false
    }
    return true
}

/// A thread's body, passed to `pthread_create` retained.
private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    static func run(_ retained: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
        Unmanaged<ThreadBody>.fromOpaque(retained).takeRetainedValue().body()
        return nil
    }
}
