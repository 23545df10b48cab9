import Observation

// Reads of an observable object's properties report to its registrar; routed saves call
// `withMutation` on it. Only objects of an `ObservableManagedObject` class, in a context a
// live `CDEObservationDomain` instruments, get a registrar: every other read pays one load
// of its entity's `observesReads` flag.

extension NSManagedObject {
    /// Reports a read of the property at `slot` to Swift Observation, when the object's class
    /// opted in. Called by every read of a declared property (attribute, to-one, to-many and
    /// a to-many's count), after the queue check.
    @inline(__always)
    final func noteRead(slot: Int) {
        if entity.observesReads { noteObservedRead(slot: slot) }
    }

    /// The opted-in half of ``noteRead(slot:)``: out of line, so that a read of a class that
    /// did not opt in carries none of it.
    @inline(never)
    final func noteObservedRead(slot: Int) {
        // Only the instrumented context's objects: a background context's reads would give
        // registrars to objects no route ever reaches. Tested on the queue, not the context:
        // a context reference would be retained, on the runtime's slow path.
        guard let queue = contextQueue, queue.instrumentsObservation.load(ordering: .relaxed) else { return }
        guard let registrar = observationRegistrar else { return makeRegistrar(readingSlot: slot) }
        ObservedProperty.withKeyPath(slot: slot) { registrar.access(ObservedProperty.subject, keyPath: $0) }
    }

    /// The first tracked read of the object: makes its registrar, then records the read.
    @inline(never)
    private final func makeRegistrar(readingSlot slot: Int) {
        // A domain released without `invalidate()` leaves the flag set: the first read that
        // would make a registrar finds no router and clears it.
        guard let context = owningContext, context.observationRouter != nil else {
            owningContext?.instrumentsObservation = false
            return
        }
        let registrar = ObservationRegistrar()
        observationRegistrar = registrar
        ObservedProperty.withKeyPath(slot: slot) { registrar.access(ObservedProperty.subject, keyPath: $0) }
    }

    /// Whether a reader ever read one of the object's properties while its context was
    /// instrumented (only then can a route wake anyone).
    final var isObserved: Bool { observationRegistrar != nil }

    /// Wakes the readers of the properties at `slots`.
    final func invalidateObservers(slots: some Sequence<Int>) {
        guard let registrar = observationRegistrar else { return }
        for slot in slots {
            ObservedProperty.withKeyPath(slot: slot) { registrar.withMutation(of: ObservedProperty.subject, keyPath: $0) {} }
        }
    }

    /// Wakes the readers of every property of the object.
    final func invalidateAllObservers() {
        invalidateObservers(slots: entity.properties.indices)
    }

    /// Wakes the readers of the properties `mask` names (see `ChangedProperties`), without
    /// making a list of them.
    final func invalidateObservers(mask: UInt64) {
        guard mask != .max else { return invalidateAllObservers() }
        guard let registrar = observationRegistrar else { return }
        var rest = mask
        while rest != 0 {
            let slot = rest.trailingZeroBitCount
            rest &= rest - 1
            ObservedProperty.withKeyPath(slot: slot) { registrar.withMutation(of: ObservedProperty.subject, keyPath: $0) {} }
        }
    }

    /// Forgets the object's readers without waking them (an inserted object rolled back, a
    /// deleted one gone from its context).
    final func dropObservers() {
        observationRegistrar = nil
    }
}
