import Synchronization

// Main-actor code can run inside a block of another queue: `DispatchQueue(label:).sync { … }`
// (a serial queue used as a lock) or `DispatchQueue.global().sync { … }` run the block on the
// calling thread while the main actor's job waits for it, so the main queue is still held.
// `ContextQueue.isOnMainQueue` cannot see that on Linux: the queue-specific value it reads is
// looked up along the current queue's targets only, so without this the view context's
// queue checks trap there. Asked only before a trap: see `ContextQueue.sync` for why not before
// `DispatchQueue.main.sync`.
extension ContextQueue {
    /// For the main queue: whether the runtime says the main actor is the current executor
    /// (false for private queues). The second, slower look after ``isCurrent`` said no (see
    /// ``isMainActorCurrent``): for the paths where a no traps.
    var isHeldByMainActor: Bool {
        kind == .main && Self.isMainActorCurrent
    }

    /// ``isCurrent``, or else ``isHeldByMainActor``.
    var isCurrentOrHeldByMainActor: Bool { isCurrent || isHeldByMainActor }

    /// Whether the main actor is the executor the caller runs on, asked of the Swift runtime
    /// without trapping.
    ///
    /// `Task.immediate` runs its operation on the spot exactly when the caller already runs on
    /// the operation's executor; the standard library offers no other check of the current
    /// executor that answers no instead of trapping. So this costs a task, and when the answer
    /// is no it leaves a job on the main actor that does nothing when it runs.
    static var isMainActorCurrent: Bool {
        guard #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) else { return false }
        let flag = RanOnTheSpot(caller: currentThreadID())
        // The operation counts only on the caller's thread: when it was enqueued instead, the
        // main queue may run it on another thread before `immediate` has even returned.
        // Without the thread check, the flag alone reads yes from a background task.
        Task.immediate { @MainActor in
            if currentThreadID() == flag.caller { flag.value.store(true, ordering: .relaxed) }
        }
        return flag.value.load(ordering: .relaxed)
    }
}

/// Set by an operation that ran on the spot, on the thread that started it.
private final class RanOnTheSpot: Sendable {
    let caller: UInt
    let value = Atomic<Bool>(false)
    init(caller: UInt) { self.caller = caller }
}
