import Synchronization

/// A context registered with ``CDEObservationDomain/registerChangeProducer(context:)``: while
/// the registration lives, the context's plain `save()` reports the properties each save
/// changed, so that merged into the view context it wakes only their readers.
///
/// A save that throws reports nothing, so no state outlives a failed save.
///
/// # Thread safety
/// ``invalidate()`` may be called from any thread.
public final class CDEObservationProducerRegistration: Sendable {
    /// The registered context.
    public let context: NSManagedObjectContext
    private let active = Atomic<Bool>(true)

    init(context: NSManagedObjectContext) {
        self.context = context
        context.observedChangeProducers.add(1, ordering: .relaxed)
    }

    deinit { invalidate() }

    /// Whether the registration still makes its context report changed properties.
    public var isActive: Bool { active.load(ordering: .relaxed) }

    /// Ends the registration: the context's later saves report object IDs only (readers of
    /// every property of the saved objects are woken). Idempotent.
    public func invalidate() {
        guard active.exchange(false, ordering: .relaxed) else { return }
        context.observedChangeProducers.subtract(1, ordering: .relaxed)
    }
}
