import Foundation

/// The properties a save's updated objects changed: `masks[i]` for the object `ids[i]`, bit
/// `s` set when the property at storage index `s` changed (every bit when one past the 64th
/// did: its readers are all woken). Arrays, not a dictionary: a save of 10,000 objects fills
/// them in one pass, and a merge reads them by position (see `SavedChanges`).
struct ChangedProperties: Sendable {
    var ids: [NSManagedObjectID] = []
    var masks: [UInt64] = []

    /// The mask of `ids[index]` if that is `id` and names a property; `nil` otherwise (an
    /// update that changed no persistent property, transient ones only say, is routed to
    /// every reader).
    @inline(__always)
    func mask(at index: Int, for id: NSManagedObjectID) -> UInt64? {
        index >= 0 && index < ids.count && ids[index] == id && masks[index] != 0 ? masks[index] : nil
    }

    mutating func append(_ id: NSManagedObjectID, mask: UInt64) {
        ids.append(id)
        masks.append(mask)
    }

    /// The mask of the stored values `values` against the snapshot's `saved`.
    static func mask(_ values: [StoreValue], against saved: [StoreValue]) -> UInt64 {
        guard values.count == saved.count, values.count <= 64 else { return .max }
        var mask: UInt64 = 0
        for i in values.indices where !values[i].isSame(as: saved[i]) { mask |= 1 << UInt64(i) }
        return mask
    }

    /// The storage indexes a mask names.
    static func slots(of mask: UInt64, in entity: NSEntityDescription) -> [Int] {
        if mask == .max { return Array(entity.properties.indices) }
        return (0..<min(64, entity.properties.count)).filter { mask & (1 << UInt64($0)) != 0 }
    }
}

// A context reports the properties its save changed (`SavedChanges.changedProperties`, and
// the did-save notification under `savedChangesKey` for manual merges) only where an
// observation domain can use them: the instrumented view context, a registered producer, or
// one `saveObservedChanges` save. Every other save pays one flag test.

extension NSManagedObjectContext {
    /// The did-save user-info key under which a reporting save hands over its changes as the
    /// automatic merges get them (`SavedChangesBox`), so that `mergeChanges(fromContextDidSave:)`
    /// routes as precisely, and as cheaply, as an automatic merge.
    static let savedChangesKey = "PersistenceKitSavedChanges"

    /// Whether this save reports the properties it changed.
    var reportsChangedProperties: Bool {
        instrumentingRouter != nil || reportsChangedPropertiesOnce || observedChangeProducers.load(ordering: .relaxed) > 0
    }

    /// `save()`, reporting the properties it changed whether or not the context is a
    /// registered producer (the save behind every `saveObservedChanges`). Call it on the
    /// context's queue; it throws what `save()` throws, and a thrown save reports nothing.
    package func saveReportingChangedProperties() throws {
        reportsChangedPropertiesOnce = true
        defer { reportsChangedPropertiesOnce = false }
        try save()
    }

    /// The router of the domain instrumenting this context, if any (on this queue). A
    /// domain released without `invalidate()` leaves the flag set: the first look that finds
    /// no router clears it.
    var instrumentingRouter: ObservationRouter? {
        guard instrumentsObservation else { return nil }
        if let router = observationRouter, router.isActive { return router }
        instrumentsObservation = false
        return nil
    }
}

/// A save's changes as its own coordinator's contexts merge them, carried by its did-save
/// notification.
final class SavedChangesBox: Sendable {
    let changes: SavedChanges
    /// The coordinator whose IDs `changes` holds: a context of another coordinator maps the
    /// notification's objects instead.
    let coordinator: NSPersistentStoreCoordinator
    init(_ changes: SavedChanges, coordinator: NSPersistentStoreCoordinator) {
        self.changes = changes
        self.coordinator = coordinator
    }
}
