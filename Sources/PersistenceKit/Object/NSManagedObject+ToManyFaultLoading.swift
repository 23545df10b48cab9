import Foundation

// Firing a to-many relationship fault loads its targets with it, as Core Data's does: one
// store read for the rows of all the targets that hold none, instead of one per target when
// each is first touched (the books of an author read one by one made a read per book).
extension NSManagedObject {
    /// The to-many targets at slot `i` for a caller that reads them. When the slot still
    /// holds row IDs (the relationship is a fault), the targets that are faults holding no
    /// row get their rows in one store read; afterwards, as ``resolvedToMany(at:)``.
    func resolvedToManyLoadingTargets(at i: Int) -> Set<NSManagedObject> {
        guard case .unresolvedToMany = slots[i] else { return resolvedToMany(at: i) }
        let targets = resolvedToMany(at: i)
        if let context = managedObjectContext, let destination = relationship(at: i).destinationEntity {
            context.loadRows(ofFaults: targets, entity: destination)
        }
        return targets
    }
}

extension NSManagedObjectContext {
    /// Gives the faults among `objects` (of `entity`) that hold no row their rows, read in
    /// one store pass. A row the store no longer has, or a read that fails, leaves its fault
    /// as it was: firing it reads the store then and reports what it finds.
    func loadRows(ofFaults objects: Set<NSManagedObject>, entity: NSEntityDescription) {
        var ids: [StoreRowID] = []
        for o in objects where o.isFaultWithoutRow {
            if let row = o.rowID { ids.append(row) }
        }
        if ids.isEmpty { return }
        guard let store = try? readStore(for: "firing a to-many fault") else { return }
        noteHeldRow(readAt: CommitClock.now)  // read before the rows: they are at least this new
        guard var rows = try? store.fetchRows(ids.sorted()) else { return }
        let number = storeNumber(for: store.identifier)
        for index in rows.indices {
            _ = register(taking: &rows[index], entity: entity, storeNumber: number)
        }
    }
}
