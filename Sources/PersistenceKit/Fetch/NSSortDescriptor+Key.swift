import Foundation

// String-keyed sort descriptors (`NSSortDescriptor(key: "title", ascending: true)`). Linux
// Foundation marks its `init(key:ascending:)` unavailable (it has no key-value coding); this
// one, declared in this module, is chosen at call sites that import it. The descriptor
// keeps its key inside its comparator, which gives it back when handed a `SortKeyProbe`
// (see `stringKey`); a fetch request sorts by that key as by a ``SortKey``.

/// Receives the key of a key-made sort descriptor from its comparator.
final class SortKeyProbe {
    var key: String?
}

extension NSSortDescriptor {
    /// A sort descriptor on `key`: an attribute of the fetched entity, or one reached through
    /// to-one relationships (`"author.name"`), ascending or descending, comparing values as
    /// ``SortKey`` does. For fetch requests (``NSFetchRequest/sortDescriptors``); its own
    /// `compare(_:to:)` compares managed objects by the key's values.
    public convenience init(key: String, ascending: Bool) {
        self.init(keyPath: \NSManagedObject.self, ascending: ascending) { a, b in
            if let probe = a as? SortKeyProbe {
                probe.key = key
                return .orderedSame
            }
            guard let x = a as? NSManagedObject, let y = b as? NSManagedObject else { return .orderedSame }
            let rule = FetchSortRule.key(SortKey(key, ascending: true))
            return rule.compare(x, y)
        }
    }

    /// The key a descriptor was made with by ``init(key:ascending:)``; nil for others.
    var stringKey: String? {
        guard keyPath == \NSManagedObject.self else { return nil }
        let probe = SortKeyProbe()
        _ = comparator(probe, probe)
        return probe.key
    }
}
