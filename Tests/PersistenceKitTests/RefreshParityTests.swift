import Foundation
import Testing
@testable import PersistenceKit

// Parity with Core Data for refreshing, stale faults and merge policies, from a review
// against Apple's documentation. Each test failed on the code it was written against.

/// A note with a transient attribute, for the refresh tests.
final class TransientNote: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.transient) var scratch: String = "unset"
}

private enum RefreshParity {
    static func noteContainer(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try NSManagedObjectModel(managedObjectClasses: [TransientNote.self]))
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }
}

@Suite struct RefreshParityTests {
    // MARK: refresh(_:mergeChanges: true) and transient properties

    /// Apple, refresh(_:mergeChanges:): "If flag is YES, this method does not affect any
    /// transient properties; if flag is NO, transient properties are disposed of."
    /// An object without unsaved changes loses its transient value here.
    @Test func refreshWithMergingKeepsTransientValuesOfAnUnchangedObject() throws {
        let container = try RefreshParity.noteContainer()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let note = TransientNote(context: context)
            note.title = "T"
            note.scratch = "kept"
            try context.save()
            #expect(!note.hasChanges)
            #expect(note.scratch == "kept")
            context.refresh(note, mergeChanges: true)
            #expect(note.title == "T")
            #expect(note.scratch == "kept", "refresh(_:mergeChanges: true) must not affect transient properties")
        }
    }

    /// refreshAllObjects() is refresh(_:mergeChanges: true) on every registered object
    /// (WWDC 2015 / header: "preserving the unsaved changes"): transient values stay.
    @Test func refreshAllObjectsKeepsTransientValues() throws {
        let container = try RefreshParity.noteContainer()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let note = TransientNote(context: context)
            note.scratch = "kept"
            try context.save()
            context.refreshAllObjects()
            #expect(note.scratch == "kept", "refreshAllObjects() must not affect transient properties")
        }
    }

    // MARK: NSOverwriteMergePolicy and to-many relationships

    /// Context A puts a new book on shelf S and saves. Context B, which had read S and its
    /// books earlier, only renames S and saves with NSOverwriteMergePolicy. In Core Data the
    /// overwrite pushes B's snapshot of S — attributes and to-one relationships; a to-many
    /// is not part of a snapshot (NSMergeConflict: "Snapshot dictionaries include values for
    /// all attributes and to-one relationships, but not to-many relationships") and in the
    /// SQL store it is the books' foreign keys, which B never touched. A's book stays on S.
    @Test func overwriteKeepsABookAnotherContextPutOnTheShelf() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            #expect(shelf.books.count == 2)
        }
        let newID: NSManagedObjectID = try a.performAndWait {
            let shelf = try #require(try a.existingObject(with: seeded.shelf) as? Shelf)
            let book = Book(context: a)
            book.title = "FromA"
            book.shelf = shelf
            try a.save()
            return book.objectID
        }
        try b.performAndWait {
            b.mergePolicy = NSOverwriteMergePolicy
            let shelf = try #require(b.registeredObject(for: seeded.shelf) as? Shelf)
            shelf.name = "Renamed by B"
            try b.save()
        }
        let check = container.newBackgroundContext()
        let (name, bookShelf, titles): (String, NSManagedObjectID?, [String]) = try check.performAndWait {
            let shelf = try #require(try check.existingObject(with: seeded.shelf) as? Shelf)
            let book = try #require(try check.existingObject(with: newID) as? Book)
            return (shelf.name, book.shelf?.objectID, shelf.books.map(\.title).sorted())
        }
        #expect(name == "Renamed by B")
        #expect(bookShelf == seeded.shelf, "B's overwrite of the shelf took A's new book off it")
        #expect(titles == ["A", "B", "FromA"])
    }

    // MARK: NSRollbackMergePolicy and inserted objects

    /// B inserts a book on shelf S and renames S; A renames S and saves first. B saves with
    /// NSRollbackMergePolicy: the conflicting shelf takes the store's state, but the
    /// inserted book is not in conflict (an insert never is) and Core Data saves it as it
    /// is — its row holds the foreign key to S. Before the fix the book was taken off the shelf.
    @Test func rollbackKeepsTheShelfOfAnInsertedBook() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait { _ = try #require(try b.existingObject(with: seeded.shelf) as? Shelf).books.count }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.shelf) as? Shelf).name = "A"
            try a.save()
        }
        let newID: NSManagedObjectID = try b.performAndWait {
            b.mergePolicy = NSRollbackMergePolicy
            let shelf = try #require(b.registeredObject(for: seeded.shelf) as? Shelf)
            shelf.name = "B"
            let book = Book(context: b)
            book.title = "NewB"
            book.shelf = shelf
            try b.save()
            #expect(shelf.name == "A")
            return book.objectID
        }
        let check = container.newBackgroundContext()
        let bookShelf: NSManagedObjectID? = try check.performAndWait {
            try #require(try check.existingObject(with: newID) as? Book).shelf?.objectID
        }
        #expect(bookShelf == seeded.shelf, "the rollback policy took the inserted book off its shelf")
    }

    /// A moves book "A" from shelf S to shelf S2 and saves. B, which had read S's books,
    /// renames S and saves with NSOverwriteMergePolicy. Only S conflicts; B never changed
    /// book "A", whose row (its foreign key) Core Data's overwrite of S does not touch. Before
    /// the fix the overwrite of S's book list moved the book back onto S.
    @Test func overwriteDoesNotMoveBackABookAnotherContextMoved() async throws {
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
        try b.performAndWait { _ = try #require(try b.existingObject(with: seeded.shelf) as? Shelf).books.count }
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: seeded.a) as? Book)
            book.shelf = try #require(try a.existingObject(with: s2) as? Shelf)
            try a.save()
        }
        try b.performAndWait {
            b.mergePolicy = NSOverwriteMergePolicy
            try #require(b.registeredObject(for: seeded.shelf) as? Shelf).name = "Renamed by B"
            try b.save()
        }
        let check = container.newBackgroundContext()
        let shelfOfA: NSManagedObjectID? = try check.performAndWait {
            try #require(try check.existingObject(with: seeded.a) as? Book).shelf?.objectID
        }
        #expect(shelfOfA == s2, "B's overwrite of shelf S moved back a book B never changed")
    }

    /// B takes book "A" off shelf S (S changes by the inverse); A renames S and saves first.
    /// B saves with NSRollbackMergePolicy: S, the only object in conflict, takes the store's
    /// state, but book "A" is not in conflict and Core Data saves B's change to it (its
    /// foreign key). Before the fix the rollback of S put the book back on the shelf.
    @Test func rollbackKeepsANonConflictingBooksOwnChange() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait { _ = try #require(try b.existingObject(with: seeded.shelf) as? Shelf).books.count }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.shelf) as? Shelf).name = "A"
            try a.save()
        }
        try b.performAndWait {
            b.mergePolicy = NSRollbackMergePolicy
            try #require(try b.existingObject(with: seeded.a) as? Book).shelf = nil
            try b.save()
        }
        let check = container.newBackgroundContext()
        let (shelfOfA, titles): (NSManagedObjectID?, [String]) = try check.performAndWait {
            let book = try #require(try check.existingObject(with: seeded.a) as? Book)
            let shelf = try #require(try check.existingObject(with: seeded.shelf) as? Shelf)
            return (book.shelf?.objectID, shelf.books.map(\.title).sorted())
        }
        #expect(shelfOfA == nil, "the rollback of the shelf undid B's change to a book that was not in conflict")
        #expect(titles == ["B"])
    }

    // MARK: refreshing a deleted object after a conflict

    /// B deletes a book that A changed meanwhile; the save fails with a merge conflict. The
    /// documented recovery (refresh(_:mergeChanges:): "You typically use this method ... in
    /// particular if you get an optimistic locking failure when attempting to save") is to
    /// refresh with merging and save again: the refresh reloads the values from the store
    /// and re-applies the local changes — the deletion — so the next save deletes the
    /// current row. Before the fix the refresh of a deleted object did nothing, and every later save
    /// conflicted again.
    @Test(arguments: ["refresh", "refreshAll"])
    func refreshingADeletedObjectWithMergingLetsTheDeletionBeSaved(mode: String) async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait { _ = try #require(try b.existingObject(with: seeded.a) as? Book).title }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "A2"
            try a.save()
        }
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a) as? Book)
            b.delete(book)
            let error = try #require(throws: CoreDataError.self) { try b.save() }
            #expect(error.code == .managedObjectMerge)
            if mode == "refresh" { b.refresh(book, mergeChanges: true) } else { b.refreshAllObjects() }
            #expect(book.isDeleted)
            do { try b.save() } catch { Issue.record("the save after refreshing still failed: \(error)") }
        }
        let check = container.newBackgroundContext()
        let titles = try check.performAndWait { try check.fetch(Book.fetchRequest()).map(\.title).sorted() }
        #expect(titles == ["B"])
    }

    // MARK: merged deletions

    /// Apple, mergeChanges(fromContextDidSave:): the merge "invokes delete(_:) on those which
    /// have been deleted", so their delete rules run here too. B puts a new book on shelf S;
    /// A deletes S (books cascade) and saves; B merges: the cascade reaches B's new book,
    /// which is deleted with the shelf instead of being saved without one.
    @Test func aMergedDeletionCascadesToWhatThisContextLinkedToIt() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let newBook: Book = try b.performAndWait {
            let book = Book(context: b)
            book.title = "NewB"
            book.shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            return book
        }
        let token = mergeSaves(of: a, into: b)
        defer { NotificationCenter.default.removeObserver(token) }
        try a.performAndWait {
            a.delete(try a.existingObject(with: seeded.shelf))
            try a.save()
        }
        try b.performAndWait {
            b.processPendingChanges()
            #expect(!b.insertedObjects.contains(newBook), "the cascade did not reach the book inserted on the deleted shelf")
            try b.save()
        }
        let check = container.newBackgroundContext()
        let titles = try check.performAndWait { try check.fetch(Book.fetchRequest()).map(\.title) }
        #expect(titles == [])
    }

    /// Other rules only unlink: B renames shelf S; A deletes book "A", whose rule towards
    /// its shelf is nullify, and saves; B merges: S, changed in B, stays, without the book.
    @Test func aMergedDeletionWithANullifyRuleOnlyUnlinks() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            shelf.name = "Renamed in B"
            _ = shelf.books.count
        }
        let token = mergeSaves(of: a, into: b)
        defer { NotificationCenter.default.removeObserver(token) }
        try a.performAndWait {
            a.delete(try a.existingObject(with: seeded.a))
            try a.save()
        }
        let (deleted, titles): (Bool, [String]) = try b.performAndWait {
            let shelf = try #require(b.registeredObject(for: seeded.shelf) as? Shelf)
            try b.save()
            return (shelf.isDeleted, shelf.books.map(\.title))
        }
        #expect(!deleted)
        #expect(titles == ["B"])
    }

    // MARK: conflicts behind link upkeep

    /// A renames shelf S; B renames it too and saves. A then deletes one of S's books: the
    /// nullify rule moves A's S onto B's row to keep the link ends in agreement. A's save
    /// must still conflict under the default policy, as Core Data's does (Guide, "Saving");
    /// before the fix it succeeded and overwrote B's name. After refreshing S with merging,
    /// A's save goes through with A's name on top.
    @Test func aConflictHiddenBehindADeleteRuleIsStillReported() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try a.performAndWait {
            let shelf = try #require(try a.existingObject(with: seeded.shelf) as? Shelf)
            shelf.name = "A's name"
            _ = shelf.books.count
        }
        try b.performAndWait {
            try #require(try b.existingObject(with: seeded.shelf) as? Shelf).name = "B's name"
            try b.save()
        }
        try a.performAndWait {
            a.delete(try a.existingObject(with: seeded.a))
            let error = try #require(throws: CoreDataError.self) { try a.save() }
            #expect(error.code == .managedObjectMerge)
            #expect(error.conflicts.map(\.objectID) == [seeded.shelf])
            let shelf = try #require(a.registeredObject(for: seeded.shelf) as? Shelf)
            a.refresh(shelf, mergeChanges: true)
            try a.save()
        }
        let check = container.newBackgroundContext()
        let (name, titles): (String, [String]) = try check.performAndWait {
            let shelf = try #require(try check.existingObject(with: seeded.shelf) as? Shelf)
            return (shelf.name, shelf.books.map(\.title))
        }
        #expect(name == "A's name")
        #expect(titles == ["B"])
    }

    // MARK: stale faults

    /// B fetches the books (returned as faults) and touches none. A, on the same
    /// coordinator, changes a book and saves. B then fires the fault: in Core Data a fault
    /// is fulfilled from the coordinator's row cache, which A's save updated, so B reads
    /// A's title — and B's later save of that book does not conflict.
    @Test func aFaultFiredAfterAnotherContextsSaveShowsTheSavedValues() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let books = try b.fetch(Book.fetchRequest())
            #expect(books.count == 2)
            #expect(books.allSatisfy { $0.isFault })
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "A2"
            try a.save()
        }
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a) as? Book)
            #expect(book.isFault)
            #expect(book.title == "A2", "the fault was fulfilled with the values read before the other save")
            book.pages = 999
            do { try b.save() } catch { Issue.record("the save conflicted: \(error)") }
        }
    }
}
