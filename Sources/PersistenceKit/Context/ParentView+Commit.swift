import Foundation

// A child's save, applied to its parent's objects (see `ParentContextStore`).
extension ParentView {
    /// The updates and deletions of `transaction` whose rows the parent changed since the
    /// child read them (their version here moved), or no longer holds.
    func conflicts(of transaction: StoreTransaction) throws -> [StoreConflict] {
        var result: [StoreConflict] = []
        for update in transaction.updates {
            let current = try row(update.id)
            if current?.version != update.version {
                result.append(StoreConflict(id: update.id, expectedVersion: update.version, current: current))
            }
        }
        for delete in transaction.deletes {
            // A row the parent no longer holds needs no deleting.
            if let current = try row(delete.id), current.version != delete.expectedVersion {
                result.append(StoreConflict(id: delete.id, expectedVersion: delete.expectedVersion, current: current))
            }
        }
        return result
    }

    /// Applies `transaction` to the parent's objects as unsaved changes: inserts become
    /// inserted objects (with the temporary or permanent ID the row names), updates set the
    /// values that differ (relationships with inverse upkeep), deletions delete. Returns the
    /// committed rows: the inserts, then the updates, each at its new version. The parent
    /// then announces the changes (objects-did-change).
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreSave` when a row names an entity the
    ///   model does not have or an object the parent no longer holds; nothing is applied.
    func apply(_ transaction: StoreTransaction) throws -> [StoreRow] {
        var written: [(row: StoreRow, object: NSManagedObject)] = []
        for update in transaction.updates {
            guard let o = object(update.id) else {
                throw CoreDataError(
                    .persistentStoreSave, "the parent context '\(parent.debugName)' no longer holds \(update.id) to update.")
            }
            written.append((update, o))
        }
        for insert in transaction.inserts {
            guard model.entity(at: insert.id.entity) != nil else {
                throw CoreDataError(.persistentStoreSave, "no entity numbered \(insert.id.entity) in the model.")
            }
        }
        var inserted: [(row: StoreRow, object: NSManagedObject)] = []
        for insert in transaction.inserts {
            let entity = model.entity(at: insert.id.entity)!  // checked above
            let o = entity.managedObjectClass.init(entity: entity, insertInto: nil)
            if insert.id.primaryKey < 0 {
                o.setObjectKey(ObjectKey(temporary: -insert.id.primaryKey))
                state.unsaved[-insert.id.primaryKey] = o
            } else {
                o.setObjectKey(ObjectKey(row: insert.id, storeNumber: parent.storeNumber(for: store.identifier)))
            }
            parent.insert(o)
            inserted.append((insert, o))
        }
        written = inserted + written
        // Attributes first, then relationships: every object exists before links are made.
        for (row, o) in written { setValues(of: o, to: row, relationships: false) }
        for (row, o) in written { setValues(of: o, to: row, relationships: true) }
        for delete in transaction.deletes {
            state.served[delete.id] = nil
            guard let o = registeredObject(delete.id) ?? object(delete.id), !o.flags.contains(.deleted) else { continue }
            parent.delete(o)
        }
        parent.processPendingChanges()
        var committed: [StoreRow] = []
        committed.reserveCapacity(written.count)
        for (i, (row, o)) in written.enumerated() {
            let version = i < inserted.count ? 1 : row.version + 1
            var hasher = Hasher()
            hasher.combine(values(of: o))
            state.served[row.id] = (version, hasher.finalize())
            committed.append(StoreRow(id: row.id, version: version, values: row.values))
        }
        return committed
    }

    /// Sets the attributes (or the relationships) of `o` whose values differ from `row`'s.
    private func setValues(of o: NSManagedObject, to row: StoreRow, relationships: Bool) {
        if o.flags.contains(.fault) { o.fireFault() }
        let kinds = o.entity.slotKinds
        for i in kinds.indices {
            let kind = kinds[i]
            if kind.isTransient || (kind == .attribute) == relationships { continue }
            let new = row.value(at: i)
            if o.encodedValue(at: i, rowFor: { rowID(of: $0) }).isSame(as: new) { continue }
            switch kind {
            case .attribute:
                o.setAttribute(new, at: i)
            case .toOne:
                if case let .reference(target) = new { o.setToOne(object(target), at: i) } else { o.setToOne(nil, at: i) }
            case .toMany:
                var targets: [NSManagedObject] = []
                if case let .references(rows) = new { for r in rows { if let t = object(r) { targets.append(t) } } }
                // An ordered relationship takes the child's order too.
                if o.entity.properties[i].isOrderedToMany {
                    o.replaceOrderedToMany(with: targets, at: i)
                } else {
                    o.replaceToMany(with: Set(targets), at: i)
                }
            case .transientAttribute:
                continue
            }
        }
    }
}
