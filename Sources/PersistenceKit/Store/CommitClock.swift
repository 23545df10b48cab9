import Synchronization

/// A process-wide count of store commits, raised by the coordinator before each one.
///
/// A context that fetched rows when the clock read `t` knows that the rows its faults hold
/// are still the stores' while the clock still reads `t`; only after some commit does it ask
/// the store for a row's version before filling a fault with it (see
/// `NSManagedObjectContext.heldRowIsCurrent(_:)`). One clock for every store, so that the
/// check is one atomic load, with no reference to a store or context taken: a commit to an
/// unrelated store only costs those version checks.
enum CommitClock {
    private static let ticks = Atomic<UInt64>(0)

    /// The current reading.
    @inline(__always)
    static var now: UInt64 { ticks.load(ordering: .acquiring) }

    /// Advances the clock: called before a commit changes any row, so that a reader still
    /// seeing the old reading has not missed a change that was made.
    static func tick() { ticks.add(1, ordering: .acquiringAndReleasing) }
}
