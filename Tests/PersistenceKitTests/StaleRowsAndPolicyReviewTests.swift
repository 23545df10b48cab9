import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

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

final class TransientFolder: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute(.transient) var scratch: String = "unset"
    @Relationship(inverse: "folder", deleteRule: .cascadeDeleteRule) var notes: Set<TransientItem>
}

final class TransientItem: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.transient) var scratch: String = "unset"
    @Relationship(inverse: "notes", deleteRule: .nullifyDeleteRule) var folder: TransientFolder?
}

// From an adversarial review of the refresh, stale-fault, merge-policy and merged-deletion
// changes (RefreshParityTests). Each test failed on the code it was written against.
@Suite struct StaleRowsAndPolicyReviewTests {
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

    /// A merge left a fault holding the merged row without noting a clock reading: a later
    /// fetch (of anything) noted a newer reading, and the held row, replaced since by a save
    /// this context did not merge, was then taken as current.
    @Test func aRowHeldFromAMergeIsCheckedAfterALaterCommit() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { _ = b.object(with: seeded.a) }  // a fault holding no row; no fetch yet
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "v2"
            try a.save()
        }
        b.performAndWait {
            b.mergeChanges(
                fromContextDidSave: Notification(name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSUpdatedObjectIDsKey: [seeded.a]]))
            #expect(b.registeredObject(for: seeded.a)?.isFault == true)
        }
        try a.performAndWait {
            try #require(a.registeredObject(for: seeded.a) as? Book).title = "v3"
            try a.save()
        }
        let (title, failure): (String, String?) = try b.performAndWait {
            _ = try b.fetch(Shelf.fetchRequest())  // any fetch
            let book = b.registeredObject(for: seeded.a) as! Book
            let t = book.title
            book.pages = 1
            do { try b.save() } catch { return (t, "\(error)") }
            return (t, nil)
        }
        #expect(title == "v3", "the fault fired with a merged row a later commit had replaced")
        #expect(failure == nil, "\(failure ?? "")")
    }

    /// Faults whose context was freed: reading one traps as before (not checked here), but
    /// the clock path must not crash when the context is gone and the object is kept.
    @Test func faultsHeldAcrossAResetAndRefetch() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            _ = try b.fetch(Book.fetchRequest())
            b.reset()
            _ = try b.fetch(Book.fetchRequest())
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "v2"
            try a.save()
        }
        let t: String = b.performAndWait { (b.registeredObject(for: seeded.a) as! Book).title }
        #expect(t == "v2")
    }

    // MARK: refreshing a deleted object

    /// B deletes shelf S (books cascade); A puts a new book on S and saves; B's save
    /// conflicts; B refreshes S with merging and saves again. The deletion is re-applied on
    /// the current row, which lists the new book, and S's delete rules run again, as the
    /// merge path reruns them: the new book goes with the cascade (it survived, shelfless).
    @Test(arguments: ["refresh", "refreshAll"])
    func aRefreshedDeletionCascadesToTargetsAddedMeanwhile(mode: String) async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            _ = shelf.books.count
            b.delete(shelf)
            b.processPendingChanges()
        }
        try a.performAndWait {
            let shelf = try #require(try a.existingObject(with: seeded.shelf) as? Shelf)
            let c = Book(context: a)
            c.title = "C"
            c.shelf = shelf
            try a.save()
        }
        try b.performAndWait {
            #expect(throws: CoreDataError.self) { try b.save() }
            let shelf = try #require(b.registeredObject(for: seeded.shelf))
            if mode == "refresh" { b.refresh(shelf, mergeChanges: true) } else { b.refreshAllObjects() }
            try b.save()
        }
        let check = container.newBackgroundContext()
        let rows: [String] = try check.performAndWait {
            try check.fetch(Book.fetchRequest()).map { "\($0.title) shelf=\($0.shelf?.objectID.uriRepresentation().lastPathComponent ?? "nil")" }
        }
        #expect(rows == [], "the deleted shelf's cascade did not reach the book added meanwhile")
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// Nullify variant: B deletes book A (nullify to its shelf); C (another context) adds
    /// author X to A; B's save conflicts, refresh, save.
    @Test func aRefreshedDeletionWithManyToManyAddedMeanwhile() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let book = try #require(try b.existingObject(with: seeded.a) as? Book)
            _ = book.authors.count
            b.delete(book)
            b.processPendingChanges()
        }
        let xID: NSManagedObjectID = try a.performAndWait {
            let book = try #require(try a.existingObject(with: seeded.a) as? Book)
            let x = Author(context: a)
            x.name = "X"
            x.$books.insert(book)
            try a.save()
            return x.objectID
        }
        try b.performAndWait {
            #expect(throws: CoreDataError.self) { try b.save() }
            b.refresh(try #require(b.registeredObject(for: seeded.a)), mergeChanges: true)
            try b.save()
        }
        let check = container.newBackgroundContext()
        let books: Int = try check.performAndWait { try #require(try check.existingObject(with: xID) as? Author).books.count }
        #expect(books == 0)
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// A deleted object whose row was deleted meanwhile: refresh with merging, then save.
    @Test func refreshOfADeletedObjectWhoseRowIsGone() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let book = try #require(try b.existingObject(with: seeded.a) as? Book)
            b.delete(book)
            b.processPendingChanges()
        }
        try Fixtures.deleteInAnotherContext(seeded.a, in: container)
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a))
            b.refresh(book, mergeChanges: true)
            b.refreshAllObjects()
            try b.save()
        }
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// A deleted fault (delete of an unfired object, pending changes not yet processed).
    @Test func refreshOfADeletedFaultThenSave() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let books = try b.fetch(Book.fetchRequest())
            #expect(books.allSatisfy { $0.isFault })
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "A2"
            try a.save()
        }
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a))
            b.delete(book)
            b.refresh(book, mergeChanges: true)
            try b.save()
        }
        let check = container.newBackgroundContext()
        let titles = try check.performAndWait { try check.fetch(Book.fetchRequest()).map(\.title).sorted() }
        #expect(titles == ["B"])
        #expect(try storedGraphProblems(container).isEmpty)
    }

    // MARK: transient values and relationships

    static func transientContainer(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(
            name: name, managedObjectModel: try NSManagedObjectModel(managedObjectClasses: [TransientFolder.self, TransientItem.self]))
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// An unchanged folder with a transient value, whose to-many another context changed:
    /// refresh with merging reloads it; its items must agree both ways.
    @Test func refreshKeepsTransientAndTakesTheSavedToMany() throws {
        let container = try Self.transientContainer()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let (folderID, itemID): (NSManagedObjectID, NSManagedObjectID) = try b.performAndWait {
            let f = TransientFolder(context: b)
            f.name = "F"
            let i = TransientItem(context: b)
            i.title = "I"
            i.folder = f
            try b.save()
            f.scratch = "kept"
            return (f.objectID, i.objectID)
        }
        try a.performAndWait {
            let f = try #require(try a.existingObject(with: folderID) as? TransientFolder)
            let j = TransientItem(context: a)
            j.title = "J"
            j.folder = f
            (try a.existingObject(with: itemID) as! TransientItem).folder = nil
            try a.save()
        }
        try b.performAndWait {
            let f = try #require(b.registeredObject(for: folderID) as? TransientFolder)
            b.refresh(f, mergeChanges: true)
            #expect(f.scratch == "kept")
            #expect(f.notes.map(\.title).sorted() == ["J"])
            for n in f.notes { #expect(n.folder === f) }
            #expect(!b.hasChanges)
            f.name = "F2"
            try b.save()
        }
    }

    /// A folder with a pending to-many edit (an item added here) and a transient value:
    /// refresh with merging keeps both, and the save stores both sides.
    @Test func refreshWithPendingToManyEditsAndTransients() throws {
        let container = try Self.transientContainer()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let folderID: NSManagedObjectID = try b.performAndWait {
            let f = TransientFolder(context: b)
            f.name = "F"
            try b.save()
            return f.objectID
        }
        try b.performAndWait {
            let f = try #require(b.registeredObject(for: folderID) as? TransientFolder)
            f.scratch = "kept"
            let i = TransientItem(context: b)
            i.title = "mine"
            f.$notes.insert(i)
        }
        try a.performAndWait {
            let f = try #require(try a.existingObject(with: folderID) as? TransientFolder)
            let j = TransientItem(context: a)
            j.title = "theirs"
            j.folder = f
            f.name = "byA"
            try a.save()
        }
        try b.performAndWait {
            let f = try #require(b.registeredObject(for: folderID) as? TransientFolder)
            b.refreshAllObjects()
            #expect(f.scratch == "kept")
            #expect(f.name == "byA")
            #expect(f.notes.map(\.title).sorted() == ["mine", "theirs"])
            try b.save()
        }
        let check = container.newBackgroundContext()
        let titles: [String] = try check.performAndWait {
            try #require(try check.existingObject(with: folderID) as? TransientFolder).notes.map(\.title).sorted()
        }
        #expect(titles == ["mine", "theirs"])
    }

    // MARK: rollback policy

    /// B moves book A from shelf S to shelf S2; another context changes book A's title and
    /// saves. B saves with NSRollbackMergePolicy: book A, in conflict, takes the store's
    /// state — its foreign key included (Core Data's rollback discards the conflicting
    /// object's changes; its shelf is its own column). The shelves' changes are only the
    /// inverse of the book's; `linksHeldByOthers` counted them as the shelves' own and kept
    /// the move.
    @Test func rollbackRestoresTheToOneOfTheConflictingObject() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let seeder = container.newBackgroundContext()
        let s2: NSManagedObjectID = try seeder.performAndWait {
            let s = Shelf(context: seeder)
            s.name = "S2"
            try seeder.save()
            return s.objectID
        }
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let book = try #require(try b.existingObject(with: seeded.a) as? Book)
            _ = try #require(try b.existingObject(with: seeded.shelf) as? Shelf).books.count
            _ = try #require(try b.existingObject(with: s2) as? Shelf).books.count
            _ = book.title
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "byA"
            try a.save()
        }
        try b.performAndWait {
            b.mergePolicy = NSRollbackMergePolicy
            let book = try #require(b.registeredObject(for: seeded.a) as? Book)
            book.shelf = try #require(b.registeredObject(for: s2) as? Shelf)
            try b.save()
            #expect(book.title == "byA")
            #expect(book.shelf?.objectID == seeded.shelf, "the rollback kept the conflicting book's own change")
        }
        let check = container.newBackgroundContext()
        let shelfOfA: NSManagedObjectID? = try check.performAndWait {
            try #require(try check.existingObject(with: seeded.a) as? Book).shelf?.objectID
        }
        #expect(shelfOfA == seeded.shelf, "NSRollbackMergePolicy saved the conflicting book's move")
    }

    /// Both ends in conflict: B links book A to shelf S2; another context renames book A and
    /// S2. Both are rolled back, yet each keeps the link "held" by the other's unsaved state.
    @Test func rollbackWithBothEndsInConflictDropsTheLink() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let seeder = container.newBackgroundContext()
        let s2: NSManagedObjectID = try seeder.performAndWait {
            let s = Shelf(context: seeder)
            s.name = "S2"
            try seeder.save()
            return s.objectID
        }
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            _ = try #require(try b.existingObject(with: seeded.a) as? Book).title
            _ = try #require(try b.existingObject(with: seeded.shelf) as? Shelf).books.count
            _ = try #require(try b.existingObject(with: s2) as? Shelf).books.count
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "byA"
            try #require(try a.existingObject(with: s2) as? Shelf).name = "S2byA"
            try #require(try a.existingObject(with: seeded.shelf) as? Shelf).name = "SbyA"
            try a.save()
        }
        try b.performAndWait {
            b.mergePolicy = NSRollbackMergePolicy
            let book = try #require(b.registeredObject(for: seeded.a) as? Book)
            book.shelf = try #require(b.registeredObject(for: s2) as? Shelf)
            try b.save()
        }
        let check = container.newBackgroundContext()
        let shelfOfA: NSManagedObjectID? = try check.performAndWait {
            try #require(try check.existingObject(with: seeded.a) as? Book).shelf?.objectID
        }
        #expect(shelfOfA == seeded.shelf, "every object of the move was in conflict, yet the rollback saved it")
    }

    // MARK: overwrite policy, many-to-many

    /// B adds author X to book K; another context removes K from X and adds K2 to X. Both
    /// X and K conflict; B saves with overwrite. The stored graph must stay whole and B's
    /// view must agree with the store.
    @Test(arguments: 0..<6)
    func overwriteManyToManyBothSidesChanged(variant: Int) async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let seeder = container.newBackgroundContext()
        let (x, y): (NSManagedObjectID, NSManagedObjectID) = try seeder.performAndWait {
            let x = Author(context: seeder)
            x.name = "X"
            let y = Author(context: seeder)
            y.name = "Y"
            x.$books.insert(try seeder.existingObject(with: seeded.a) as! Book)
            y.$books.insert(try seeder.existingObject(with: seeded.b) as! Book)
            try seeder.save()
            return (x.objectID, y.objectID)
        }
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            for id in [x, y, seeded.a, seeded.b] {
                let o = try b.existingObject(with: id)
                if let au = o as? Author { _ = au.books.count } else if let bk = o as? Book { _ = bk.authors.count }
            }
        }
        try a.performAndWait {
            let ax = try a.existingObject(with: x) as! Author
            let ay = try a.existingObject(with: y) as! Author
            let ka = try a.existingObject(with: seeded.a) as! Book
            let kb = try a.existingObject(with: seeded.b) as! Book
            switch variant % 3 {
            case 0: ax.$books.remove(ka); ax.$books.insert(kb)
            case 1: ka.$authors.insert(ay); kb.$authors.remove(ay)
            default: ax.$books.insert(kb); ay.$books.insert(ka); ka.title = "ka"
            }
            ax.name = "Xa"
            ay.name = "Ya"
            try a.save()
        }
        try b.performAndWait {
            b.mergePolicy = variant < 3 ? NSOverwriteMergePolicy : NSRollbackMergePolicy
            let bx = b.registeredObject(for: x) as! Author
            let by = b.registeredObject(for: y) as! Author
            let ka = b.registeredObject(for: seeded.a) as! Book
            let kb = b.registeredObject(for: seeded.b) as! Book
            bx.$books.insert(kb)
            by.$books.remove(kb)
            ka.$authors.insert(by)
            ka.title = "kb-b"
            bx.name = "Xb"
            try b.save()
        }
        #expect(try storedGraphProblems(container).isEmpty)
        // B's view agrees with the store.
        let mine: [(NSManagedObjectID, String)] = b.performAndWait {
            b.registeredObjects.filter { !$0.isFault }.map { ($0.objectID, describeForCheck($0)) }
        }
        let fresh = container.newBackgroundContext()
        for (id, text) in mine {
            let theirs: String = fresh.performAndWait { (try? fresh.existingObject(with: id)).map(describeForCheck) ?? "gone" }
            #expect(theirs == text, "variant \(variant)")
        }
    }

    // MARK: cascade on merged deletions

    /// A cascade chain: B inserts a book on shelf S and a cover on that book; A deletes S.
    /// The merge deletes B's book, whose cascade takes B's cover.
    @Test func aMergedDeletionCascadesOnward() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.automaticallyMergesChangesFromParent = true
        try b.performAndWait {
            let book = Book(context: b)
            book.title = "NewB"
            book.shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            let cover = Cover(context: b)
            cover.book = book
            // and an existing book of S gets a new cover here
            let existing = try #require(try b.existingObject(with: seeded.a) as? Book)
            let c2 = Cover(context: b)
            c2.book = existing
        }
        try a.performAndWait {
            a.delete(try a.existingObject(with: seeded.shelf))
            try a.save()
        }
        try b.performAndWait {
            b.processPendingChanges()
            try b.save()
        }
        let check = container.newBackgroundContext()
        let (books, covers) = try check.performAndWait {
            (try check.count(for: Book.fetchRequest()), try check.count(for: Cover.fetchRequest()))
        }
        #expect(books == 0)
        #expect(covers == 0)
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// The cascade reaches an object updated here whose own deletion here was rolled back.
    @Test func aMergedCascadeReachesAnUpdatedObject() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let seeder = container.newBackgroundContext()
        let s2: NSManagedObjectID = try seeder.performAndWait {
            let s = Shelf(context: seeder)
            s.name = "S2"
            let k = Book(context: seeder)
            k.title = "K"
            k.shelf = s
            try seeder.save()
            return s.objectID
        }
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.automaticallyMergesChangesFromParent = true
        try b.performAndWait {
            // B moves book A from S onto S2 and retitles it.
            let book = try #require(try b.existingObject(with: seeded.a) as? Book)
            book.shelf = try #require(try b.existingObject(with: s2) as? Shelf)
            book.title = "moved"
        }
        try a.performAndWait {
            a.delete(try a.existingObject(with: s2))
            try a.save()
        }
        try b.performAndWait {
            b.processPendingChanges()
            try b.save()
        }
        #expect(try storedGraphProblems(container).isEmpty)
    }
}


