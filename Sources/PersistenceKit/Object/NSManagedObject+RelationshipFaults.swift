import Foundation

// Asking about a relationship without loading its targets, as Core Data's
// `hasFault(forRelationshipNamed:)` and `objectIDs(forRelationshipNamed:)` do; Core Data
// code that calls them compiles unchanged.
extension NSManagedObject {
    /// Whether relationship `key` is still a fault: its targets were read from the store but
    /// not made into objects yet (a to-many), or its target is a fault (a to-one). `true`
    /// when this object itself is a fault. Fires no fault.
    ///
    /// Traps when `key` is not a relationship of the entity (the message names both).
    public func hasFault(forRelationshipNamed key: String) -> Bool {
        let i = relationshipIndex(forKey: key, "hasFault(forRelationshipNamed: \"\(key)\")")
        checkQueue("hasFault(forRelationshipNamed: \"\(key)\")")
        if flags.contains(.fault) && !flags.contains(.invalidated) { return true }
        prepareForAccess("hasFault(forRelationshipNamed: \"\(key)\")")  // an invalidated object traps here
        switch slots[i] {
        case .unresolvedToMany: return true
        case let .unresolvedToOne(row): return row != nil
        case let .toOne(target): return target?.isFault ?? false
        default: return false
        }
    }

    /// The IDs of relationship `key`'s targets, without making objects of them: one ID or
    /// none for a to-one, all of them (in no particular order) for a to-many. Loads this
    /// object's own row if it is a fault, as reading any of its properties would.
    ///
    /// Traps when `key` is not a relationship of the entity (the message names both).
    public func objectIDs(forRelationshipNamed key: String) -> [NSManagedObjectID] {
        let i = relationshipIndex(forKey: key, "objectIDs(forRelationshipNamed: \"\(key)\")")
        prepareForAccess("objectIDs(forRelationshipNamed: \"\(key)\")")
        let r = relationship(at: i)
        func id(_ row: StoreRowID) -> NSManagedObjectID? {
            guard let destination = r.destinationEntity, let store = objectID.persistentStoreIdentifier else { return nil }
            return NSManagedObjectID(entity: destination.forRow(row), row: row, store: store)
        }
        switch slots[i] {
        case let .unresolvedToMany(rows): return rows.compactMap(id)
        case let .unresolvedToOne(row): return row.flatMap(id).map { [$0] } ?? []
        case let .toMany(targets): return targets.map(\.objectID)
        case let .toOne(target): return target.map { [$0.objectID] } ?? []
        case .value: return []
        }
    }

    private func relationshipIndex(forKey key: String, _ operation: String) -> Int {
        let i = index(forKey: key, operation)
        guard entity.properties[i] is NSRelationshipDescription else {
            programmerError(
                "PersistenceKit: \(operation) — '\(entity.name).\(key)' is an attribute, not a relationship.")
        }
        return i
    }
}
