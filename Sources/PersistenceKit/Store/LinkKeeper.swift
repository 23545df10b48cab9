import Foundation

/// Keeps the two ends of every stored link in agreement, inside a store's commit.
///
/// Rows hold both ends of a relationship: a book's `shelf` and the shelf's `books`. A context
/// writes both ends of each link it changes, but two ends read at different times can
/// disagree in memory (one loaded before another coordinator's save, the other after), and
/// a save then wrote a link one row listed and the other denied. So each link has one
/// *owning* end, as a foreign key has in SQL: the to-one end of a one-to-many, and for a
/// one-to-one or many-to-many the end whose (entity name, relationship name) sorts first.
/// A commit takes what the owning ends say, and the *derived* ends follow: their values in
/// the transaction are replaced by the stored value with the owning ends' changes applied,
/// and rows outside the transaction whose derived end changes are written too (as updates
/// at their current version). Deleting a row takes it out of every row that links to it.
/// With this, no commit can leave a link on one side only, whatever the contexts send.
/// (Regression history: the randomized conflict run found one-sided links a dozen times,
/// each fixed in the contexts; seeds 21013 and 39217 of 1–40000 still produced one until
/// the store kept the ends itself.)
struct LinkKeeper: Sendable {
    /// One relationship with an inverse, as the commit needs it.
    struct End: Sendable {
        var property: Int
        var isToMany: Bool
        var inverseEntity: Int32
        var inverseProperty: Int
        var inverseIsToMany: Bool
        /// Whether this end owns the link (its value is taken as written).
        var owns: Bool
        /// Whether the delete rule is "no action": deleting the row leaves the other ends.
        var keepsInverseOnDelete: Bool
    }

    /// Stored relationships with an inverse, by entity index (an array: `apply` looks up
    /// the entity of every row of a transaction, 100,000 for a large import).
    private let byEntity: [[End]]

    init(model: NSManagedObjectModel) {
        var ends: [Int32: [End]] = [:]
        for e in model.entities {
            for case let r as NSRelationshipDescription in e.properties where !r.isTransient {
                guard let inverse = r.inverseRelationship, !inverse.isTransient, let destination = r.destinationEntity else { continue }
                let owns: Bool
                if r.isToMany != inverse.isToMany {
                    owns = !r.isToMany
                } else {
                    owns = (e.name, r.name) <= (destination.name, inverse.name)
                }
                ends[e.index, default: []].append(
                    End(
                        property: r.index, isToMany: r.isToMany, inverseEntity: destination.index, inverseProperty: inverse.index,
                        inverseIsToMany: inverse.isToMany, owns: owns, keepsInverseOnDelete: r.deleteRule == .noActionDeleteRule))
            }
        }
        let count = Int(model.entities.map(\.index).max() ?? -1) + 1
        byEntity = (0..<count).map { ends[Int32($0)] ?? [] }
    }

    /// The linked relationships of `entity`, or nil when it has none.
    private func ends(_ entity: Int32) -> [End]? {
        guard entity >= 0, Int(entity) < byEntity.count else { return nil }
        let ends = byEntity[Int(entity)]
        return ends.isEmpty ? nil : ends
    }

    /// Whether rows of `entity` take part in links (if none in a transaction do, `apply`
    /// has nothing to do).
    func hasLinks(_ entity: Int32) -> Bool { ends(entity) != nil }

    /// A pending change to one derived (or, for a deletion, owning) end.
    private struct Patch {
        var adds: Set<StoreRowID> = []
        var removes: Set<StoreRowID> = []
    }

    private struct Target: Hashable {
        var row: StoreRowID
        var property: Int
    }

    /// Rewrites `transaction` so that both ends of every link agree once it is applied.
    /// `current` returns the stored row (nil when there is none). Call it after the
    /// optimistic-lock checks passed and before writing, under the store's lock.
    ///
    /// Rows added to `transaction.updates` carry their current version: the store writes
    /// them at the next one, like the rest of the transaction's updates.
    func apply<E: Error>(to transaction: inout StoreTransaction, current: (StoreRowID) throws(E) -> StoreRow?) throws(E) {
        guard
            transaction.inserts.contains(where: { hasLinks($0.id.entity) })
                || transaction.updates.contains(where: { hasLinks($0.id.entity) })
                || transaction.deletes.contains(where: { hasLinks($0.id.entity) })
        else { return }
        var stored: [StoreRowID: StoreRow?] = [:]
        func storedRow(_ id: StoreRowID) throws(E) -> StoreRow? {
            if let known = stored[id] { return known }
            let row = try current(id)
            stored[id] = row
            return row
        }
        let deleted = Set(transaction.deletes.map(\.id))
        var patches: [Target: Patch] = [:]
        func note(_ row: StoreRowID, _ property: Int, add source: StoreRowID) {
            patches[Target(row: row, property: property), default: Patch()].adds.insert(source)
        }
        func note(_ row: StoreRowID, _ property: Int, remove source: StoreRowID) {
            patches[Target(row: row, property: property), default: Patch()].removes.insert(source)
        }

        // What the owning ends written here change: added and removed links.
        for (rows, isUpdate) in [(transaction.inserts, false), (transaction.updates, true)] {
            for row in rows {
                guard let entityEnds = ends(row.id.entity) else { continue }
                let old = isUpdate ? try storedRow(row.id) : nil
                for end in entityEnds where end.owns {
                    let before = Self.targets(old?.value(at: end.property) ?? .null)
                    let after = Self.targets(row.value(at: end.property))
                    if before == after { continue }
                    for t in after.subtracting(before) { note(t, end.inverseProperty, add: row.id) }
                    for t in before.subtracting(after) { note(t, end.inverseProperty, remove: row.id) }
                }
            }
        }
        // A deleted row leaves every row that links to it, through either end, unless its
        // relationship's delete rule is "no action" (as in Core Data, the other end then
        // keeps pointing at it: the model asked for that). A row that cannot be read is
        // deleted all the same: deleting is how a damaged row is got rid of.
        for d in transaction.deletes {
            guard let entityEnds = ends(d.id.entity), let old = try? storedRow(d.id) else { continue }
            for end in entityEnds where !end.keepsInverseOnDelete {
                for t in Self.targets(old.value(at: end.property)) { note(t, end.inverseProperty, remove: d.id) }
            }
        }

        // Rows of the transaction: derived ends from the store, then the patches.
        var inTransaction = Set<StoreRowID>()
        func settle(_ row: inout StoreRow, isUpdate: Bool) throws(E) {
            inTransaction.insert(row.id)
            guard let entityEnds = ends(row.id.entity) else { return }
            for end in entityEnds {
                let patch = patches[Target(row: row.id, property: end.property)]
                if end.owns {
                    // Only a deletion patches an owning end (the row links to a deleted row).
                    guard let patch else { continue }
                    Self.set(&row, end, Self.patched(row.value(at: end.property), patch, toMany: end.isToMany))
                } else {
                    let base = isUpdate ? try storedRow(row.id)?.value(at: end.property) ?? .null : .null
                    Self.set(&row, end, Self.patched(base, patch ?? Patch(), toMany: end.isToMany))
                }
            }
        }
        for i in transaction.inserts.indices { try settle(&transaction.inserts[i], isUpdate: false) }
        for i in transaction.updates.indices { try settle(&transaction.updates[i], isUpdate: true) }

        // Rows outside the transaction whose ends change are written too.
        var extra: [StoreRowID: StoreRow] = [:]
        for (target, patch) in patches.sorted(by: { ($0.key.row, $0.key.property) < ($1.key.row, $1.key.property) }) {
            let id = target.row
            guard !inTransaction.contains(id), !deleted.contains(id), let end = ends(id.entity)?.first(where: { $0.property == target.property })
            else { continue }
            var found = extra[id]
            if found == nil { found = try storedRow(id) }
            guard var row = found else { continue }  // a missing target: nothing to keep
            let old = row.value(at: end.property)
            let new = Self.patched(old, patch, toMany: end.isToMany)
            if new == old { continue }
            Self.set(&row, end, new)
            extra[id] = row
        }
        transaction.updates.append(contentsOf: extra.values.sorted { $0.id < $1.id })
    }

    /// The rows a relationship value links to.
    private static func targets(_ value: StoreValue) -> Set<StoreRowID> {
        switch value {
        case let .reference(row): [row]
        case let .references(rows): Set(rows)
        default: []
        }
    }

    /// `value` with `patch` applied: a to-many keeps its rows sorted (as contexts write
    /// them); a to-one takes an added row, or lets go of a removed one.
    private static func patched(_ value: StoreValue, _ patch: Patch, toMany: Bool) -> StoreValue {
        if toMany {
            var rows = targets(value)
            rows.subtract(patch.removes)
            rows.formUnion(patch.adds)
            return .references(rows.sorted())
        }
        if let added = patch.adds.max() { return .reference(added) }  // several: one wins, the same each time
        if case let .reference(row) = value, patch.removes.contains(row) { return .null }
        return value
    }

    private static func set(_ row: inout StoreRow, _ end: End, _ value: StoreValue) {
        if end.property >= row.values.count {
            row.values.append(contentsOf: repeatElement(.null, count: end.property + 1 - row.values.count))
        }
        row.values[end.property] = value
    }
}
