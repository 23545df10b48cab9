import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Counts its lifecycle hooks, per title.
final class HookCountingBook: NSManagedObject {
    @Attribute var title: String = ""
    static let counts = TestMutex<[String: (awake: Int, didTurn: Int)]>([:])
    override func awakeFromFetch() {
        let t = title
        Self.counts.withLock { $0[t, default: (0, 0)].awake += 1 }
    }
    override func willTurnIntoFault() {
        let t = title
        Self.counts.withLock { $0[t, default: (0, 0)].didTurn += 1 }
    }
}

/// An in-memory store whose commit can be held before any row changes: the protocol lets
/// reads run concurrently with a commit.
final class GatedCommitStore: ForwardingStore {
    let base: InMemoryStore
    let armed = Atomic<Bool>(false)
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    init(model: NSManagedObjectModel) { base = InMemoryStore(model: model) }

    func commit(_ transaction: StoreTransaction) throws -> StoreCommitResult {
        if armed.exchange(false, ordering: .acquiringAndReleasing) {
            entered.signal()
            release.wait()
        }
        return try base.commit(transaction)
    }
}

/// `includesPropertyValues` and `fetchBatchSize`: which returned objects keep the values the
/// fetch read. The visible difference is what an object shows after another context saved
/// new values in between: an object the fetch loaded shows the old ones; one that was
/// returned without values reads the store when first touched, and shows the new ones (as
/// does a fault holding the fetched row: it fills from the current row, as Core Data's fill
/// from the coordinator's row cache).
@Suite("Values a fetch loads") struct FetchValuesTests {
    private static let titles = ["Beloved", "Carrie", "Dune", "Emma", "Ulysses"]

    /// Saves the five books, then returns a function that renames every book in another
    /// context ("<title> (revised)") and saves.
    private static func seed(_ container: NSPersistentContainer) throws -> @Sendable () throws -> Void {
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            for (i, title) in titles.enumerated() {
                let book = Book(context: writer)
                book.title = title
                book.pages = Int64(100 * (i + 1))
            }
            try writer.save()
        }
        return {
            try writer.performAndWait {
                for book in try writer.fetch(Book.fetchRequest()) { book.title += " (revised)" }
                try writer.save()
            }
        }
    }

    private static func sortedByPages(_ request: NSFetchRequest<Book>) -> NSFetchRequest<Book> {
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.pages, ascending: true)]
        return request
    }

    @Test func loadedObjectsKeepTheValuesTheFetchRead() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Self.sortedByPages(Book.fetchRequest())
            request.returnsObjectsAsFaults = false
            let books = try reader.fetch(request)
            try revise()
            #expect(books.map(\.title) == Self.titles)
        }
    }

    /// By default a fetch returns faults, even when it sorts: the sort reads the rows, not
    /// the objects. Touched after another context's save, they show the saved values.
    @Test func byDefaultObjectsAreFaultsThatFillFromTheCurrentRow() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let books = try reader.fetch(Self.sortedByPages(Book.fetchRequest()))
            #expect(books.allSatisfy { $0.isFault })
            try revise()
            #expect(books.map(\.title) == Self.titles.map { "\($0) (revised)" })
        }
    }

    @Test func withoutPropertyValuesObjectsReadTheStoreWhenTouched() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Self.sortedByPages(Book.fetchRequest())
            request.includesPropertyValues = false
            request.returnsObjectsAsFaults = false  // ignored without property values, as in Core Data
            let books = try reader.fetch(request)
            #expect(books.count == 5)
            #expect(books.allSatisfy { $0.isFault })
            try revise()
            #expect(books.map(\.title) == Self.titles.map { "\($0) (revised)" })
        }
    }

    @Test func withoutPropertyValuesAPredicateRunInMemoryStillFilters() throws {
        let container = try Fixtures.container()
        _ = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Book.fetchRequest()
            request.predicate = #Predicate<Book> { $0.title.contains("e") }  // not a store condition
            request.includesPropertyValues = false
            let books = try reader.fetch(request)
            #expect(books.allSatisfy { $0.isFault }, "faults, though the predicate read them")
            #expect(books.map(\.title).sorted() == ["Beloved", "Carrie", "Dune", "Ulysses"])
        }
    }

    @Test func withoutPropertyValuesUnsavedChangesStay() throws {
        let container = try Fixtures.container()
        _ = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let first = try #require(try reader.fetch(Self.sortedByPages(Book.fetchRequest())).first)
            first.title = "Beloved, annotated"
            let added = Book(context: reader)
            added.title = "Zazie"
            added.pages = 900
            let request = Self.sortedByPages(Book.fetchRequest())
            request.includesPropertyValues = false
            let books = try reader.fetch(request)
            #expect(books.first === first && !first.isFault && first.title == "Beloved, annotated")
            #expect(books.last === added && added.title == "Zazie")
        }
    }

    @Test func aBatchSizeKeepsTheFetchedValuesOfTheFirstBatchOnly() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Self.sortedByPages(Book.fetchRequest())
            request.fetchBatchSize = 2
            request.returnsObjectsAsFaults = false  // applies to the first batch
            let books = try reader.fetch(request)
            #expect(books.count == 5, "every object is returned, whatever the batch size")
            #expect(books.map(\.isFault) == [false, false, true, true, true])
            try revise()
            #expect(books.map(\.title) == ["Beloved", "Carrie", "Dune (revised)", "Emma (revised)", "Ulysses (revised)"])
        }
    }

    // MARK: includesPropertyValues

    /// An object the predicate had to read (firing it, so awakeFromFetch() ran) is made a
    /// fault again with willTurnIntoFault/didTurnIntoFault, not by setting the flag only, so
    /// touching it runs awakeFromFetch() a second time with the fault hooks in between.
    @Test func objectsReturnedWithoutValuesPairAwakeFromFetchWithTheFaultHooks() throws {
        let container = try OTSupport.container(model: NSManagedObjectModel(managedObjectClasses: [HookCountingBook.self]))
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let made = ["alpha", "omega"].map { title in
                let book = HookCountingBook(context: context)
                book.title = title
                return book
            }
            try context.save()
            let ids = made.map(\.objectID)
            context.reset()
            // Registered as faults before the fetch, so the predicate reads (and fires) the
            // objects themselves; rows not registered are judged on detached copies instead.
            for id in ids { _ = context.object(with: id) }
            let request = NSFetchRequest<HookCountingBook>(entityName: "HookCountingBook")
            request.predicate = #Predicate<HookCountingBook> { $0.title.contains("ph") && $0.title.count > 0 }  // run in memory
            request.includesPropertyValues = false
            let books = try context.fetch(request)
            #expect(books.count == 1 && books.allSatisfy(\.isFault))
            #expect(books.map(\.title) == ["alpha"])
            let counts = HookCountingBook.counts.withLock { $0["alpha"] }
            #expect(counts?.awake == 2)
            #expect(counts?.didTurn == 1, "turned into a fault once between its two awakeFromFetch() calls")
        }
    }

    // MARK: stale faults

    /// When the coordinator ticked the clock before the store committed, a context whose
    /// first fetch read the clock after the tick but the rows before the commit applied them
    /// held the old row under the new reading, and no later check looked at it.
    @Test func aFetchOverlappingACommitStillSeesTheCommittedValuesWhenFired() throws {
        let model = try Fixtures.model()
        let store = GatedCommitStore(model: model)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(store)
        let writer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        let bookID: NSManagedObjectID = try writer.performAndWait {
            let b = Book(context: writer)
            b.title = "v1"
            try writer.save()
            return b.objectID
        }
        store.armed.store(true, ordering: .releasing)
        let done = DispatchSemaphore(value: 0)
        let saveError = TestMutex<String?>(nil)
        Thread.detachNewThread {
            writer.performAndWait {
                do {
                    (writer.object(with: bookID) as! Book).title = "v2"
                    try writer.save()
                } catch { saveError.withLock { $0 = "\(error)" } }
            }
            done.signal()
        }
        store.entered.wait()  // the clock has ticked; the row is still v1
        let reader = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        try reader.performAndWait {
            let books = try reader.fetch(Book.fetchRequest())
            #expect(books.count == 1 && books[0].isFault)
        }
        store.release.signal()
        done.wait()
        #expect(saveError.withLock { $0 } == nil)
        let (title, saveFailure): (String, String?) = reader.performAndWait {
            let b = reader.registeredObject(for: bookID) as! Book
            let t = b.title
            b.pages = 7
            do { try reader.save() } catch { return (t, "\(error)") }
            return (t, nil)
        }
        #expect(title == "v2", "the fault fired with the row read before the commit that replaced it")
        #expect(saveFailure == nil, "the reader's save conflicted: \(saveFailure ?? "")")
    }
}
