import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Review of shouldDeleteInaccessibleFaults, includesPropertyValues / fetchBatchSize and
// store metadata: each test failed before the fix it names.

/// A shelf whose update validation reads its books' titles (as custom validation often
/// reads related objects), so validating it fires their faults.
final class ValidatingShelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf", deleteRule: .nullifyDeleteRule) var books: Set<ValidatedBook>
    override func validateForUpdate() throws {
        try super.validateForUpdate()
        for book in books { _ = book.title }
    }
}

final class ValidatedBook: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var shelf: ValidatingShelf?
}

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

@Suite struct NewFeatureReviewTests {
    // MARK: Inaccessible faults

    /// Bug: the save discarded (invalidated) the inaccessible book, but the shelf whose
    /// books were walked still held it; reading it then trapped ("no longer usable").
    @Test func aDiscardedInaccessibleObjectLeavesTheRelationshipsThatHeldIt() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = try #require(context.object(with: seeded.shelf) as? Shelf)
            let books = shelf.books
            try Fixtures.deleteInAnotherContext(seeded.b, in: container)
            #expect(books.map(\.title).sorted() == ["", "A"])
            try context.save()
            let after = shelf.books
            #expect(after.count == 1)
            try #require(after.allSatisfy { $0.managedObjectContext === context }, "no discarded object left in the relationship")
            #expect(after.map(\.title) == ["A"])
            #expect(!context.hasChanges)
        }
    }

    /// The same for a to-one relationship.
    @Test func aDiscardedInaccessibleObjectLeavesTheToOneThatHeldIt() async throws {
        let container = try Fixtures.container()
        let maker = container.newBackgroundContext()
        let (bookID, coverID) = try maker.performAndWait {
            let book = Book(context: maker)
            book.title = "T"
            let cover = Cover(context: maker)
            book.cover = cover
            try maker.save()
            return (book.objectID, cover.objectID)
        }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = try #require(context.object(with: bookID) as? Book)
            let cover = try #require(book.cover)
            try Fixtures.deleteInAnotherContext(coverID, in: container)
            #expect(cover.color == "white" && cover.isDeleted)
            try context.save()
            #expect(book.cover == nil, "the discarded cover is not held any more")
        }
    }

    /// Bug: saving a change to the shelf that held the inaccessible book failed, under any
    /// merge policy, with a "dangling reference" validation error for the discarded book.
    @Test func savingAnObjectThatHeldAnInaccessibleOneSucceedsUnderAMergePolicy() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        context.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        try context.performAndWait {
            let shelf = try #require(context.object(with: seeded.shelf) as? Shelf)
            let books = shelf.books
            try Fixtures.deleteInAnotherContext(seeded.b, in: container)
            _ = books.map(\.title)
            shelf.name = "Renamed"
            try context.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let shelves = try reader.fetch(Shelf.fetchRequest())
            #expect(shelves.map(\.name) == ["Renamed"])
            #expect(shelves.first?.books.map(\.title) == ["A"])
        }
    }

    /// Bug: `insert(_:)` on an inaccessible object (undoing its deletion) left an object
    /// with empty values and no row: not a fault, not deleted, not updated; editing it
    /// failed validation (or, all values set, was announced as saved and never written).
    @Test func insertingAnInaccessibleObjectAgainMakesItAFaultAgain() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let gone = try #require(context.object(with: seeded.b) as? Book)
            try Fixtures.deleteInAnotherContext(seeded.b, in: container)
            _ = gone.title
            #expect(gone.isDeleted)
            context.insert(gone)
            #expect(gone.isFault && !gone.isDeleted && context.deletedObjects.isEmpty && !context.hasChanges)
            gone.title = "Back"  // fires the fault: still no row, so deleted again
            #expect(gone.isDeleted && context.deletedObjects == [gone])
            try context.save()
            #expect(!context.hasChanges)
            #expect(context.registeredObject(for: seeded.b) == nil)
            #expect(try context.count(for: Book.fetchRequest()) == 1)
        }
    }

    /// Bug: a fault found inaccessible while the save validated (a validation hook reading
    /// a relationship) was dropped from `deletedObjects` by that save but stayed registered
    /// and `isDeleted` — never discarded.
    @Test func aFaultFoundInaccessibleDuringValidationIsDiscardedByTheNextSave() async throws {
        let container = try BITSupport.container(model: NSManagedObjectModel(managedObjectClasses: [ValidatingShelf.self, ValidatedBook.self]))
        let seeder = container.newBackgroundContext()
        let (shelfID, goneID) = try seeder.performAndWait {
            let shelf = ValidatingShelf(context: seeder)
            shelf.name = "S"
            for title in ["A", "B"] {
                let book = ValidatedBook(context: seeder)
                book.title = title
                book.shelf = shelf
            }
            try seeder.save()
            return (shelf.objectID, try #require(shelf.books.first { $0.title == "B" }).objectID)
        }
        let context = container.newBackgroundContext()
        context.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        try context.performAndWait {
            let shelf = try #require(context.object(with: shelfID) as? ValidatingShelf)
            shelf.name = "Renamed"
            try Fixtures.deleteInAnotherContext(goneID, in: container)
            try context.save()  // validation reads B: inaccessible from then on
            let gone = context.registeredObject(for: goneID)
            if let gone {
                #expect(gone.isDeleted)
                #expect(context.deletedObjects == [gone], "a deleted object is in deletedObjects")
                try context.save()
            }
            #expect(context.registeredObject(for: goneID) == nil, "the next save discarded it")
            #expect(!context.hasChanges)
        }
    }

    /// Bug: with automatic merging, the broadcast of a save that updated the row before
    /// another deleted it arrives after the fault found the row gone; the merge gave the
    /// inaccessible object that row's values and reran its delete rules on them, so the
    /// nullify rule left the (unchanged) shelf updated once everything was merged.
    @Test func anOlderUpdateMergedAfterTheFaultFoundItsRowGoneChangesNothing() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        context.automaticallyMergesChangesFromParent = true
        try context.performAndWait {
            let shelf = try #require(context.object(with: seeded.shelf) as? Shelf)
            let books = shelf.books
            let editor = container.newBackgroundContext()
            try editor.performAndWait {
                try #require(editor.object(with: seeded.b) as? Book).title = "B, revised"
                try editor.save()
            }
            try Fixtures.deleteInAnotherContext(seeded.b, in: container)
            // Both saves' merges wait on this context's queue until this block ends.
            #expect(books.map(\.title).sorted() == ["", "A"])
        }
        let state = await context.perform {  // after the queued merges
            (context.hasChanges, context.updatedObjects.count, context.registeredObject(for: seeded.b) == nil)
        }
        #expect(state.0 == false, "everything merged: nothing left to save")
        #expect(state.1 == 0)
        #expect(state.2, "the merged deletion removed the inaccessible object")
    }

    // MARK: includesPropertyValues

    /// Bug: an object the predicate had to read (firing it, so awakeFromFetch() ran) was
    /// made a fault again by setting the flag only: no willTurnIntoFault/didTurnIntoFault,
    /// so touching it ran awakeFromFetch() a second time with no fault hook in between.
    @Test func objectsReturnedWithoutValuesPairAwakeFromFetchWithTheFaultHooks() throws {
        let container = try BITSupport.container(model: NSManagedObjectModel(managedObjectClasses: [HookCountingBook.self]))
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
            request.predicate = #Predicate<HookCountingBook> { $0.title.contains("ph") }  // run in memory
            request.includesPropertyValues = false
            let books = try context.fetch(request)
            #expect(books.count == 1 && books.allSatisfy(\.isFault))
            #expect(books.map(\.title) == ["alpha"])
            let counts = HookCountingBook.counts.withLock { $0["alpha"] }
            #expect(counts?.awake == 2)
            #expect(counts?.didTurn == 1, "turned into a fault once between its two awakeFromFetch() calls")
        }
    }

    // MARK: Store metadata

    /// Bug: reading a store's metadata opened the file for writing, so a store the caller
    /// may only read (a bundled or shared store) failed with a permission error.
    @Test func metadataOfAStoreThatCanOnlyBeReadIsRead() async throws {
        let folder = try TemporaryFolder()
        try FSSupport.close(try FSSupport.container(at: folder.storeURL))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: folder.storeURL.path)
        await #expect(processExitsWith: .success) { [path = folder.storeURL.path as String] in
            if getuid() == 0 {  // root may write anyway: read as `nobody`
                guard setgid(65534) == 0, setuid(65534) == 0 else { exit(3) }
            }
            do {
                let metadata = try FileStore.metadata(at: URL(fileURLWithPath: path))
                exit(metadata[NSStoreTypeKey] == NSFileStoreType ? 0 : 4)
            } catch {
                exit(5)
            }
        }
    }
}
