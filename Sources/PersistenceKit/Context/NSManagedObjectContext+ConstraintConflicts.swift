import Foundation

// Uniqueness constraint conflicts in a save: the store refuses a commit that would repeat a
// constrained key (`StoreCommitResult.constraintConflicts`), and the context resolves what it
// reports by its merge policy, then commits again. As in Core Data:
// - error policy: the save throws `.managedObjectConstraintMerge` with the conflicts; nothing
//   is written and the context keeps its changes.
// - with a stored row holding the key, the stored object stays and the objects of the save
//   holding the key leave the save: inserted ones are deleted from the context, changed
//   saved ones lose their changes. Object trump first gives the stored object the values the
//   (last) inserted object set (its properties that differ from the defaults); overwrite gives
//   it every persistent value of that object; store trump and rollback leave the stored
//   values as they are.
// - between objects of the save only, one keeps the key: the last one inserted (or changed)
//   under object trump and overwrite, the first under store trump and rollback; the others
//   leave the save as above.
// A constraint declared on a super-entity holds across its sub-entities: the objects and the
// stored object of one conflict may be of different entities. The stored object keeps its
// entity; under object trump and overwrite it takes the values of the properties it shares
// with the object that keeps the key.
extension NSManagedObjectContext {
    /// Applies the merge policy to the constraint conflicts of a commit, or throws them.
    /// `sent` is the transaction the store refused, `written` its objects (inserts, then
    /// updates, as ``StoreTransaction`` lists their rows).
    ///
    /// - Throws: ``CoreDataError`` `.managedObjectConstraintMerge` under the error policy, or
    ///   on the last attempt of a save; nothing has changed then.
    func resolve(
        _ clashes: [StoreConstraintConflict], sent: StoreTransaction, written: [NSManagedObject], store: any PersistentStore,
        finalAttempt: Bool
    ) throws {
        var byRow: [StoreRowID: (object: NSManagedObject, row: StoreRow)] = [:]
        for (o, row) in zip(written, sent.inserts + sent.updates) { byRow[row.id] = (o, row) }
        let policy = mergePolicyStorage.mergeType
        if policy == .errorMergePolicyType || finalAttempt {
            throw Self.constraintConflictError(clashes.compactMap { report($0, byRow: byRow, store: store) })
        }
        let keepsLast = policy == .mergeByPropertyObjectTrumpMergePolicyType || policy == .overwriteMergePolicyType
        var leaving: [NSManagedObject] = []
        for clash in clashes {
            guard let entity = coordinator.managedObjectModel.entity(at: clash.entity) else { continue }
            let holders = clash.rows.compactMap { byRow[$0]?.object }
            guard let winner = keepsLast ? holders.last : holders.first else { continue }
            if let stored = clash.stored {
                if keepsLast {
                    let storedEntity = coordinator.managedObjectModel.entity(at: stored.id.entity) ?? entity
                    let target = object(forRow: stored.id, entity: storedEntity)
                    give(target, valuesOf: winner, constrained: clash.columns, all: policy == .overwriteMergePolicyType)
                }
                leaving += holders
            } else {
                leaving += holders.filter { $0 !== winner }
            }
        }
        for o in leaving where !o.flags.contains(.invalidated) && o.isOwned(by: self) {
            if o.flags.contains(.inserted) {
                o.pendingRow = nil
                delete(o)
            } else {
                refresh(o, mergeChanges: false)
            }
        }
        // Deleted inserts leave the context now (delete rules included), before the retry.
        processPendingChanges()
    }

    /// Gives `target` the values of `source`: every persistent property (`all`), or those
    /// `source` set — for an inserted object, the properties that differ from the entity's
    /// defaults; for a saved one, those it changed. The constrained attributes hold equal
    /// values already and are left alone. When the two are of different entities of a family,
    /// only the properties both inherit from their nearest common entity are given (they
    /// lead both property lists, at the same indexes); a same-named property each declares
    /// itself is another property and is left alone.
    private func give(_ target: NSManagedObject, valuesOf source: NSManagedObject, constrained: [Int], all: Bool) {
        let entity = source.entity
        var shared = 0
        var ancestor: NSEntityDescription? = entity
        while let a = ancestor {
            if target.entity.isKindOf(entity: a) {
                shared = a.properties.count
                break
            }
            ancestor = a.superentity
        }
        let defaults = entity.defaultValues
        let inserted = source.flags.contains(.inserted)
        for (i, p) in entity.properties.enumerated().prefix(shared) where !p.isTransient && !constrained.contains(i) {
            if !all {
                if inserted {
                    let isDefault =
                        switch entity.slotKinds[i] {
                        case .attribute: source.currentAttributeValue(at: i).isSame(as: i < defaults.count ? defaults[i] : .null)
                        case .toOne: source.resolvedToOne(at: i) == nil
                        case .toMany: source.resolvedToMany(at: i).isEmpty
                        case .transientAttribute: true
                        }
                    if isDefault { continue }
                } else if !source.persistentValueDiffers(at: i) {
                    continue
                }
            }
            target.setValue(source.value(forKey: p.name), forKey: p.name)
        }
    }

    /// The conflict as reported to the caller, or `nil` when its entity is unknown.
    private func report(
        _ clash: StoreConstraintConflict, byRow: [StoreRowID: (object: NSManagedObject, row: StoreRow)], store: any PersistentStore
    ) -> NSConstraintConflict? {
        guard let entity = coordinator.managedObjectModel.entity(at: clash.entity) else { return nil }
        let names = clash.columns.map { entity.properties[$0].name }
        var values: [String: any Sendable] = [:]
        for (name, value) in zip(names, clash.values) {
            if let v = Self.sendable(value, of: entity.attributesByName[name]?.attributeType) { values[name] = v }
        }
        let holders = clash.rows.compactMap { byRow[$0] }
        // The stored row may be of another entity of the family than the constraint's.
        let storedEntity = clash.stored.flatMap { coordinator.managedObjectModel.entity(at: $0.id.entity) } ?? entity
        return NSConstraintConflict(
            constraint: names, constraintValues: values,
            databaseObject: clash.stored.map { NSManagedObjectID(entity: storedEntity, row: $0.id, store: store.identifier) },
            conflictingObjects: holders.map(\.object.objectID),
            conflictingSnapshots: holders.map { Self.snapshot($0.row, of: $0.object.entity) },
            databaseSnapshot: clash.stored.map { Self.snapshot($0, of: storedEntity) })
    }

    /// The persistent attributes of `row` by name (`nil` values left out).
    private static func snapshot(_ row: StoreRow, of entity: NSEntityDescription) -> [String: any Sendable] {
        var result: [String: any Sendable] = [:]
        for case let a as NSAttributeDescription in entity.properties where !a.isTransient {
            if let v = sendable(row.value(at: a.index), of: a.attributeType) { result[a.name] = v }
        }
        return result
    }

    /// A stored attribute value as the Swift value `value(forKey:)` gives for `type`.
    private static func sendable(_ value: StoreValue, of type: NSAttributeType?) -> (any Sendable)? {
        (type ?? .undefinedAttributeType).anyValue(from: value)
    }

    /// The error of a save that breaks uniqueness constraints under the error policy (or on
    /// its last attempt).
    static func constraintConflictError(_ conflicts: [NSConstraintConflict]) -> CoreDataError {
        CoreDataError(
            .managedObjectConstraintMerge,
            "the save would break uniqueness constraints (\(conflicts.map(\.description).joined(separator: "; "))). Nothing "
                + "was written. Change or delete the conflicting objects and save again, or set a merge policy such as "
                + "NSMergeByPropertyObjectTrumpMergePolicy to update the stored objects instead.",
            constraintConflicts: conflicts)
    }
}
