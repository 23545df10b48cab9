import Foundation
import PersistenceKit
import Testing

/// The behaviour every store shows through the object API, as checks that record their
/// failures with Swift Testing (`#expect`, `#require`) and so run inside a store's own test
/// target:
///
/// ```swift
/// @Test("The store keeps the shared behaviour", arguments: MyStoreUnderTest().supportedChecks)
/// func behaves(_ check: StoreBehaviour.Check) async throws {
///     try await check.run(on: MyStoreUnderTest())
/// }
/// ```
///
/// Each check makes a location of its own (``StoreUnderTest/makeLocation(for:)``), opens it
/// in one or more coordinators, closes and opens it again where it checks what survives, and
/// destroys it at the end, passing or failing.
public enum StoreBehaviour {
    /// One behaviour, checked on a store of its own.
    public enum Check: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Every attribute type, extremes and nil included, reads back after reopening.
        case attributeTypes
        /// Strings with NUL and other control characters read back whole after reopening.
        case controlCharacters
        /// Composite and Codable attributes read back after reopening, and predicates and
        /// sorts reach a composite's members.
        case structuredAttributes
        /// Inserts, updates (to nil too) and deletes are there after reopening.
        case insertUpdateDelete
        /// IDs turn permanent at save, outlive reopening through their URIs, and
        /// `existingObject(with:)` finds saved objects and refuses deleted ones.
        case objectIDs
        /// Both ends of to-one, one-to-many and many-to-many relationships agree after moves,
        /// saves and reopening.
        case relationships
        /// Nullify, cascade and deny delete rules, through saves and reopening.
        case deleteRules
        /// An ordered to-many keeps its order, moves, insertions and removals.
        case orderedToMany
        /// A fetch of a parent entity includes its sub-entities unless told not to.
        case inheritance
        /// Comparisons, string operators with `[cd]`, `IN`, nil, key paths through to-ones,
        /// to-many `ANY` and compound predicates select the same objects.
        case predicates
        /// Comparisons and sorts on every attribute type (numbers, Boolean, date, decimal,
        /// UUID, URL, data, nil) select and order the same objects.
        case typedComparisons
        /// NaN and infinities are stored, match only the comparisons Swift's do, and sort
        /// as the in-memory sort does (nil, then NaN, then the numbers).
        case specialNumbers
        /// Sort descriptors, fetch limit and offset, and counts.
        case sortingAndPaging
        /// Object ID, dictionary and count result types.
        case resultTypes
        /// Faults, full objects, batches and prefetched relationships read the same values.
        case faultingAndPrefetching
        /// An optimistic-locking conflict between two coordinators under each merge policy,
        /// and a deletion of an object another coordinator changed.
        case mergePolicies
        /// Two coordinators adding to one to-many at once both keep their additions.
        case concurrentToManyEdits
        /// A uniqueness constraint conflict with a stored object, between two coordinators.
        case uniqueness
        /// A uniqueness constraint a parent entity declares holds across its sub-entities
        /// together; one a sub-entity declares holds among that sub-entity's objects only.
        case familyUniqueness
        /// Batch insert, update and delete change the stored objects.
        case batchRequests
        /// A store opened read-only reads what was saved; saves and batch requests fail,
        /// typed, and change nothing.
        case readOnly
        /// Metadata entries set through the coordinator are there after reopening; the
        /// store's own keys keep their values.
        case metadata
        /// Refreshing an object another coordinator changed reads the new values; fetches
        /// show another coordinator's insertions and deletions.
        case refresh

        /// The behaviour in words.
        public var testDescription: String {
            switch self {
            case .attributeTypes: "every attribute type survives reopening"
            case .controlCharacters: "strings with NUL and control characters survive reopening"
            case .structuredAttributes: "composite and Codable attributes"
            case .insertUpdateDelete: "inserts, updates and deletes survive reopening"
            case .objectIDs: "permanent object IDs and existingObject(with:)"
            case .relationships: "both ends of relationships agree"
            case .deleteRules: "nullify, cascade and deny delete rules"
            case .orderedToMany: "ordered to-many order and moves"
            case .inheritance: "parent-entity fetches and sub-entities"
            case .predicates: "predicates select the same objects"
            case .typedComparisons: "comparisons and sorts on every attribute type"
            case .specialNumbers: "NaN, infinities and nil in comparisons and sorts"
            case .sortingAndPaging: "sorting, limit, offset and count"
            case .resultTypes: "object ID, dictionary and count results"
            case .faultingAndPrefetching: "faults, batches and prefetching read the same values"
            case .mergePolicies: "conflicts between coordinators under each merge policy"
            case .concurrentToManyEdits: "two coordinators adding to one to-many"
            case .uniqueness: "uniqueness constraint conflicts"
            case .familyUniqueness: "uniqueness constraints across an entity family"
            case .batchRequests: "batch insert, update and delete"
            case .readOnly: "a store opened read-only"
            case .metadata: "the application's metadata entries survive reopening"
            case .refresh: "refreshing a stale object"
            }
        }

        /// Runs this check on a location of its own of `store`.
        public func run(on store: some StoreUnderTest) async throws {
            switch self {
            case .attributeTypes: try await StoreBehaviour.attributeTypes(store)
            case .controlCharacters: try await StoreBehaviour.controlCharacters(store)
            case .structuredAttributes: try await StoreBehaviour.structuredAttributes(store)
            case .insertUpdateDelete: try await StoreBehaviour.insertUpdateDelete(store)
            case .objectIDs: try await StoreBehaviour.objectIDs(store)
            case .relationships: try await StoreBehaviour.relationships(store)
            case .deleteRules: try await StoreBehaviour.deleteRules(store)
            case .orderedToMany: try await StoreBehaviour.orderedToMany(store)
            case .inheritance: try await StoreBehaviour.inheritance(store)
            case .predicates: try await StoreBehaviour.predicates(store)
            case .typedComparisons: try await StoreBehaviour.typedComparisons(store)
            case .specialNumbers: try await StoreBehaviour.specialNumbers(store)
            case .sortingAndPaging: try await StoreBehaviour.sortingAndPaging(store)
            case .resultTypes: try await StoreBehaviour.resultTypes(store)
            case .faultingAndPrefetching: try await StoreBehaviour.faultingAndPrefetching(store)
            case .mergePolicies: try await StoreBehaviour.mergePolicies(store)
            case .concurrentToManyEdits: try await StoreBehaviour.concurrentToManyEdits(store)
            case .uniqueness: try await StoreBehaviour.uniqueness(store)
            case .familyUniqueness: try await StoreBehaviour.familyUniqueness(store)
            case .batchRequests: try await StoreBehaviour.batchRequests(store)
            case .readOnly: try await StoreBehaviour.readOnly(store)
            case .metadata: try await StoreBehaviour.metadata(store)
            case .refresh: try await StoreBehaviour.refresh(store)
            }
        }
    }
}

/// A location under check and the containers open on it. Used by the one task that runs a
/// check (not sendable: nothing guards `opened`).
final class CheckedStore {
    let location: any StoreLocation
    /// Containers opened and not yet closed, closed in `closeAll()`; without that list a
    /// check that fails midway would leave connections or file handles open.
    private var opened: [NSPersistentContainer] = []

    init(location: any StoreLocation) { self.location = location }

    /// A new coordinator on the location.
    func open(_ name: String = "behaviour") async throws -> NSPersistentContainer {
        let container = try await location.open(name: name)
        opened.append(container)
        return container
    }

    /// A new coordinator on the location with the store added read-only.
    func openReadOnly(_ name: String = "read-only") async throws -> NSPersistentContainer {
        let container = try await location.openReadOnly(name: name)
        opened.append(container)
        return container
    }

    /// Closes every open container and opens the location again: what it shows was read
    /// from the store, not kept by a coordinator or context.
    func reopen() async throws -> NSPersistentContainer {
        try closeAll()
        return try await open("reopened")
    }

    /// Closes every open container.
    func closeAll() throws {
        let all = opened
        opened = []
        for container in all { try location.close(container) }
    }
}

extension StoreBehaviour {
    /// Runs `body` on a new location of `store` for `classes`' model, then closes and
    /// destroys the location, also when `body` throws.
    static func withStore(
        _ store: some StoreUnderTest, _ classes: [NSManagedObject.Type], _ body: (CheckedStore) async throws -> Void
    ) async throws {
        let model = try NSManagedObjectModel(managedObjectClasses: classes)
        let location = try await store.makeLocation(for: model)
        let checked = CheckedStore(location: location)
        do {
            try await body(checked)
        } catch {
            try? checked.closeAll()
            try? location.destroy()
            throw error
        }
        try checked.closeAll()
        try location.destroy()
    }

    /// Runs `body` in a new private-queue context of `container` and returns its result.
    ///
    /// With `performAndWait`, which runs the block on the calling thread: expectations in
    /// `body` are then recorded against the running test and its argument (the store and
    /// check). A block run on the context's own queue (`perform`) is outside the test's task,
    /// and Swift Testing reports its failures as of an unknown test. The context is new and
    /// used by nothing else, so the call never waits for its queue.
    static func inContext<T>(_ container: NSPersistentContainer, _ body: (NSManagedObjectContext) throws -> T) async throws -> T {
        let context = container.newBackgroundContext()
        return try context.performAndWait { try body(context) }
    }

    /// The objects of `entity` in `context`, sorted by `key`.
    static func all<T: NSManagedObject>(_ type: T.Type, in context: NSManagedObjectContext, sortedBy key: String? = nil) throws -> [T] {
        let request = NSFetchRequest<T>(entityName: String(describing: type))
        if let key { request.sortDescriptors = [NSSortDescriptor(key: key, ascending: true)] }
        return try context.fetch(request)
    }
}
