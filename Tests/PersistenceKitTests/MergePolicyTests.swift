import Foundation
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

@Suite struct MergePolicyTests {
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
}
