import Synchronization

/// A process-wide count of store commits, raised by the coordinator after each one.
///
/// A context that read the clock at `t` before it read rows knows that the rows its faults
/// hold are still the stores' while the clock still reads `t`; only after some commit does
/// it ask the store for a row's version before filling a fault with it (see
/// `NSManagedObjectContext.heldRowIsCurrent(_:)`). One clock for every store, so that the
/// check is one atomic load, with no reference to a store or context taken: a commit to an
/// unrelated store only costs those version checks.
///
/// The tick comes after the commit has changed its rows: a reader that sees it then reads
/// the new rows. Ticked before, a fetch could read the new reading and then the old rows,
/// which no later check would question.
enum CommitClock {
    private static let ticks = Atomic<UInt64>(0)

    /// The current reading.
    @inline(__always)
    static var now: UInt64 { ticks.load(ordering: .acquiring) }

    /// Advances the clock once a commit's rows are in place; returns the new reading, as of
    /// which those rows are current.
    @discardableResult
    static func tick() -> UInt64 { ticks.add(1, ordering: .acquiringAndReleasing).newValue }
}
