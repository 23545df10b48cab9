import Foundation
import Testing
@testable import PersistenceKit

/// A library saved in a store (in-memory, or a file store at a URL) behind a
/// ``ReadCountingStore``, for the prefetching tests:
///
/// - shelves "Full" (books a, b, c), "Half" (book d), "Empty" (no books);
/// - book "loose" on no shelf, by nobody, with no cover;
/// - authors "Ann" (a, b, d), "Bo" (c, d), "Cy" (a);
/// - covers "red" (on a) and "blue" (on d).
struct PrefetchRig {
    let store: ReadCountingStore
    let coordinator: NSPersistentStoreCoordinator
    private let file: FileStore?

    init(fileAt url: URL?) throws {
        let model = try Fixtures.model()
        coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        file = try url.map { try FileStore.open(at: $0, model: model) }
        store = ReadCountingStore(file ?? InMemoryStore(model: model))
        try coordinator.addPersistentStore(store)
        let seed = context()
        try seed.performAndWait {
            func shelf(_ name: String) -> Shelf {
                let s = Shelf(context: seed)
                s.name = name
                return s
            }
            let full = shelf("Full"), half = shelf("Half")
            _ = shelf("Empty")
            var books: [String: Book] = [:]
            for (title, shelf) in [("a", full), ("b", full), ("c", full), ("d", half), ("loose", nil)] {
                let b = Book(context: seed)
                b.title = title
                b.shelf = shelf
                books[title] = b
            }
            for (name, titles) in [("Ann", ["a", "b", "d"]), ("Bo", ["c", "d"]), ("Cy", ["a"])] {
                let a = Author(context: seed)
                a.name = name
                a.books = Set(titles.compactMap { books[$0] })
            }
            for (color, title) in [("red", "a"), ("blue", "d")] {
                let c = Cover(context: seed)
                c.color = color
                c.book = books[title]
            }
            try seed.save()
        }
    }

    /// A new private-queue context on the rig's store: nothing registered.
    func context() -> NSManagedObjectContext {
        NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
    }

    /// Closes the file store, if the rig has one.
    func close() throws { try file?.close() }

    /// What one fetch gave and cost.
    struct Run<Value: Equatable>: Equatable {
        /// The IDs of the fetched objects, in the order fetched.
        var ids: [NSManagedObjectID]
        /// What reading the fetched objects gave.
        var value: Value
        /// Reads of rows by ID made by the fetch.
        var fetchPasses: Int
        /// Reads of rows by ID made while reading the fetched objects afterwards.
        var readPasses: Int
    }

    /// Fetches `T` objects in a new context, prefetching `keyPaths`, sorted by attribute
    /// `order`; then
    /// reads the fetched objects with `read`, counting the reads of rows by ID of each part.
    func run<T: NSManagedObject, Value: Equatable>(
        _: T.Type, prefetching keyPaths: [String]?, order: String, where predicate: Predicate<T>? = nil,
        returnsObjectsAsFaults: Bool = true, read: ([T]) -> Value
    ) throws -> Run<Value> {
        let ctx = context()
        return try ctx.performAndWait {
            let request = T.fetchRequest()
            request.sortKeys = [SortKey(order)]
            request.predicate = predicate
            request.returnsObjectsAsFaults = returnsObjectsAsFaults
            request.relationshipKeyPathsForPrefetching = keyPaths
            let start = store.passes
            let objects = try ctx.fetch(request)
            let fetched = store.passes
            let value = read(objects)
            return Run(
                ids: objects.map(\.objectID), value: value, fetchPasses: fetched - start, readPasses: store.passes - fetched)
        }
    }
}
