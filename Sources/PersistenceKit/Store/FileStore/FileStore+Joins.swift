import Foundation

// Predicates through a to-one relationship (`author.country == 7`), answered from the other
// side: the rows of the destination entity that pass the test are found first (by their own
// index when they have one), and the rows linking to them are read from the derived
// to-many lists (`Author.books`, which the store keeps for each author from the books'
// `author` column): the store's equivalent of a join through an indexed foreign key. Only
// those rows are then tested in full.
extension FileStore {
    /// The primary keys of the rows of `entity` that may pass `filter`, found through a
    /// to-one relationship as above; nil when no top-level part of the predicate allows it.
    ///
    /// A part qualifies when it tests a value one to-one step away that has a derived
    /// inverse list, and cannot hold for an empty to-one (equality with a value, an ordering,
    /// a list of values, a string test): rows whose to-one is empty are then no candidates.
    func keysThroughToOne(entity: Int32, filter: StoreFilter?, in s: inout State) throws(FileStoreError) -> [Int64]? {
        guard let predicate = filter?.predicate else { return nil }
        let parts: [StorePredicate]
        if case let .and(all) = predicate { parts = all } else { parts = [predicate] }
        for part in parts {
            guard let (step, inner) = Self.oneStep(part) else { continue }
            // One end per entity the to-one may lead to: its destination and each sub-entity.
            let ends = derivedLayout.ends.indices.filter {
                derivedLayout.ends[$0].sourceProperty == step && derivedLayout.ends[$0].sources.contains(entity)
            }
            guard !ends.isEmpty else { continue }
            var keys: [Int64] = []
            for end in ends {
                let destination = derivedLayout.ends[end].entity
                var targets: [Int64] = []
                try forEachMatch(entity: destination, filter: inner, in: &s) { pk, _, _ throws(FileStoreError) in targets.append(pk) }
                if !s.derived.isReady {
                    try s.derived.build(derivedLayout, tables: s.tables, image: s.image, numbering: s.numbering, path: path)
                }
                for t in targets {
                    // Only this entity's rows: a list holds every source entity's.
                    for row in s.derived.lists[end][t] ?? [] where row.entity == entity { keys.append(row.primaryKey) }
                }
            }
            keys.sort()
            if ends.count > 1 {
                var unique: [Int64] = []
                for k in keys where unique.last != k { unique.append(k) }
                keys = unique
            }
            return keys
        }
        return nil
    }

    /// The to-one step and the test on the destination's rows of a predicate part that
    /// reads one step away and cannot hold for an empty to-one.
    private static func oneStep(_ part: StorePredicate) -> (Int, StoreFilter)? {
        switch part {
        case let .compare(path, op, value) where path.through.count == 1 && !value.isNull && op != .notEqual:
            return (path.through[0], StoreFilter([StoreFilter.Condition(property: path.property, op, value)]))
        case let .oneOf(path, values) where path.through.count == 1 && !values.contains(where: \.isNull):
            return (path.through[0], StoreFilter([], predicate: .oneOf(StorePath(property: path.property), values)))
        case let .text(path, test) where path.through.count == 1:
            return (path.through[0], StoreFilter([], predicate: .text(StorePath(property: path.property), test)))
        default:
            return nil
        }
    }
}
