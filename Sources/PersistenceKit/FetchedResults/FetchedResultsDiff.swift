import Foundation

/// The changes between two states of a fetched results controller's sections, as the
/// delegate is told them.
///
/// Sections are matched by name, objects by identity. An object in both states is a move
/// when it changed section, or changed place among the objects that are not
/// `reorderable`; among reorderable objects with the same place in that sense, a group
/// whose order changed is reported as moves. Reorderable objects in `changed` that do not
/// move are updates. Indexes: deletions and moves' `old` paths are in the old state,
/// insertions, moves' and updates' `new` paths in the new one (as a table view's batch
/// updates read them).
struct FetchedResultsDiff {
    /// A section inserted or deleted.
    struct SectionChange {
        let section: FetchedResultsSection
        let index: Int
        let type: NSFetchedResultsChangeType
    }

    /// An object inserted, deleted, moved or updated.
    struct ObjectChange {
        let object: NSManagedObject
        let type: NSFetchedResultsChangeType
        let old: IndexPath?
        let new: IndexPath?
    }

    /// Section deletions (by old index), then insertions (by new index).
    private(set) var sectionChanges: [SectionChange] = []
    /// Deletions, insertions, moves, updates; each in index order.
    private(set) var objectChanges: [ObjectChange] = []

    var isEmpty: Bool { sectionChanges.isEmpty && objectChanges.isEmpty }

    private struct Place {
        let path: IndexPath
        let flat: Int
        let section: String
    }

    private static func places(_ sections: [FetchedResultsSection]) -> [ObjectIdentifier: Place] {
        var places: [ObjectIdentifier: Place] = [:]
        var flat = 0
        for (s, section) in sections.enumerated() {
            for (i, o) in section.members.enumerated() {
                places[ObjectIdentifier(o)] = Place(path: IndexPath(indexes: [s, i]), flat: flat, section: section.name)
                flat += 1
            }
        }
        return places
    }

    init(
        old: [FetchedResultsSection], new: [FetchedResultsSection], changed: Set<ObjectIdentifier>,
        reorderable: Set<ObjectIdentifier>
    ) {
        let oldNames = Set(old.map(\.name)), newNames = Set(new.map(\.name))
        for (i, s) in old.enumerated() where !newNames.contains(s.name) {
            sectionChanges.append(SectionChange(section: s, index: i, type: .delete))
        }
        for (i, s) in new.enumerated() where !oldNames.contains(s.name) {
            sectionChanges.append(SectionChange(section: s, index: i, type: .insert))
        }

        let oldPlaces = Self.places(old), newPlaces = Self.places(new)
        let oldFlat = old.flatMap(\.members), newFlat = new.flatMap(\.members)
        for o in oldFlat where newPlaces[ObjectIdentifier(o)] == nil {
            objectChanges.append(ObjectChange(object: o, type: .delete, old: oldPlaces[ObjectIdentifier(o)]?.path, new: nil))
        }
        for o in newFlat where oldPlaces[ObjectIdentifier(o)] == nil {
            objectChanges.append(ObjectChange(object: o, type: .insert, old: nil, new: newPlaces[ObjectIdentifier(o)]?.path))
        }

        // Place among the fixed survivors: how many of them come before, per state.
        func ranks(_ flat: [NSManagedObject], _ otherPlaces: [ObjectIdentifier: Place]) -> [ObjectIdentifier: Int] {
            var ranks: [ObjectIdentifier: Int] = [:]
            var fixedSeen = 0
            for o in flat {
                let id = ObjectIdentifier(o)
                guard otherPlaces[id] != nil else { continue }
                if reorderable.contains(id) { ranks[id] = fixedSeen } else { fixedSeen += 1 }
            }
            return ranks
        }
        let oldRanks = ranks(oldFlat, newPlaces), newRanks = ranks(newFlat, oldPlaces)
        struct GroupKey: Hashable {
            let section: String
            let rank: Int
        }
        var moved = Set<ObjectIdentifier>()
        var groups: [GroupKey: [ObjectIdentifier]] = [:]
        for o in newFlat {
            let id = ObjectIdentifier(o)
            guard let newRank = newRanks[id], let oldRank = oldRanks[id], let before = oldPlaces[id], let after = newPlaces[id]
            else { continue }
            if before.section != after.section || oldRank != newRank {
                moved.insert(id)
            } else {
                groups[GroupKey(section: after.section, rank: newRank), default: []].append(id)
            }
        }
        for members in groups.values where members.count > 1 {
            let oldOrder = members.sorted { oldPlaces[$0]!.flat < oldPlaces[$1]!.flat }
            if oldOrder != members { moved.formUnion(members) }
        }
        for o in newFlat where moved.contains(ObjectIdentifier(o)) {
            let id = ObjectIdentifier(o)
            objectChanges.append(ObjectChange(object: o, type: .move, old: oldPlaces[id]?.path, new: newPlaces[id]?.path))
        }
        for o in newFlat {
            let id = ObjectIdentifier(o)
            guard changed.contains(id), !moved.contains(id), let before = oldPlaces[id] else { continue }
            objectChanges.append(ObjectChange(object: o, type: .update, old: before.path, new: newPlaces[id]?.path))
        }
    }
}
