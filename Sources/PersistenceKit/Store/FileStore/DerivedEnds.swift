/// The derived to-many ends of links — a shelf's `books`, the non-owning side of a
/// many-to-many — kept in memory from the owning ends instead of in the file.
///
/// # Why
/// Each link has one owning end (see `LinkKeeper`): a book's `shelf` owns the link, and the
/// shelf's `books` follows. Stored in the shelf's row (format versions 1 and 2), that list
/// made a save that put one book on a shelf of 50,000 rewrite the whole list: ~600 KB and
/// 15–19 ms per save, and a file that grew by that much each time. A SQL store keeps only
/// the foreign key and finds the list through it; from format version 3 the file store does
/// the same: rows are written with `null` in their derived to-many columns, and reading a
/// row fills those columns in from these lists. Files of versions 1 and 2 are read the
/// same way — the lists they store are ignored, the owning ends decide — and are still
/// written with the lists (so an older build reads them right) until a compaction rewrites
/// them as version 3.
///
/// # Invariants
/// - While `isReady`, `lists[k][t]` holds, in ascending order and without repeats, exactly
///   the rows whose owning column (end `k`'s source) links to row `t` of end `k`'s entity,
///   as the row tables hold them.
/// - Built on first use from the row tables (opening a store decodes no rows), then kept
///   current by every change to the tables that a commit makes. Replaying records at open
///   does not touch them: they are not ready then.
struct DerivedEnds {
    /// Which columns are derived to-many ends, and which owning column each follows.
    struct Layout: Sendable {
        /// One derived to-many end.
        struct End: Sendable {
            /// The entity of the derived end (the shelf's `books`; its column is in `derived`).
            var entity: Int32
            /// The entities and column of the owning end it follows (the book's `shelf`): the
            /// relationship's destination and its sub-entities, which inherit the column, in
            /// ascending index order.
            var sources: [Int32]
            var sourceProperty: Int
        }

        /// A column of an entity, and the end it belongs to (an index into `ends`).
        struct Column: Sendable {
            var property: Int
            var end: Int
        }

        let ends: [End]
        /// Per entity index: its derived to-many columns.
        let derived: [[Column]]
        /// Per entity index: its owning columns that some derived end follows.
        let sources: [[Column]]

        init(model: NSManagedObjectModel, links: LinkKeeper) {
            func family(_ entity: Int32) -> [Int32] {
                (model.entity(at: entity)?.selfAndDescendants.map(\.index) ?? [entity]).sorted()
            }
            var ends: [End] = []
            let count = Int(model.entities.map(\.index).max() ?? -1) + 1
            var derived = [[Column]](repeating: [], count: count)
            var sources = [[Column]](repeating: [], count: count)
            for e in model.entities {
                // An ordered end keeps its order in its rows: it is stored, not derived.
                for end in links.ends(e.index) ?? [] where end.isToMany && !end.owns && !end.isOwnInverse && !end.isOrdered {
                    let k = ends.count
                    let owners = family(end.destination)
                    ends.append(End(entity: e.index, sources: owners, sourceProperty: end.inverseProperty))
                    derived[Int(e.index)].append(Column(property: end.property, end: k))
                    for owner in owners { sources[Int(owner)].append(Column(property: end.inverseProperty, end: k)) }
                }
            }
            self.ends = ends
            self.derived = derived
            self.sources = sources
        }

        /// The derived to-many columns of `entity` (empty for most entities).
        @inline(__always)
        func derivedColumns(_ entity: Int32) -> [Column] {
            entity >= 0 && Int(entity) < derived.count ? derived[Int(entity)] : []
        }

        /// The owning columns of `entity` that derived ends follow (empty for most).
        @inline(__always)
        func sourceColumns(_ entity: Int32) -> [Column] {
            entity >= 0 && Int(entity) < sources.count ? sources[Int(entity)] : []
        }

        /// `values` with `null` in every derived to-many column of `entity`: what version 3
        /// writes.
        func stripped(_ values: [StoreValue], of entity: Int32) -> [StoreValue] {
            var values = values
            for c in derivedColumns(entity) where c.property < values.count { values[c.property] = .null }
            return values
        }
    }

    /// Per end: target primary key → the rows linking to it, in ascending order.
    private(set) var lists: [[Int64: [StoreRowID]]] = []
    /// Whether `lists` reflect the row tables (see the invariants).
    private(set) var isReady = false

    /// One list: an end and the target's primary key.
    private struct Target: Hashable {
        var end: Int
        var key: Int64
    }

    /// Rows to add to and take out of one list.
    private struct Change {
        var adds: [StoreRowID] = []
        var removes: [StoreRowID] = []
    }

    /// Changes noted by `follow` and not applied yet (empty outside a commit).
    private var pending: [Target: Change] = [:]

    /// Builds the lists from the owning columns of every row in `tables`.
    ///
    /// A row whose owning value does not decode (a damaged file) links to nothing here:
    /// reading that row reports the damage, but the rows around it stay readable (failing
    /// the build would fail every read of the entities it links, for one row). Deleting or
    /// rewriting it later is consistent with that, as its old value reads as nothing there
    /// too (`FileStore.storedValue`).
    mutating func build(
        _ layout: Layout, tables: [Int32: FileStore.Table], image: StoreImage, numbering: EntityNumbering?, path: String
    ) throws(FileStoreError) {
        var lists = [[Int64: [StoreRowID]]](repeating: [:], count: layout.ends.count)
        try image.withBytes { buf throws(FileStoreError) in
            for (k, end) in layout.ends.enumerated() {
                // Source entities in ascending index order, each table's rows in ascending key
                // order: the lists come out in ascending row ID order.
                for sourceEntity in end.sources {
                    guard let table = tables[sourceEntity] else { continue }
                    // Rows come in ascending key order, so every list is built sorted; a row that
                    // names one target twice (the store API accepts such a list) is listed once,
                    // as `follow` lists it (listed twice here, it would read back twice after a
                    // reopen).
                    var cursor = table.rows.makeCursor()
                    while let (pk, ref) = cursor.next() {
                        guard let value = FileStore.storedValue(at: end.sourceProperty, of: ref, buf, numbering: numbering, path: path)
                        else { continue }
                        let source = StoreRowID(entity: sourceEntity, primaryKey: pk)
                        Self.forEachTarget(of: value, in: end.entity) { target in
                            if lists[k][target]?.last != source { lists[k][target, default: []].append(source) }
                        }
                    }
                }
            }
        }
        self.lists = lists
        pending = [:]
        isReady = true
    }

    /// Follows a change of row `row`'s owning column `column` from `old` to `new` (nil: the
    /// row did not exist, or no longer does). Does nothing before the lists are built.
    /// The change waits in `pending` until ``applyPending()``, which a commit calls once
    /// its rows are applied.
    mutating func follow(_ column: Layout.Column, of layout: Layout, row: StoreRowID, from old: StoreValue?, to new: StoreValue?) {
        guard isReady, old != new else { return }
        let entity = layout.ends[column.end].entity
        var removed: [Int64] = [], added: [Int64] = []
        if let old { Self.forEachTarget(of: old, in: entity) { removed.append($0) } }
        if let new { Self.forEachTarget(of: new, in: entity) { added.append($0) } }
        if removed.count + added.count > 2 {
            // A many-to-many owning list: only what changed moves.
            let before = Set(removed), after = Set(added)
            removed = removed.filter { !after.contains($0) }
            added = added.filter { !before.contains($0) }
        }
        for t in removed { pending[Target(end: column.end, key: t), default: Change()].removes.append(row) }
        for t in added { pending[Target(end: column.end, key: t), default: Change()].adds.append(row) }
    }

    /// Applies the changes `follow` noted, each list's together (see `Array.apply(adding:
    /// removing:)`). One at a time, a save that takes 80,000 books off a shelf of 160,000
    /// would move the list's tail 80,000 times.
    mutating func applyPending() {
        guard !pending.isEmpty else { return }
        for (target, change) in pending {
            var rows = lists[target.end].removeValue(forKey: target.key) ?? []
            rows.apply(adding: change.adds, removing: change.removes)
            if !rows.isEmpty { lists[target.end][target.key] = rows }
        }
        pending = [:]
    }

    /// Puts the lists into the derived to-many columns of `values`, the values of row `id`.
    func fill(_ values: inout [StoreValue], of id: StoreRowID, _ layout: Layout) {
        let columns = layout.derivedColumns(id.entity)
        if columns.isEmpty { return }
        assert(isReady && pending.isEmpty, "a row with derived ends is read only after the lists are built and current")
        for c in columns {
            if c.property >= values.count {
                values.append(contentsOf: repeatElement(.null, count: c.property + 1 - values.count))
            }
            values[c.property] = .references(lists[c.end][id.primaryKey] ?? [])
        }
    }

    /// Calls `body` with the primary key of each row of `entity` that `value` links to.
    private static func forEachTarget(of value: StoreValue, in entity: Int32, _ body: (Int64) -> Void) {
        switch value {
        case let .reference(t) where t.entity == entity: body(t.primaryKey)
        case let .references(ts): for t in ts where t.entity == entity { body(t.primaryKey) }
        default: break
        }
    }
}
