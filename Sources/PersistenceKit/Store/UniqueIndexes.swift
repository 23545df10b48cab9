import Foundation

/// The values of one row for the columns of one uniqueness constraint.
struct UniqueKey: Hashable, Sendable {
    var values: [StoreValue]

    /// The key of `values` at `columns`; `nil` when any of them is null or NaN: as in a SQL
    /// unique index, such a row is distinct from every other.
    init?(_ values: [StoreValue], columns: [Int]) {
        var key: [StoreValue] = []
        key.reserveCapacity(columns.count)
        for c in columns {
            let v = c < values.count ? values[c] : .null
            if v.isNull || v.isNaN { return nil }
            key.append(AttributeIndex.key(v))
        }
        self.values = key
    }
}

/// The uniqueness constraints of a model as the stores check them: each constraint once,
/// keyed by the entity that declares it (its scope) and held across every entity that
/// inherits it, as Core Data's single table per family holds it. A constraint a sub-entity
/// declares itself spans that sub-entity and its own sub-entities only.
struct UniqueConstraints: Sendable {
    /// One constraint: its scope, its columns (property indexes, which a family shares),
    /// and the entities whose rows it covers (the scope and every entity below it).
    struct Constraint: Sendable {
        var scope: Int32
        var columns: [Int]
        var members: Set<Int32>
    }

    /// Every constraint, numbered by position: by the index of the first entity having
    /// it, then in that entity's `uniqueColumns` order (the order conflicts are reported in).
    let all: [Constraint]
    /// Per entity having constraints, the numbers of its constraints (own and inherited).
    let byEntity: [Int32: [Int]]

    /// Whether the model has no constraint (the commit paths then skip every check).
    var isEmpty: Bool { all.isEmpty }

    /// No constraints.
    init() {
        all = []
        byEntity = [:]
    }

    /// The constraints of `model`, which is sealed here.
    init(model: NSManagedObjectModel) {
        model.seal()
        var all: [Constraint] = []
        var numbers: [ScopedColumns: Int] = [:]
        var byEntity: [Int32: [Int]] = [:]
        for e in model.entities where !e.uniqueColumns.isEmpty {
            for columns in e.uniqueColumns {
                // The scope is the highest entity up the chain that has the constraint: the
                // one that declares it. Its sub-entities inherit the columns at the same
                // indexes, so one key space covers them all.
                var scope = e
                var ancestor = e.superentity
                while let a = ancestor {
                    if a.uniqueColumns.contains(columns) { scope = a }
                    ancestor = a.superentity
                }
                let id = ScopedColumns(scope: scope.index, columns: columns)
                let number: Int
                if let n = numbers[id] {
                    number = n
                } else {
                    number = all.count
                    numbers[id] = number
                    all.append(Constraint(scope: scope.index, columns: columns, members: Self.family(of: scope, in: model)))
                }
                byEntity[e.index, default: []].append(number)
            }
        }
        self.all = all
        self.byEntity = byEntity
    }

    /// Per entity, the columns of its constraints (own and inherited), in its own order.
    var columnsByEntity: [Int32: [[Int]]] { byEntity.mapValues { $0.map { all[$0].columns } } }

    /// `scope` and every entity of `model` below it.
    private static func family(of scope: NSEntityDescription, in model: NSManagedObjectModel) -> Set<Int32> {
        var result: Set<Int32> = []
        for e in model.entities {
            var current: NSEntityDescription? = e
            while let c = current, c !== scope { current = c.superentity }
            if current != nil { result.insert(e.index) }
        }
        return result
    }

    private struct ScopedColumns: Hashable {
        var scope: Int32
        var columns: [Int]
    }
}

/// A store's unique indexes: for each constraint (see ``UniqueConstraints``), the row holding
/// each key, whichever entity of the constraint's family the row belongs to. Built per
/// constraint when a commit first writes rows it covers (from the rows of every member
/// entity stored then), and kept by every commit after. A store whose model has no
/// constraints never builds one, and its commits test one empty list.
struct UniqueIndexes: Sendable {
    /// One constraint's index: key → row, and back (so that an update or a delete frees its
    /// row's old key without reading the old row).
    struct Index: Sendable {
        var rowByKey: [UniqueKey: StoreRowID] = [:]
        var keyByRow: [StoreRowID: UniqueKey] = [:]

        mutating func put(_ key: UniqueKey?, _ id: StoreRowID) {
            if let old = keyByRow.removeValue(forKey: id), rowByKey[old] == id { rowByKey[old] = nil }
            guard let key else { return }
            rowByKey[key] = id
            keyByRow[id] = key
        }

        mutating func remove(_ id: StoreRowID) { put(nil, id) }
    }

    /// Per constraint number, its index, once built.
    private var built: [Int: Index] = [:]

    /// The constraints covering rows `t` inserts or updates whose indexes are not built.
    func unbuiltConstraints(writtenBy t: StoreTransaction, constraints: UniqueConstraints) -> [Int] {
        var result = Set<Int>()
        for row in t.inserts { for k in constraints.byEntity[row.id.entity] ?? [] where built[k] == nil { result.insert(k) } }
        for row in t.updates { for k in constraints.byEntity[row.id.entity] ?? [] where built[k] == nil { result.insert(k) } }
        return result.sorted()
    }

    /// Builds the index of constraint `number` from the stored rows of its member entities,
    /// given by `forEachRow` as (row, values at least at the constraint's columns). When
    /// stored rows already share a key (a store written before the constraint spanned the
    /// family), the first one given holds it.
    mutating func build<E: Error>(
        _ number: Int, constraints: UniqueConstraints, forEachRow: ((StoreRowID, [StoreValue]) -> Void) throws(E) -> Void
    ) throws(E) {
        let columns = constraints.all[number].columns
        var index = Index()
        try forEachRow { id, values in
            guard let key = UniqueKey(values, columns: columns), index.rowByKey[key] == nil else { return }
            index.put(key, id)
        }
        built[number] = index
    }

    /// The conflicts `t` would create, judged on the rows as they would be after it: the keys
    /// of the rows it deletes or updates are free for its other rows. Each conflict names the
    /// constraint's scope as its entity; its rows may be of any entity of the family. Needs
    /// the index of every constraint covering a row `t` writes built; `stored` reads a row
    /// that holds a key.
    func conflicts<E: Error>(
        in t: StoreTransaction, constraints: UniqueConstraints, stored: (StoreRowID) throws(E) -> StoreRow?
    ) throws(E) -> [StoreConstraintConflict] {
        var leaving = Set<StoreRowID>()
        for row in t.updates where constraints.byEntity[row.id.entity] != nil { leaving.insert(row.id) }
        for d in t.deletes where constraints.byEntity[d.id.entity] != nil { leaving.insert(d.id) }
        var touched = Set<Int>()
        for row in t.inserts { touched.formUnion(constraints.byEntity[row.id.entity] ?? []) }
        for row in t.updates { touched.formUnion(constraints.byEntity[row.id.entity] ?? []) }
        var result: [StoreConstraintConflict] = []
        for number in touched.sorted() {
            guard let index = built[number] else { continue }
            let constraint = constraints.all[number]
            // Per key: the rows of `t` holding it, in transaction order, and a stored row
            // that keeps holding it.
            var holders: [UniqueKey: (rows: [StoreRowID], stored: StoreRowID?)] = [:]
            var keys: [UniqueKey] = []
            for rows in [t.inserts, t.updates] {
                for row in rows where constraint.members.contains(row.id.entity) {
                    guard let key = UniqueKey(row.values, columns: constraint.columns) else { continue }
                    if holders[key] == nil {
                        let holder = index.rowByKey[key]
                        holders[key] = ([], holder.flatMap { leaving.contains($0) ? nil : $0 })
                        keys.append(key)
                    }
                    holders[key]?.rows.append(row.id)
                }
            }
            for key in keys {
                guard let h = holders[key], h.rows.count > 1 || h.stored != nil else { continue }
                let row = try h.stored.flatMap { id throws(E) in try stored(id) }
                result.append(
                    StoreConstraintConflict(
                        entity: constraint.scope, columns: constraint.columns, values: key.values, rows: h.rows, stored: row))
            }
        }
        return result
    }

    /// Keeps the built indexes after `t` was committed: deleted rows free their keys,
    /// inserted and updated rows take theirs.
    mutating func apply(_ t: StoreTransaction, constraints: UniqueConstraints) {
        for d in t.deletes {
            for k in constraints.byEntity[d.id.entity] ?? [] { built[k]?.remove(d.id) }
        }
        for row in t.updates { take(row, constraints) }
        for row in t.inserts { take(row, constraints) }
    }

    private mutating func take(_ row: StoreRow, _ constraints: UniqueConstraints) {
        for k in constraints.byEntity[row.id.entity] ?? [] {
            built[k]?.put(UniqueKey(row.values, columns: constraints.all[k].columns), row.id)
        }
    }
}
