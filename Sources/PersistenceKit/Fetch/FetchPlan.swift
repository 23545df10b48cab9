import Foundation

/// How a fetch request is run: where its predicate is evaluated, which attribute index the
/// store reads, and who sorts and cuts the window. For tests and tuning; running the
/// request is not needed to tell (see `NSManagedObjectContext.fetchPlan(for:)`).
public struct FetchPlan: Sendable, Hashable, CustomStringConvertible {
    /// Where the predicate is evaluated.
    public enum Filtering: Sendable, Hashable {
        /// There is no predicate.
        case none
        /// The store evaluates it on its rows; only matching rows become objects.
        case store
        /// It runs on objects (a part the store cannot evaluate, or unsaved changes that a
        /// predicate through a relationship must see).
        case objects
    }

    /// Where the predicate is evaluated.
    public var filtering: Filtering
    /// The attribute whose index the store reads (`"Book.year"`), or nil for a scan.
    public var index: String?
    /// Whether the store sorts and cuts the window (only the window's rows become objects);
    /// false when the context sorts objects, or there is nothing to sort or cut.
    public var storeSortsAndCuts: Bool

    /// One line: the filtering, the index, the sort.
    public var description: String {
        var parts: [String] = []
        switch filtering {
        case .none: parts.append("no predicate")
        case .store: parts.append("predicate in the store")
        case .objects: parts.append("predicate on objects")
        }
        parts.append(index.map { "index on \($0)" } ?? "scan")
        if storeSortsAndCuts { parts.append("sorted and cut in the store") }
        return parts.joined(separator: ", ")
    }
}

/// What a store tells about how it would answer a filtered read (see
/// ``PersistentStore/plan(entity:filter:)``).
public struct StorePlan: Sendable, Hashable {
    /// The property whose index the store reads, or nil for a scan.
    public var indexedProperty: Int?

    /// Creates a plan.
    public init(indexedProperty: Int? = nil) {
        self.indexedProperty = indexedProperty
    }
}

extension PersistentStore {
    /// A scan: what a store that keeps no indexes does.
    public func plan(entity: Int32, filter: StoreFilter?) -> StorePlan { StorePlan() }
}

extension NSManagedObjectContext {
    /// How `request` would be run now: where its predicate is evaluated, the index the store
    /// would read, and whether the store sorts and cuts the window. Runs nothing.
    ///
    /// - Throws: as ``fetch(_:)`` for a request that cannot be run (an unknown entity, a
    ///   predicate that does not parse).
    public func fetchPlan<T>(for request: NSFetchRequest<T>) throws -> FetchPlan {
        assertOnQueue("fetchPlan(for:)")
        let entity = try request.resolveEntity(in: coordinator.managedObjectModel)
        let store = try coordinator.primaryStore(for: "fetchPlan(for:)")
        let filter = storeFilter(for: request, entity: entity)
        let filtering: FetchPlan.Filtering = request.filter == nil ? .none : (filter == nil ? .objects : .store)
        let indexed = filter.flatMap { store.plan(entity: entity.index, filter: $0).indexedProperty }
        let sorts =
            (request.filter == nil || filter != nil) && !(request.includesPendingChanges && hasPendingChanges(of: entity))
            && storeOrder(for: request, entity: entity) != nil
        return FetchPlan(
            filtering: filtering, index: indexed.map { "\(entity.name).\(entity.properties[$0].name)" }, storeSortsAndCuts: sorts)
    }
}
