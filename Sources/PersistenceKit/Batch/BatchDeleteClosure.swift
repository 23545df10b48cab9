import Foundation

/// The rows a batch delete removes: the rows it matched, then every row their cascade
/// delete rules reach (recursively, each once), checked against deny rules.
struct BatchDeleteClosure {
    /// The rows to delete, matched ones first, as read (their versions are the ones the
    /// commit expects).
    private(set) var rows: [StoreRow]

    /// The IDs of ``rows``, in order.
    var order: [StoreRowID] { rows.map(\.id) }

    /// - Throws: ``CoreDataError`` `.validationRelationshipDeniedDelete` when a deny rule's
    ///   relationship holds a row that is not deleted too; the store's read errors.
    init(_ matched: [StoreRow], _ pass: BatchStorePass) throws {
        rows = matched
        var rules: [Int32: (cascade: [NSRelationshipDescription], deny: [NSRelationshipDescription])] = [:]
        func rulesOf(_ entity: Int32) -> (cascade: [NSRelationshipDescription], deny: [NSRelationshipDescription]) {
            if let known = rules[entity] { return known }
            let relationships = pass.entity(at: entity).properties.compactMap { $0 as? NSRelationshipDescription }.filter { !$0.isTransient }
            let found = (relationships.filter { $0.deleteRule == .cascadeDeleteRule }, relationships.filter { $0.deleteRule == .denyDeleteRule })
            rules[entity] = found
            return found
        }
        var seen = Set(matched.map(\.id))
        var frontier = matched
        while !frontier.isEmpty {
            var reached: [StoreRowID] = []
            for row in frontier {
                for r in rulesOf(row.id.entity).cascade {
                    for target in Self.targets(row.value(at: r.index)) where seen.insert(target).inserted { reached.append(target) }
                }
            }
            frontier = reached.isEmpty ? [] : try pass.store.fetchRows(reached)
            rows += frontier
        }
        for row in rows {
            for r in rulesOf(row.id.entity).deny {
                if let kept = Self.targets(row.value(at: r.index)).first(where: { !seen.contains($0) }) {
                    let ids = pass.objectIDs([row.id, kept])
                    throw CoreDataError(
                        .validationRelationshipDeniedDelete, objectID: ids[0], key: r.name, value: Set([ids[1]]),
                        "batch delete: \(ids[0]) cannot be deleted: its '\(r.name)' (deny rule) still holds \(ids[1]), which the "
                            + "request does not delete; nothing was deleted.")
                }
            }
        }
    }

    /// The rows a relationship value links to.
    private static func targets(_ value: StoreValue) -> [StoreRowID] {
        switch value {
        case let .reference(id): [id]
        case let .references(ids): ids
        default: []
        }
    }
}
