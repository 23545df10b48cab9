import Foundation
import TestSupport
import Testing
@testable import PersistenceKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What did-save observers saw: per notification, how many deleted objects it listed.
private final class Observed: Sendable {
    private let counts = TestMutex<[Int?]>([])
    func record(_ count: Int?) { counts.withLock { $0.append(count) } }
    var deletedCounts: [Int?] { counts.withLock { $0 } }
}

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

/// A fault whose row another context deleted (and this one has not merged) becomes a
/// deleted object with empty values when read, as Core Data does with
/// `shouldDeleteInaccessibleFaults` on (its default); off, reading it traps. The next save
/// discards such an object and the links that held it.
@Suite("Faults whose row was deleted elsewhere") struct InaccessibleFaultTests {
    /// With `shouldDeleteInaccessibleFaults` off, firing such a fault traps (on, the object
    /// becomes a deleted one: the tests below).
    @Test func firingAFaultForARowDeletedElsewhereTrapsWhenInaccessibleFaultsAreNotDeleted() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let writer = container.newBackgroundContext()
            let id: NSManagedObjectID = try writer.performAndWait {
                let book = Book(context: writer)
                try writer.save()
                return book.objectID
            }
            let reader = container.newBackgroundContext()
            reader.shouldDeleteInaccessibleFaults = false
            let fault = reader.performAndWait { reader.object(with: id) as? Book }
            try writer.performAndWait {
                writer.delete(writer.object(with: id))
                try writer.save()
            }
            reader.performAndWait {
                _ = fault?.title
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("could not fulfill the fault"), "stderr: \(text)")
        #expect(text.contains("Book"), "stderr: \(text)")
        #expect(text.contains("shouldDeleteInaccessibleFaults"), "stderr: \(text)")
    }

    @Test func aFaultWhoseRowIsGoneBecomesADeletedObjectWithEmptyValues() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        #expect(context.shouldDeleteInaccessibleFaults, "Core Data's default is true")
        try context.performAndWait {
            let book = try #require(context.object(with: seeded.a) as? Book)
            #expect(book.isFault)
            try Fixtures.deleteInAnotherContext(seeded.a, in: container)

            #expect(book.title == "", "a non-optional attribute reads its declared default")
            #expect(book.published == nil)
            #expect(book.value(forKey: "title") == nil, "the stored value is nil")
            #expect(book.shelf == nil)
            #expect(book.authors.isEmpty)
            #expect(!book.isFault)
            #expect(book.isDeleted)
            #expect(context.deletedObjects == [book])
            #expect(context.hasChanges)
        }
    }

    @Test func walkingARelationshipWhoseTargetWasDeletedElsewhereKeepsRunning() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        let titles = try context.performAndWait {
            let shelf = try #require(context.object(with: seeded.shelf) as? Shelf)
            let books = shelf.books  // both still faults
            try Fixtures.deleteInAnotherContext(seeded.b, in: container)
            return books.map { ($0.title, $0.isDeleted) }.sorted { $0.0 < $1.0 }
        }
        #expect(titles.map(\.0) == ["", "A"])
        #expect(titles.map(\.1) == [true, false])
    }

    @Test func theNextSaveDiscardsItWritesNothingForItAndSavesTheRest() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        let observed = Observed()
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextDidSave, object: context, queue: nil
        ) { note in
            observed.record((note.userInfo?[NSDeletedObjectsKey] as? Set<NSManagedObject>)?.count)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try context.performAndWait {
            let gone = try #require(context.object(with: seeded.a) as? Book)
            try Fixtures.deleteInAnotherContext(seeded.a, in: container)
            _ = gone.title  // fires the fault: the row is gone
            let kept = try #require(context.object(with: seeded.b) as? Book)
            kept.title = "B, second edition"
            // Book.title is required; the inaccessible object's nil title must not fail
            // validation, and its missing row must not be a conflict.
            try context.save()
            #expect(context.deletedObjects.isEmpty)
            #expect(!context.hasChanges)
            #expect(context.registeredObject(for: seeded.a) == nil, "discarded from the context")
        }
        #expect(observed.deletedCounts == [nil], "the save deleted nothing: its notification lists no deletions")
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let titles = try reader.fetch(Book.fetchRequest()).map(\.title)
            #expect(titles == ["B, second edition"])
        }
    }

    @Test func aSaveWithOnlyAnInaccessibleObjectWritesNothing() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        let saves = Observed()
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextDidSave, object: context, queue: nil
        ) { note in saves.record(note.userInfo?.count) }
        defer { NotificationCenter.default.removeObserver(token) }
        try context.performAndWait {
            let gone = try #require(context.object(with: seeded.a) as? Book)
            try Fixtures.deleteInAnotherContext(seeded.a, in: container)
            _ = gone.pages
            try context.save()
            #expect(!context.hasChanges)
        }
        // Nothing was left to save: the did-save a save with nothing to write posts, listing nothing.
        #expect(saves.deletedCounts == [0], "one did-save, with no keys")
    }

    // MARK: Inaccessible faults

    /// The save that discards (invalidates) the inaccessible book also takes it out of the
    /// shelf whose books were walked, so reading the shelf's books does not trap ("no longer
    /// usable").
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

    /// Saving a change to the shelf that held the inaccessible book succeeds under a merge
    /// policy, with no "dangling reference" validation error for the discarded book.
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

    /// `insert(_:)` on an inaccessible object (undoing its deletion) makes it a fault again,
    /// not an object with empty values and no row (neither a fault, deleted nor updated) whose
    /// edits fail validation or, all values set, are announced as saved and never written.
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

    /// A fault found inaccessible while the save validates (a validation hook reading a
    /// relationship) is discarded by the next save, not dropped from `deletedObjects` while it
    /// stays registered and `isDeleted`.
    @Test func aFaultFoundInaccessibleDuringValidationIsDiscardedByTheNextSave() async throws {
        let container = try OTSupport.container(model: NSManagedObjectModel(managedObjectClasses: [ValidatingShelf.self, ValidatedBook.self]))
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

    /// With automatic merging, the broadcast of a save that updated the row before another
    /// deleted it arrives after the fault found the row gone; the merge changes nothing: it
    /// neither gives the inaccessible object that row's values nor reruns its delete rules on
    /// them, so the nullify rule leaves the (unchanged) shelf not updated.
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
}
