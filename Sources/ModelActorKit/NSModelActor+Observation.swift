import PersistenceKit

extension NSModelActor {
    /// Saves the actor's context, reporting the properties the save changed to the readers
    /// `observation` routes for (see ``CDEObservationDomain``). Collecting the changes and
    /// the commit run in one job of the actor, with no suspension between them.
    ///
    /// A domain that was invalidated, or that belongs to another container, gets a plain save.
    ///
    /// - Throws: what `save()` throws. A thrown save reports nothing, and the context keeps
    ///   its changes.
    public func saveObservedChanges(in observation: CDEObservationDomain) async throws {
        // Only for a live domain of this actor's own container: anything else routes
        // nothing, and a plain save is what it gets.
        guard observation.isRouting, observation.modelContainer.persistentStoreCoordinator === modelContainer.persistentStoreCoordinator
        else { return try modelContext.save() }
        try modelContext.saveReportingChangedProperties()
    }
}

extension NSMainModelActor {
    /// Saves the view context. The domain instruments the view context, so its saves report
    /// the properties they changed already; this is the main-actor counterpart of
    /// ``NSModelActor/saveObservedChanges(in:)``.
    ///
    /// - Throws: what `save()` throws.
    public func saveObservedChanges(in observation: CDEObservationDomain) throws {
        try modelContext.save()
    }
}

/// A model actor that keeps an observation domain and its context's producer registration,
/// so that its plain saves report the properties they changed.
///
/// Conform by hand: keep the domain and the registration in `let`s, made by an
/// `init(observationDomain:)` on the main actor, and invalidate the registration in `deinit`:
///
/// ```swift
/// actor ItemWriter: NSObservedModelActor {
///     nonisolated let modelContainer: NSPersistentContainer
///     nonisolated let modelExecutor: NSModelObjectContextExecutor
///     nonisolated let observationDomain: CDEObservationDomain?
///     nonisolated let observationRegistration: CDEObservationProducerRegistration?
///
///     @MainActor init(observationDomain: CDEObservationDomain) {
///         modelContainer = observationDomain.modelContainer
///         let context = modelContainer.newBackgroundContext()
///         modelExecutor = NSModelObjectContextExecutor(context: context)
///         self.observationDomain = observationDomain            // kept alive by the actor
///         observationRegistration = observationDomain.registerChangeProducer(context: context)
///     }
///
///     init(container: NSPersistentContainer) {                  // no observation
///         modelContainer = container
///         modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
///         observationDomain = nil
///         observationRegistration = nil
///     }
///
///     deinit { observationRegistration?.invalidate() }
/// }
/// ```
public protocol NSObservedModelActor: NSModelActor {
    /// The registration of the actor's context with its domain; `nil` for an actor made
    /// without one.
    nonisolated var observationRegistration: CDEObservationProducerRegistration? { get }
}

extension NSObservedModelActor {
    /// Saves the actor's context. With a registration, the save reports the properties it
    /// changed; without one it is a plain save (readers of every property of the saved
    /// objects are woken), and the first such save in the process writes a warning to
    /// standard error.
    ///
    /// - Throws: what `save()` throws.
    public func saveObservedChanges() async throws {
        guard let registration = observationRegistration, registration.isActive else {
            ObservedModelActorWarning.warnOnce()
            try modelContext.save()
            return
        }
        try modelContext.saveReportingChangedProperties()
    }
}
