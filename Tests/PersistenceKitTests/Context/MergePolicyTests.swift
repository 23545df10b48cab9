import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

/// A book's persisted values, as seen by one context.
private struct MPState: Sendable, Equatable, CustomStringConvertible {
    var title: String
    var pages: Int64
    var published: Double?

    init(title: String, pages: Int64, published: Double?) {
        self.title = title
        self.pages = pages
        self.published = published
    }

    init(_ b: Book) {
        self.init(title: b.title, pages: b.pages, published: b.published?.timeIntervalSince1970)
    }

    var description: String { "\(title)/\(pages)/\(published.map { "\($0)" } ?? "nil")" }
}

private let publishedDate = Date(timeIntervalSince1970: 1_000_000)

/// The book as stored now, read by a fresh context.
private func stored(_ container: NSPersistentContainer, _ id: NSManagedObjectID) async throws -> MPState {
    let ctx = container.newBackgroundContext()
    return try await ctx.perform { MPState(try #require(try ctx.existingObject(with: id) as? Book)) }
}

private func storedTitles(_ container: NSPersistentContainer) async throws -> [String] {
    let ctx = container.newBackgroundContext()
    return try await ctx.perform { try ctx.fetch(Book.fetchRequest()).map(\.title).sorted() }
}

/// The conflict scenario. The store starts with T0/100/nil. Contexts A and B both load the
/// book. A changes title and pages (A-title/111) and saves. B then changes pages and
/// published (222/1e6), inserts an unrelated book "Extra", and saves with `policy`.
/// Returns B's in-memory state after the save (or the failed save) and the error, if any.
private func runConflict(_ container: NSPersistentContainer, policy: NSMergePolicy?) async throws -> (
    id: NSManagedObjectID, bAfter: MPState, error: CoreDataError?, bHasChanges: Bool
) {
    let seed = container.newBackgroundContext()
    let id: NSManagedObjectID = try await seed.perform {
        let b = Book(context: seed)
        b.title = "T0"
        b.pages = 100
        try seed.save()
        return b.objectID
    }
    let ctxA = container.newBackgroundContext()
    let ctxB = container.newBackgroundContext()
    // Both load the same version.
    let loadedA: MPState = try await ctxA.perform { MPState(try #require(try ctxA.existingObject(with: id) as? Book)) }
    let loadedB: MPState = try await ctxB.perform { MPState(try #require(try ctxB.existingObject(with: id) as? Book)) }
    #expect(loadedA == MPState(title: "T0", pages: 100, published: nil))
    #expect(loadedB == loadedA)
    try await ctxA.perform {
        let book = try #require(ctxA.registeredObject(for: id) as? Book)
        book.title = "A-title"
        book.pages = 111
        try ctxA.save()
    }
    let (bAfter, message, hasChanges): (MPState, CoreDataErrorBox?, Bool) = try await ctxB.perform {
        if let policy { ctxB.mergePolicy = policy }
        let book = try #require(ctxB.registeredObject(for: id) as? Book)
        book.pages = 222
        book.published = publishedDate
        let extra = Book(context: ctxB)
        extra.title = "Extra"
        var box: CoreDataErrorBox?
        do {
            try ctxB.save()
        } catch let e as CoreDataError {
            box = CoreDataErrorBox(error: e)
            #expect(extra.isInserted)
            #expect(extra.objectID.isTemporaryID)
        }
        return (MPState(book), box, ctxB.hasChanges)
    }
    return (id, bAfter, message?.error, hasChanges)
}

private struct CoreDataErrorBox: Sendable {
    let error: CoreDataError
}

/// Optimistic locking conflicts at save and how each merge policy resolves them, including
/// the links between the conflicting objects and the objects around them.
@Suite("Merge policies resolving save conflicts") struct MergePolicyTests {
    // MARK: Merge policies keep both ends of relationships

    /// Saved shelves S1, S2, S3 and a book on S1.
    private static func seedShelves(_ container: NSPersistentContainer) throws -> (book: NSManagedObjectID, shelves: [NSManagedObjectID]) {
        let seed = container.newBackgroundContext()
        return try seed.performAndWait {
            let shelves = ["S1", "S2", "S3"].map { name in
                let s = Shelf(context: seed)
                s.name = name
                return s
            }
            let book = Book(context: seed)
            book.title = "T0"
            book.shelf = shelves[0]
            try seed.save()
            return (book.objectID, shelves.map(\.objectID))
        }
    }

    /// Every shelf lists the book exactly when the book points at it, in a fresh context.
    private static func expectConsistent(_ container: NSPersistentContainer, book id: NSManagedObjectID, shelves: [NSManagedObjectID]) throws {
        let check = container.newBackgroundContext()
        try check.performAndWait {
            let book = try #require(try check.existingObject(with: id) as? Book)
            for shelfID in shelves {
                let shelf = try #require(try check.existingObject(with: shelfID) as? Shelf)
                #expect(shelf.books.contains(book) == (book.shelf === shelf), "book on \(book.shelf?.name ?? "nil"); \(shelf.name) lists it: \(shelf.books.contains(book))")
            }
        }
    }

    @Test func defaultPolicyIsError() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        let isError: Bool = await ctx.perform { ctx.mergePolicy == NSErrorMergePolicy }
        #expect(isError)
    }

    @Test func errorPolicyFailsWithConflictsAndWritesNothing() async throws {
        let container = try Fixtures.container()
        let r = try await runConflict(container, policy: nil)
        let error = try #require(r.error)
        #expect(error.code == .managedObjectMerge)
        #expect(error.conflicts.count == 1)
        let conflict = try #require(error.conflicts.first)
        #expect(conflict.objectID == r.id)
        #expect(conflict.oldVersionNumber < conflict.newVersionNumber)
        // B keeps its changes; the store has A's save only, and not B's insert.
        #expect(r.bHasChanges)
        #expect(r.bAfter == MPState(title: "T0", pages: 222, published: 1_000_000))
        #expect(try await stored(container, r.id) == MPState(title: "A-title", pages: 111, published: nil))
        #expect(try await storedTitles(container) == ["A-title"])
    }

    @Test func refreshAfterConflictThenSaveSucceeds() async throws {
        let container = try Fixtures.container()
        let seed = container.newBackgroundContext()
        let id: NSManagedObjectID = try await seed.perform {
            let b = Book(context: seed)
            b.title = "T0"
            b.pages = 100
            try seed.save()
            return b.objectID
        }
        let ctxA = container.newBackgroundContext()
        let ctxB = container.newBackgroundContext()
        try await ctxB.perform { _ = try ctxB.existingObject(with: id) }
        try await ctxA.perform {
            let book = try #require(try ctxA.existingObject(with: id) as? Book)
            book.title = "A-title"
            try ctxA.save()
        }
        try await ctxB.perform {
            let book = try #require(ctxB.registeredObject(for: id) as? Book)
            book.pages = 222
            let error = try #require(throws: CoreDataError.self) { try ctxB.save() }
            #expect(error.code == .managedObjectMerge)
            ctxB.refresh(book, mergeChanges: true)
            #expect(book.title == "A-title")
            #expect(book.pages == 222)
            try ctxB.save()
        }
        #expect(try await stored(container, id) == MPState(title: "A-title", pages: 222, published: nil))
    }

    @Test func mergeByPropertyObjectTrump() async throws {
        let container = try Fixtures.container()
        let r = try await runConflict(container, policy: NSMergeByPropertyObjectTrumpMergePolicy)
        #expect(r.error == nil)
        // title: only A changed it → A's; pages: both → B's (object trumps); published: only B → B's.
        let expected = MPState(title: "A-title", pages: 222, published: 1_000_000)
        #expect(try await stored(container, r.id) == expected)
        #expect(r.bAfter == expected)
        #expect(!r.bHasChanges)
        #expect(try await storedTitles(container) == ["A-title", "Extra"])
    }

    @Test func mergeByPropertyStoreTrump() async throws {
        let container = try Fixtures.container()
        let r = try await runConflict(container, policy: NSMergeByPropertyStoreTrumpMergePolicy)
        #expect(r.error == nil)
        // title: A's; pages: both changed → the store's (111); published: only B → B's.
        let expected = MPState(title: "A-title", pages: 111, published: 1_000_000)
        #expect(try await stored(container, r.id) == expected)
        #expect(r.bAfter == expected)
        #expect(!r.bHasChanges)
        #expect(try await storedTitles(container) == ["A-title", "Extra"])
    }

    @Test func overwrite() async throws {
        let container = try Fixtures.container()
        let r = try await runConflict(container, policy: NSOverwriteMergePolicy)
        #expect(r.error == nil)
        // B's whole object replaces the store's, including the title B never changed.
        let expected = MPState(title: "T0", pages: 222, published: 1_000_000)
        #expect(try await stored(container, r.id) == expected)
        #expect(r.bAfter == expected)
        #expect(!r.bHasChanges)
        #expect(try await storedTitles(container) == ["Extra", "T0"])
    }

    @Test func rollback() async throws {
        let container = try Fixtures.container()
        let r = try await runConflict(container, policy: NSRollbackMergePolicy)
        #expect(r.error == nil)
        // B's changes to the conflicting object are discarded; the rest of its save goes through.
        let expected = MPState(title: "A-title", pages: 111, published: nil)
        #expect(try await stored(container, r.id) == expected)
        #expect(r.bAfter == expected)
        #expect(!r.bHasChanges)
        #expect(try await storedTitles(container) == ["A-title", "Extra"])
    }

    /// Both contexts add a different book to the same shelf. The shelf's row conflicts; a
    /// property-merging policy must keep both additions (the relationship is consistent on
    /// both sides: each book says it is on the shelf).
    @Test(arguments: [NSMergePolicyType.mergeByPropertyObjectTrumpMergePolicyType, .mergeByPropertyStoreTrumpMergePolicyType])
    func concurrentToManyAdditionsAreBothKept(_ type: NSMergePolicyType) async throws {
        let container = try Fixtures.container()
        let seed = container.newBackgroundContext()
        let shelfID: NSManagedObjectID = try await seed.perform {
            let s = Shelf(context: seed)
            s.name = "S"
            let b = Book(context: seed)
            b.title = "Old"
            b.shelf = s
            try seed.save()
            return s.objectID
        }
        let ctxA = container.newBackgroundContext()
        let ctxB = container.newBackgroundContext()
        try await ctxB.perform {
            let s = try #require(try ctxB.existingObject(with: shelfID) as? Shelf)
            #expect(s.books.count == 1)
        }
        try await ctxA.perform {
            let s = try #require(try ctxA.existingObject(with: shelfID) as? Shelf)
            let b = Book(context: ctxA)
            b.title = "FromA"
            b.shelf = s
            try ctxA.save()
        }
        try await ctxB.perform {
            ctxB.mergePolicy = NSMergePolicy(merge: type)
            let s = try #require(ctxB.registeredObject(for: shelfID) as? Shelf)
            let b = Book(context: ctxB)
            b.title = "FromB"
            b.shelf = s
            try ctxB.save()
        }
        let check = container.newBackgroundContext()
        let (onShelf, pointing): ([String], [String]) = try await check.perform {
            let s = try #require(try check.existingObject(with: shelfID) as? Shelf)
            let all = try check.fetch(Book.fetchRequest())
            return (s.books.map(\.title).sorted(), all.filter { $0.shelf === s }.map(\.title).sorted())
        }
        #expect(pointing == ["FromA", "FromB", "Old"])
        #expect(onShelf == pointing)
    }

    @Test func conflictingDeleteFailsWithErrorPolicy() async throws {
        let container = try Fixtures.container()
        let seed = container.newBackgroundContext()
        let id: NSManagedObjectID = try await seed.perform {
            let b = Book(context: seed)
            b.title = "T0"
            try seed.save()
            return b.objectID
        }
        let ctxA = container.newBackgroundContext()
        let ctxB = container.newBackgroundContext()
        try await ctxB.perform { _ = try ctxB.existingObject(with: id) }
        try await ctxA.perform {
            let book = try #require(try ctxA.existingObject(with: id) as? Book)
            book.title = "A-title"
            try ctxA.save()
        }
        try await ctxB.perform {
            let book = try #require(ctxB.registeredObject(for: id))
            ctxB.delete(book)
            let error = try #require(throws: CoreDataError.self) { try ctxB.save() }
            #expect(error.code == .managedObjectMerge)
            #expect(error.conflicts.map(\.objectID) == [id])
            #expect(book.isDeleted)
        }
        #expect(try await storedTitles(container) == ["A-title"])
    }

    // MARK: NSOverwriteMergePolicy and to-many relationships

    /// Context A puts a new book on shelf S and saves. Context B, which had read S and its
    /// books earlier, only renames S and saves with NSOverwriteMergePolicy. In Core Data the
    /// overwrite pushes B's snapshot of S — attributes and to-one relationships; a to-many
    /// is not part of a snapshot (NSMergeConflict: "Snapshot dictionaries include values for
    /// all attributes and to-one relationships, but not to-many relationships") and in the
    /// SQL store it is the books' foreign keys, which B never touched. A's book stays on S.
    @Test func overwritePolicyKeepsABookAnotherContextPutOnTheShelf() async throws {
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
    /// is — its row holds the foreign key to S. The book stays on the shelf.
    @Test func rollbackPolicyKeepsTheShelfOfAnInsertedBook() async throws {
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
    /// book "A", whose row (its foreign key) Core Data's overwrite of S does not touch: the
    /// overwrite of S's book list does not move the book back onto S.
    @Test func overwritePolicyDoesNotMoveBackABookAnotherContextMoved() async throws {
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
    /// foreign key). The rollback of S does not put the book back on the shelf.
    @Test func rollbackPolicyKeepsANonConflictingBooksOwnChange() async throws {
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

    // MARK: conflicts behind link upkeep

    /// A renames shelf S; B renames it too and saves. A then deletes one of S's books: the
    /// nullify rule moves A's S onto B's row to keep the link ends in agreement. A's save
    /// must still conflict under the default policy, as Core Data's does (Guide, "Saving"),
    /// rather than succeed and overwrite B's name. After refreshing S with merging,
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

    @Test func rollbackPolicyPutsADiscardedMoveBackOnBothEnds() throws {
        let container = try Fixtures.container()
        let (bookID, shelves) = try Self.seedShelves(container)
        let a = container.newBackgroundContext()
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: bookID) as? Book)
            book.shelf = try #require(try a.existingObject(with: shelves[1]) as? Shelf)
        }
        let b = container.newBackgroundContext()
        try b.performAndWait {
            try #require(try b.existingObject(with: bookID) as? Book).title = "B"
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = NSRollbackMergePolicy
            try a.save()
        }
        try Self.expectConsistent(container, book: bookID, shelves: shelves)
    }

    @Test func rollbackPolicyUndoesTheNullifyOfADiscardedDeletion() throws {
        let container = try Fixtures.container()
        let (bookID, shelves) = try Self.seedShelves(container)
        let a = container.newBackgroundContext()
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: bookID) as? Book)
            _ = book.shelf?.books
            a.delete(book)
            a.processPendingChanges()  // the nullify rule takes the book off its shelf
        }
        let b = container.newBackgroundContext()
        try b.performAndWait {
            try #require(try b.existingObject(with: bookID) as? Book).title = "B"
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = NSRollbackMergePolicy
            try a.save()
        }
        try Self.expectConsistent(container, book: bookID, shelves: shelves)
    }

    @Test func overwritePolicyTakesTheBookOffTheShelfTheOtherSaveChose() throws {
        let container = try Fixtures.container()
        let (bookID, shelves) = try Self.seedShelves(container)
        let a = container.newBackgroundContext()
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: bookID) as? Book)
            book.shelf = try #require(try a.existingObject(with: shelves[1]) as? Shelf)
        }
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let book = try #require(try b.existingObject(with: bookID) as? Book)
            book.shelf = try #require(try b.existingObject(with: shelves[2]) as? Shelf)
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = NSOverwriteMergePolicy
            try a.save()
        }
        try Self.expectConsistent(container, book: bookID, shelves: shelves)
    }

    // MARK: rollback policy

    /// B moves book A from shelf S to shelf S2; another context changes book A's title and
    /// saves. B saves with NSRollbackMergePolicy: book A, in conflict, takes the store's
    /// state — its foreign key included (Core Data's rollback discards the conflicting
    /// object's changes; its shelf is its own column). The shelves' changes are only the
    /// inverse of the book's; `linksHeldByOthers` counted them as the shelves' own and kept
    /// the move.
    @Test func rollbackPolicyRestoresTheToOneOfTheConflictingObject() async throws {
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
    @Test func rollbackPolicyWithBothEndsInConflictDropsTheLink() async throws {
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
    func overwritePolicyWithAManyToManyChangedOnBothSides(variant: Int) async throws {
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
}
