import Foundation

// Predicates combined after they are built: the stand-in for Core Data's
// `NSCompoundPredicate(andPredicateWithSubpredicates:)` and `(orPredicateWithSubpredicates:)`.
// Linux Foundation's `Predicate` cannot call another predicate inside `#Predicate`, so a
// filter assembled from optional parts (a search screen's fields) needs this.

extension NSFetchRequest {
    /// Sets the predicate to "every one of `predicates` holds" (Core Data's
    /// `NSCompoundPredicate(andPredicateWithSubpredicates:)`). An empty list matches every
    /// object, as an empty AND does. When each part is one the store can run (see
    /// Differences: comparisons of attributes with constants, joined by `&&`), the store
    /// runs them all; otherwise the whole filter runs in memory. Replaces any predicate set
    /// before; ``predicate`` then reads `nil`.
    public func setPredicate<Root: NSManagedObject>(matchingAll predicates: [Predicate<Root>]) {
        filter = predicates.isEmpty ? nil : FetchFilter(combining: predicates, all: true)
    }

    /// Sets the predicate to "at least one of `predicates` holds" (Core Data's
    /// `NSCompoundPredicate(orPredicateWithSubpredicates:)`). An empty list matches no
    /// object, as an empty OR does. The store runs it when it can run every part. Replaces any predicate set before;
    /// ``predicate`` then reads `nil`.
    public func setPredicate<Root: NSManagedObject>(matchingAny predicates: [Predicate<Root>]) {
        filter = FetchFilter(combining: predicates, all: false)
    }
}

extension FetchFilter {
    /// A filter that holds when all (`all`) or any of `predicates` hold.
    init<Root: NSManagedObject>(combining predicates: [Predicate<Root>], all: Bool) {
        self.init(
            typed: predicates,
            expression: all ? AllOfExpressions(parts: predicates.map(\.expression)) : AnyOfExpressions(),
            evaluate: { object in
                guard let root = object as? Root else { return false }
                for p in predicates where try p.evaluate(root) != all { return !all }
                return all
            },
            accepts: { $0 is Root.Type },
            root: Root.self,
            translate: { entity in
                var parts: [StorePredicate] = []
                for p in predicates {
                    guard let part = storePredicate(of: p, for: entity) else { return nil }
                    parts.append(part)
                }
                return all ? .and(parts) : .or(parts)
            })
    }
}

/// The expressions of predicates that must all hold: translatable when every part is,
/// into all their conditions.
private struct AllOfExpressions: StoreTranslatable {
    let parts: [Any]

    func storeConditions(_ resolve: KeyPathResolver) -> [StoreFilter.Condition]? {
        var conditions: [StoreFilter.Condition] = []
        for part in parts {
            guard let more = (part as? any StoreTranslatable)?.storeConditions(resolve) else { return nil }
            conditions += more
        }
        return conditions
    }
}

/// The expressions of predicates of which one must hold: never translated (the store runs
/// conjunctions only).
private struct AnyOfExpressions {}
