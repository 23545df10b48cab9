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
/// at their current version). Deleting a row takes it out of every row that links to it
/// (owning ends keep it under a "no action" rule, as foreign keys do).
/// With this, no commit can leave a link between two rows on one side only, whatever the
/// contexts send.
/// Contexts alone cannot promise this: with links kept only by the contexts, the
/// randomized conflict test still leaves a one-sided link (seeds 21013 and 39217 of
/// 1–40000), so the store keeps the ends itself.
struct LinkKeeper: Sendable {
    /// One relationship with an inverse, as the commit needs it.
    struct End: Sendable {
        /// The relationship's property index in its entity.
        var property: Int
        var isToMany: Bool
        /// The inverse's property index in the destination entity.
        var inverseProperty: Int
        /// Whether this end owns the link (its value is taken as written).
        var owns: Bool
        /// Whether the delete rule is "no action": deleting the row leaves the other ends.
        var keepsInverseOnDelete: Bool
        /// Whether the relationship is its own inverse (a spouse, friends): both ends own.
        var isOwnInverse: Bool
        /// The destination entity's index.
        var destination: Int32
        /// Whether the relationship keeps its rows in an order (an ordered to-many): its
        /// value is stored in the order written, never sorted, and is never derived.
        var isOrdered: Bool = false
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
                    // By the entities that declare the two ends: every entity of a family
                    // inherits a relationship and must agree on which end owns it.
                    owns = (r.entity?.name ?? e.name, r.name) <= (inverse.entity?.name ?? destination.name, inverse.name)
                }
                ends[e.index, default: []].append(
                    End(
                        property: r.index, isToMany: r.isToMany, inverseProperty: inverse.index, owns: owns,
                        keepsInverseOnDelete: r.deleteRule == .noActionDeleteRule, isOwnInverse: inverse === r,
                        destination: destination.index, isOrdered: r.isOrdered && r.isToMany))
            }
        }
        let count = Int(model.entities.map(\.index).max() ?? -1) + 1
        byEntity = (0..<count).map { ends[Int32($0)] ?? [] }
    }

    /// The linked relationships of `entity`, or nil when it has none.
    func ends(_ entity: Int32) -> [End]? {
        guard entity >= 0, Int(entity) < byEntity.count else { return nil }
        let ends = byEntity[Int(entity)]
        return ends.isEmpty ? nil : ends
    }

    /// Whether rows of `entity` take part in links (if none in a transaction do, `apply`
    /// has nothing to do).
    func hasLinks(_ entity: Int32) -> Bool { ends(entity) != nil }

    /// A pending change to one derived (or, for a deletion, owning) end. Arrays, not sets:
    /// a row's owning end changes a link to a given target once per transaction, so no
    /// source is added twice or both added and removed (an import of 50,000 books onto one
    /// shelf hashed each book twice more as sets).
    private struct Patch {
        var adds: [StoreRowID] = []
        var removes: [StoreRowID] = []
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
        // The end noted last and where its patch is in the table: consecutive notes to one
        // end (an import of many books onto one shelf) change it in place without hashing,
        // and a note to an end already in the table hashes once. (Taking the patch out of
        // the table and putting it back cost two hashes and two moves whenever the end
        // changed: callgrind, batch insert of 10,000 books onto 1,000 authors in turn.)
        // An index stays valid until the table gains or loses a key: `last` is dropped then.
        var last: (target: Target, index: Dictionary<Target, Patch>.Index)?
        func patch(_ row: StoreRowID, _ property: Int, _ change: (inout Patch) -> Void) {
            let target = Target(row: row, property: property)
            if let last, last.target == target {
                change(&patches.values[last.index])
            } else if let i = patches.index(forKey: target) {
                change(&patches.values[i])
                last = (target, i)
            } else {
                var p = Patch()
                change(&p)
                patches[target] = p
                last = nil
            }
        }
        func closePatch() { last = nil }
        func note(_ row: StoreRowID, _ property: Int, add source: StoreRowID) {
            patch(row, property) { $0.adds.append(source) }
        }
        func note(_ row: StoreRowID, _ property: Int, remove source: StoreRowID) {
            patch(row, property) { $0.removes.append(source) }
        }

        // What the owning ends written here change: added and removed links. Updates that
        // keep their owning ends as stored change none (the version check passed).
        var owners = [(transaction.inserts, false)]
        if !transaction.updatesKeepOwningEnds { owners.append((transaction.updates, true)) }
        for (rows, isUpdate) in owners {
            for row in rows {
                guard let entityEnds = ends(row.id.entity) else { continue }
                let old = isUpdate ? try storedRow(row.id) : nil
                for end in entityEnds where end.owns {
                    // Compared as stored first: a large set that did not change costs one
                    // pass, not two sets of hashes.
                    let written = row.value(at: end.property)
                    let was = old?.value(at: end.property) ?? .null
                    if was == written || (was.isNull && written == .references([])) { continue }
                    if !end.isToMany {
                        if case let .reference(t) = written { note(t, end.inverseProperty, add: row.id) }
                        if case let .reference(t) = was { note(t, end.inverseProperty, remove: row.id) }
                        continue
                    }
                    let before = Self.targets(was)
                    let after = Self.targets(written)
                    if before == after { continue }
                    for t in after.subtracting(before) { note(t, end.inverseProperty, add: row.id) }
                    for t in before.subtracting(after) { note(t, end.inverseProperty, remove: row.id) }
                }
            }
        }
        // A deleted row leaves every row that links to it. Under a "no action" rule an
        // owning end elsewhere keeps pointing at it, as a foreign key does in Core Data's SQL
        // store (the model asked for that); a derived end always lets go, as a list a SQL
        // store computes from the foreign keys would: a derived end that kept a row deleted
        // under "no action" could never be emptied, since derived ends are the store's to
        // keep. A row that cannot be read is deleted all the same: deleting is how a damaged
        // row is got rid of.
        for d in transaction.deletes {
            guard let entityEnds = ends(d.id.entity), let old = try? storedRow(d.id) else { continue }
            for end in entityEnds where end.owns || !end.keepsInverseOnDelete {
                for t in Self.targets(old.value(at: end.property)) { note(t, end.inverseProperty, remove: d.id) }
            }
        }
        closePatch()

        // A derived to-one (one end of a one-to-one) holds one owner: when several owning
        // ends claim it, or a new one claims it from its stored owner, the one kept is the
        // highest row, and the others let go of it; otherwise the previous owner, or a
        // second claimant in the same transaction, keeps pointing at it, one-sided. The same
        // holds for a to-one that is its own inverse (a spouse), whose ends both own.
        for (target, patch) in patches.sorted(by: { ($0.key.row, $0.key.property) < ($1.key.row, $1.key.property) })
        where !patch.adds.isEmpty {
            guard let end = ends(target.row.entity)?.first(where: { $0.property == target.property }), !end.isToMany,
                !end.owns || end.isOwnInverse
            else { continue }
            let winner = patch.adds.max()!
            var losers = patch.adds.filter { $0 != winner }
            if case let .reference(previous)? = try storedRow(target.row)?.value(at: target.property), previous != winner,
                !patch.removes.contains(previous)
            {
                losers.append(previous)
            }
            for loser in losers where !deleted.contains(loser) { note(loser, end.inverseProperty, remove: target.row) }
        }
        closePatch()

        // Rows of the transaction: derived ends from the store, then the patches. Each
        // patch is taken out of the table as its row is settled, so what is left is for rows
        // outside the transaction. Which ends have patches at all is marked per entity first:
        // looking every row's ends up in the table (and keeping a set of the transaction's
        // rows) was most of the cost of an import of 50,000 linked rows (callgrind).
        var targeted = byEntity.map { [Bool](repeating: false, count: $0.count) }
        for key in patches.keys {
            let e = Int(key.row.entity)
            if e >= 0, e < byEntity.count, let k = byEntity[e].firstIndex(where: { $0.property == key.property }) {
                targeted[e][k] = true
            }
        }
        // Rows with a derived end are settled (it is set to the stored value), and rows with
        // a patched owning end; the rest are left alone without a call.
        let settling = byEntity.indices.map { e in byEntity[e].contains { !$0.owns } || targeted[e].contains(true) }
        func settle(_ row: inout StoreRow, isUpdate: Bool) throws(E) {
            guard let entityEnds = ends(row.id.entity) else { return }
            let marks = targeted[Int(row.id.entity)]
            for (k, end) in entityEnds.enumerated() {
                let patch = marks[k] ? patches.removeValue(forKey: Target(row: row.id, property: end.property)) : nil
                if end.owns {
                    // Only a deletion patches an owning end (the row links to a deleted row).
                    guard let patch else { continue }
                    Self.set(&row, end, Self.patched(row.value(at: end.property), patch, end))
                } else {
                    let base = isUpdate ? try storedRow(row.id)?.value(at: end.property) ?? .null : .null
                    var settled = Self.patched(base, patch ?? Patch(), end)
                    // An ordered end's rows are the owning ends' to decide, its order the
                    // writer's: the rows as settled, in the order written, then any the
                    // writer did not list.
                    if end.isOrdered { settled = Self.ordered(settled, like: row.value(at: end.property)) }
                    Self.set(&row, end, settled)
                }
            }
        }
        func needsSettling(_ row: StoreRow) -> Bool {
            let e = Int(row.id.entity)
            return e >= 0 && e < settling.count && settling[e]
        }
        for i in transaction.inserts.indices where needsSettling(transaction.inserts[i]) {
            try settle(&transaction.inserts[i], isUpdate: false)
        }
        for i in transaction.updates.indices where needsSettling(transaction.updates[i]) {
            try settle(&transaction.updates[i], isUpdate: true)
        }

        // Rows outside the transaction whose ends change are written too. A link an owning
        // end written here makes to a row that is gone (deleted by this transaction, or
        // missing) is taken off that owning end: the store keeps no new link to nothing.
        // Without this, a book updated onto a shelf deleted in the same commit is stored
        // pointing at the missing row. Under "no action" on the deleted row's side
        // the link stays, as its delete rule asks.
        var extra: [StoreRowID: StoreRow] = [:]
        var toNowhere: [StoreRowID: [(property: Int, target: StoreRowID)]] = [:]
        for (target, patch) in patches.sorted(by: { ($0.key.row, $0.key.property) < ($1.key.row, $1.key.property) }) {
            let id = target.row
            guard let end = ends(id.entity)?.first(where: { $0.property == target.property }) else { continue }
            var found = extra[id]
            if found == nil, !deleted.contains(id) { found = try storedRow(id) }
            guard var row = found else {
                if !(deleted.contains(id) && end.keepsInverseOnDelete) {
                    for source in patch.adds { toNowhere[source, default: []].append((end.inverseProperty, id)) }
                }
                continue
            }
            let old = row.value(at: end.property)
            let new = Self.patched(old, patch, end)
            if new == old { continue }
            Self.set(&row, end, new)
            extra[id] = row
        }
        if !toNowhere.isEmpty {
            func unlink(_ row: inout StoreRow) {
                guard let links = toNowhere[row.id], let entityEnds = ends(row.id.entity) else { return }
                for (property, target) in links {
                    guard let end = entityEnds.first(where: { $0.property == property }) else { continue }
                    Self.set(&row, end, Self.patched(row.value(at: property), Patch(removes: [target]), end))
                }
            }
            for i in transaction.inserts.indices { unlink(&transaction.inserts[i]) }
            for i in transaction.updates.indices { unlink(&transaction.updates[i]) }
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
    /// them; see SortedRows.swift); a to-one takes an added row, or lets go of a removed one.
    private static func patched(_ value: StoreValue, _ patch: Patch, _ end: End) -> StoreValue {
        if end.isOrdered {
            // Kept in order: removed rows leave, added ones go last.
            var rows: [StoreRowID]
            switch value {
            case let .references(r): rows = r
            case let .reference(r): rows = [r]
            default: rows = []
            }
            if patch.adds.isEmpty && patch.removes.isEmpty { return .references(rows) }
            let removes = Set(patch.removes)
            rows.removeAll { removes.contains($0) }
            var present = Set(rows)
            for row in patch.adds where present.insert(row).inserted { rows.append(row) }
            return .references(rows)
        }
        if end.isToMany {
            var rows: [StoreRowID]
            switch value {
            case let .references(r): rows = r
            case let .reference(r): rows = [r]
            default: rows = []
            }
            if patch.adds.isEmpty && patch.removes.isEmpty { return .references(rows) }
            rows = rows.sortedUnique
            rows.apply(adding: patch.adds, removing: patch.removes)
            return .references(rows)
        }
        if let added = patch.adds.max() { return .reference(added) }  // several: one wins, the same each time
        if case let .reference(row) = value, patch.removes.contains(row) { return .null }
        return value
    }

    /// The rows of `settled` in the order `written` lists them, then those it does not list
    /// in their order in `settled`.
    private static func ordered(_ settled: StoreValue, like written: StoreValue) -> StoreValue {
        guard case let .references(rows) = settled, case let .references(order) = written, order != rows else { return settled }
        var remaining = Set(rows)
        var result: [StoreRowID] = []
        result.reserveCapacity(rows.count)
        for row in order where remaining.remove(row) != nil { result.append(row) }
        for row in rows where remaining.contains(row) { result.append(row) }
        return .references(result)
    }

    private static func set(_ row: inout StoreRow, _ end: End, _ value: StoreValue) {
        if end.property >= row.values.count {
            row.values.append(contentsOf: repeatElement(.null, count: end.property + 1 - row.values.count))
        }
        row.values[end.property] = value
    }
}
