import Foundation
import Synchronization

/// The routing half of a ``CDEObservationDomain``: what the view context learns from a save,
/// and whose readers it wakes.
///
///   changed properties known (the save's producer reported them) → those properties' readers
///   object IDs only                                                → every reader of the object
///   echo of a precise route (suppression on, within its lifetime)  → no one
///
/// Only objects a reader read under the domain (those with a registrar) are touched, and a
/// route costs a registry lookup per incoming ID, however many objects the context holds.
///
/// # Thread safety
/// Confined to the view context's queue, the main actor: the domain (main-actor isolated)
/// owns it, and the view context calls it from its own queue. Not a main-actor type itself
/// only so that the view context's objects need not cross into an isolation domain.
final class ObservationRouter {
    /// Cleared once the domain is invalidated or replaced; shared with the domain, which
    /// reads it from any isolation.
    let activity = ActivityFlag()
    /// False once the domain is invalidated or replaced.
    var isActive: Bool { activity.isSet }
    /// Whether routes are logged (the domain's `isDebugLoggingEnabled`).
    var isDebugLoggingEnabled: Bool
    /// The echo policy as resolved for the container.
    let suppressesEchoes: Bool
    /// Objects whose last route was precise, with when it happened, while echo suppression is
    /// on: a route of their IDs alone soon after is an echo of that route and is skipped.
    private(set) var echoMarkers: [NSManagedObjectID: ContinuousClock.Instant] = [:]
    /// How long an echo marker stays armed (2 s; tests that must not depend on the machine's
    /// speed lengthen it).
    var echoLifetime = Duration.seconds(2)

    init(suppressesEchoes: Bool, isDebugLoggingEnabled: Bool) {
        self.suppressesEchoes = suppressesEchoes
        self.isDebugLoggingEnabled = isDebugLoggingEnabled
    }

    /// Stops routing for good: the domain was invalidated or replaced.
    func deactivate() {
        activity.clear()
        echoMarkers = [:]
    }

    /// The view context saved: its updated objects wake the readers of what they changed;
    /// inserted ones that were read before the save, and `linkedEnds` (objects the store
    /// changed as the other ends of saved links), wake all their readers. Deleted ones left
    /// the context and wake no one (a local delete). `changed` lists `updated` in order.
    func routeOwnSave(
        updated: [NSManagedObject], changed: ChangedProperties?, inserted: [NSManagedObject], linkedEnds: [NSManagedObject]
    ) {
        guard isActive else { return }
        for (index, o) in updated.enumerated() where o.isObserved {
            route(o, mask: changed?.mask(at: index, for: o.objectID), source: "viewContextDidSave")
        }
        for o in inserted where o.isObserved { route(o, mask: nil, source: "viewContextDidSave") }
        for o in linkedEnds where o.isObserved { route(o, mask: nil, source: "viewContextDidSave") }
    }

    /// Another save was merged into the view context. `observedUpdates` are the observed
    /// objects among `changes.updated`, with their positions there.
    func routeMerge(
        _ changes: SavedChanges, observedUpdates: [(object: NSManagedObject, index: Int)],
        inserted: Set<NSManagedObject>, deleted: Set<NSManagedObject>
    ) {
        guard isActive else { return }
        for (o, index) in observedUpdates {
            let id = o.objectID
            let mask = changes.changedProperties?.mask(at: index - changes.changedPropertiesStart, for: id)
            if mask == nil && isEcho(id) {
                log("route source=merge object=\(id) skipped=echo")
            } else {
                route(o, mask: mask, source: "merge")
            }
        }
        for o in inserted where o.isObserved { route(o, mask: nil, source: "merge") }
        for o in deleted where o.isObserved {
            route(o, mask: nil, source: "merge (deleted)")
            o.dropObservers()
        }
    }

    /// `objects` were refreshed explicitly: every reader of each is woken, echoes aside.
    func routeRefresh(_ objects: some Sequence<NSManagedObject>) {
        guard isActive else { return }
        for o in objects where o.isObserved {
            if isEcho(o.objectID) {
                log("route source=refresh object=\(o.objectID) skipped=echo")
            } else {
                route(o, mask: nil, source: "refresh")
            }
        }
    }

    /// The view context rolled back: `restored` objects wake every reader; `inserted` ones
    /// left the context and their readers are forgotten.
    func routeRollback(restored: [NSManagedObject], inserted: [NSManagedObject]) {
        guard isActive else { return }
        for o in restored where o.isObserved { route(o, mask: nil, source: "rollback") }
        for o in inserted { o.dropObservers() }
    }

    /// The view context is about to save: a new local save ends every earlier route's echoes.
    func viewContextWillSave() {
        echoMarkers = [:]
    }

    /// Wakes the readers of what `mask` names (see `ChangedProperties`), or of every
    /// property when it is `nil`.
    private func route(_ o: NSManagedObject, mask: UInt64?, source: String) {
        guard let mask else {
            log("route source=\(source) object=\(o.objectID) decision=all")
            o.invalidateAllObservers()
            return
        }
        log("route source=\(source) object=\(o.objectID) decision=\(ChangedProperties.slots(of: mask, in: o.entity).map { o.entity.properties[$0].name })")
        o.invalidateObservers(mask: mask)
        guard suppressesEchoes else { return }
        // Bounded: every view-context save clears the markers; a long run of merges without
        // one drops the expired markers as they pile up.
        if echoMarkers.count >= 4096 {
            let now = ContinuousClock.now
            echoMarkers = echoMarkers.filter { $0.value.duration(to: now) < echoLifetime }
        }
        echoMarkers[o.objectID] = .now
    }

    /// Whether a route of `id` alone repeats a precise route that is still armed.
    private func isEcho(_ id: NSManagedObjectID) -> Bool {
        guard suppressesEchoes, let armed = echoMarkers[id] else { return false }
        if armed.duration(to: .now) < echoLifetime { return true }
        echoMarkers[id] = nil
        return false
    }

    func log(_ message: @autoclosure () -> String) {
        guard isDebugLoggingEnabled else { return }
        FileHandle.standardError.write(Data("[CDEObservation] \(message())\n".utf8))
    }
}

/// A flag that starts set and is cleared once, readable from any thread.
final class ActivityFlag: Sendable {
    private let value = Atomic<Bool>(true)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func clear() { value.store(false, ordering: .relaxed) }
}
