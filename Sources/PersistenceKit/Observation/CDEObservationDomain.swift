import Foundation
import Observation

/// Routes saved changes to the Swift Observation readers of a container's `viewContext`.
///
/// Create one per container and keep it for as long as readers should be woken (in a
/// main-actor store, beside the container):
///
/// ```swift
/// let observation = CDEObservationDomain(container: container)
/// withObservationTracking { _ = item.title } onChange: { print("title changed") }
/// ```
///
/// A live domain *instruments* the view context: reads there of objects whose class conforms
/// to ``ObservableManagedObject`` are tracked, and every save that reaches the view context
/// — its own, or another context's merged into it — wakes the readers of what the save
/// changed. Unsaved edits wake no one: invalidation is save-gated.
///
/// # Precision, by producer
/// - `viewContext.save()`: the properties the save changed.
/// - A context registered with ``registerChangeProducer(context:)`` (or made by
///   ``newObservedBackgroundContext()``), then a plain `save()`: the properties it changed.
/// - ``saveObservedChanges(in:)`` and the model actors' `saveObservedChanges(in:)`: the
///   properties changed.
/// - Any other context, a merge of object IDs only (`mergeChanges(fromRemoteContextSave:into:)`),
///   an explicit `refresh(_:mergeChanges:)` or ``rollbackObservedChanges()``: every property
///   of the objects concerned, and only of those.
///
/// A relationship change is a change of the relationship on both ends, so readers of either
/// end's relationship (and of a to-many's `count`) are woken. An object deleted by a merged
/// save wakes all its readers and leaves the context: a reader must check
/// `managedObjectContext != nil` before reading it again (reading a deleted object traps).
///
/// # Lifetime
/// The view context refers to its domain weakly: releasing the domain, or calling
/// ``invalidate()``, stops all routing; releasing it on another thread is safe. A later domain
/// for the same container replaces an earlier one.
@MainActor
public final class CDEObservationDomain {
    /// The container whose view context the domain instruments.
    public nonisolated let modelContainer: NSPersistentContainer

    /// Whether routes and their decisions are written to standard error, each line starting
    /// with `[CDEObservation]` (the text after it is not a stable format). Defaults to
    /// whether the environment variable `CDE_OBSERVATION_DEBUG` is `1`, `true`, `yes` or `on`.
    public var isDebugLoggingEnabled: Bool {
        get { router.isDebugLoggingEnabled }
        set { router.isDebugLoggingEnabled = newValue }
    }

    /// The routing state, which the view context calls on its queue (see `ObservationRouter`).
    let router: ObservationRouter
    /// The producer registrations this domain made; invalidated with it.
    private var registrations: [CDEObservationProducerRegistration] = []

    /// Instruments `container`'s view context.
    ///
    /// - Parameter preciseRouteEchoSuppression: whether a merge that repeats a just-routed
    ///   change by object ID alone is treated as an echo (see
    ///   ``CDEPreciseRouteEchoSuppression``).
    public init(container: NSPersistentContainer, preciseRouteEchoSuppression: CDEPreciseRouteEchoSuppression = .auto) {
        modelContainer = container
        router = ObservationRouter(
            suppressesEchoes: preciseRouteEchoSuppression.isOn(for: container),
            isDebugLoggingEnabled: Self.debugLoggingFromEnvironment)
        activity = router.activity
        let view = container.viewContext
        // The last domain of a view context wins: the one it replaces stops routing.
        view.observationRouter?.deactivate()
        view.observationRouter = router
        view.instrumentsObservation = true
        router.log("domain active on \(view.debugName); echo suppression \(router.suppressesEchoes ? "on" : "off")")
    }

    /// Whether the domain still routes (it was neither invalidated nor replaced).
    public var isActive: Bool { router.isActive }

    /// ``isActive``, readable from any isolation (model actors check it before a save).
    package nonisolated var isRouting: Bool { activity.isSet }
    private nonisolated let activity: ActivityFlag

    // A domain released without `invalidate()` ends the registrations it made, which would
    // otherwise go on reporting changes nothing routes; the view context finds its router
    // gone by itself (see `instrumentingRouter`). Only thread-safe members are touched here:
    // the last release may happen on any thread.
    deinit {
        for registration in registrations { registration.invalidate() }
    }

    /// Stops routing: the view context is no longer instrumented, and the registrations this
    /// domain made are invalidated. Idempotent. Readers keep their values; none is woken again
    /// by this domain.
    public func invalidate() {
        guard router.isActive else { return }
        router.deactivate()
        let view = modelContainer.viewContext
        if view.observationRouter === router || view.observationRouter == nil {
            view.observationRouter = nil
            view.instrumentsObservation = false
        }
        for registration in registrations { registration.invalidate() }
        registrations = []
        router.log("domain invalidated")
    }

    /// Makes `context`'s plain `save()` report the properties it changed, so that its saves
    /// wake only the readers of those properties once merged into the view context. Keep the
    /// registration while the context is used; ``CDEObservationProducerRegistration/invalidate()``
    /// (or releasing it, or invalidating the domain) ends it.
    @discardableResult
    public func registerChangeProducer(context: NSManagedObjectContext) -> CDEObservationProducerRegistration {
        let registration = CDEObservationProducerRegistration(context: context)
        registrations.removeAll { !$0.isActive }
        if router.isActive { registrations.append(registration) } else { registration.invalidate() }
        return registration
    }

    /// A new background context of the container, registered as a change producer for as
    /// long as this domain lives.
    public func newObservedBackgroundContext() -> NSManagedObjectContext {
        let context = modelContainer.newBackgroundContext()
        registerChangeProducer(context: context)
        return context
    }

    /// Saves `context` on its queue, reporting the properties the save changed, with nothing
    /// between collecting them and the commit.
    ///
    /// - Throws: what `save()` throws. A thrown save reports nothing, and the context keeps
    ///   its changes (roll back or retry as for any failed save).
    public nonisolated func saveObservedChanges(in context: NSManagedObjectContext) async throws {
        try await context.perform {
            try context.saveReportingChangedProperties()
        }
    }

    /// Rolls the view context back and wakes the readers of the objects the rollback
    /// restores (every property of the updated and deleted objects). Inserted objects leave
    /// the context; their readers are forgotten, not woken.
    public func rollbackObservedChanges() {
        let view = modelContainer.viewContext
        let restored = view.updatedSet.union(view.deletedSet).filter { !$0.flags.contains(.inserted) }
        let inserted = view.insertions.objects
        view.rollback()
        router.routeRollback(restored: Array(restored), inserted: inserted)
    }

    static let debugLoggingFromEnvironment: Bool = {
        guard let value = ProcessInfo.processInfo.environment["CDE_OBSERVATION_DEBUG"]?.lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }()
}
