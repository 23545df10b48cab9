import Foundation

/// The properties a save changed, by object: storage indexes (`entity.properties`).
typealias ChangedProperties = [NSManagedObjectID: [Int]]

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
        instrumentsObservation || reportsChangedPropertiesOnce || observedChangeProducers.load(ordering: .relaxed) > 0
    }

    /// The persistent properties each of `updated` changed since its snapshot, for those
    /// about to be written. Read before the commit, which replaces the snapshots.
    func changedProperties(of updated: [NSManagedObject]) -> ChangedProperties {
        var result: ChangedProperties = [:]
        result.reserveCapacity(updated.count)
        for o in updated where updatedSet.contains(o) {
            let slots = o.entity.properties.indices.filter { o.persistentValueDiffers(at: $0) }
            if !slots.isEmpty { result[o.objectID] = slots }
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

    /// The router of the domain instrumenting this context, if any (on this queue).
    var instrumentingRouter: ObservationRouter? {
        instrumentsObservation ? observationRouter : nil
    }
}
