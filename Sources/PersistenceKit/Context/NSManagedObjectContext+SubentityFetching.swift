import Foundation

extension NSManagedObjectContext {
    /// The candidates of a fetch over `entity` and its sub-entities: each entity of the
    /// family fetched alone (its store rows, its pending changes, the predicate and sort
    /// applied as for any fetch), then merged, sorted by the request's rules and cut to its
    /// window. Each part takes at most `offset + limit` objects: sorted alike, no object past
    /// that in one part can be in the merged window.
    func fetchFamilyCandidates<T>(
        _ request: NSFetchRequest<T>, entity: NSEntityDescription, tracksFaults: Bool, defersEveryRow: Bool
    ) throws -> (matches: [NSManagedObject], entity: NSEntityDescription, faultsAtStart: Set<ObjectIdentifier>, holdsStandIns: Bool) {
        let partLimit = request.fetchLimit > 0 ? max(0, request.fetchOffset) + request.fetchLimit : 0
        var matches: [NSManagedObject] = []
        var faultsAtStart: Set<ObjectIdentifier> = []
        var holdsStandIns = false
        for member in entity.selfAndDescendants {
            let part = try fetchCandidates(
                request.part(for: member, limit: partLimit), tracksFaults: tracksFaults, defersEveryRow: defersEveryRow)
            matches += part.matches
            faultsAtStart.formUnion(part.faultsAtStart)
            holdsStandIns = holdsStandIns || part.holdsStandIns
        }
        if !request.sortRules.isEmpty {
            let rules = request.sortRules
            // Sort rules read objects with this context as the judging one (stand-ins resolve
            // their relationships through it), as a single entity's fetch does.
            Self.$judging.withValue(self) {
                matches.sort { a, b in
                    for rule in rules {
                        switch rule.compare(a, b) {
                        case .orderedAscending: return true
                        case .orderedDescending: return false
                        case .orderedSame: continue
                        }
                    }
                    return false
                }
            }
        }
        if request.fetchOffset > 0 { matches = Array(matches.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 && matches.count > request.fetchLimit { matches = Array(matches.prefix(request.fetchLimit)) }
        return (matches, entity, faultsAtStart, holdsStandIns)
    }
}

extension NSEntityDescription {
    /// The entity of `row`: this one, or — for a row of one of its sub-entities, reached
    /// through a relationship to this entity — that sub-entity. (One compare when the row is
    /// this entity's, as nearly always.)
    @inline(__always)
    func forRow(_ row: StoreRowID) -> NSEntityDescription {
        if row.entity == index { return self }
        return managedObjectModel?.entity(at: row.entity) ?? self
    }

    /// This entity, then its sub-entities and theirs, depth first: the entities whose
    /// objects a fetch of this one returns when it includes sub-entities.
    var selfAndDescendants: [NSEntityDescription] {
        var result: [NSEntityDescription] = [self]
        var i = 0
        while i < result.count {
            result += result[i].subentities
            i += 1
        }
        return result
    }
}
