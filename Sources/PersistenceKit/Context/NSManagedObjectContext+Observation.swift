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

    /// The masks by ID, for a merge whose IDs came in another order (a notification's sets).
    func byID() -> [NSManagedObjectID: UInt64] {
        Dictionary(zip(ids, masks).filter { $0.1 != 0 }, uniquingKeysWith: { a, b in a | b })
    }

    /// The storage indexes a mask names.
    static func slots(of mask: UInt64, in entity: NSEntityDescription) -> [Int] {
        if mask == .max { return Array(entity.properties.indices) }
        return (0..<min(64, entity.properties.count)).filter { mask & (1 << UInt64($0)) != 0 }
    }
}

// A context reports the properties its save changed (`SavedChanges.changedProperties`, and
// the did-save notification under `changedPropertiesKey` for manual merges) only where an
// observation domain can use them: the instrumented view context, a registered producer, or
// one `saveObservedChanges` save. Every other save pays one flag test.

extension NSManagedObjectContext {
    /// The did-save user-info key under which a reporting save lists its changed properties,
    /// so that `mergeChanges(fromContextDidSave:)` routes as precisely as an automatic merge.
    static let changedPropertiesKey = "PersistenceKitChangedProperties"

    /// Whether this save reports the properties it changed.
    var reportsChangedProperties: Bool {
        instrumentingRouter != nil || reportsChangedPropertiesOnce || observedChangeProducers.load(ordering: .relaxed) > 0
    }

    /// The persistent properties each of `updated` changed since its snapshot, for those
    /// about to be written, in the order `finishSave` announces them. Read before the commit,
    /// which replaces the snapshots.
    func changedProperties(of updated: [NSManagedObject]) -> ChangedProperties {
        var result = ChangedProperties()
        result.ids.reserveCapacity(updated.count)
        result.masks.reserveCapacity(updated.count)
        for o in updated where updatedSet.contains(o) {
            var mask: UInt64 = 0
            for s in o.entity.properties.indices where o.persistentValueDiffers(at: s) {
                if s >= 64 { mask = .max; break }
                mask |= 1 << UInt64(s)
            }
            result.ids.append(o.objectID)
            result.masks.append(mask)
        }
        return result
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
