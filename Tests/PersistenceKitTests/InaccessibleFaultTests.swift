import Foundation
import PersistenceKit
import TestSupport
import Testing

/// A fault whose row another context deleted (and this one has not merged) becomes a
/// deleted object with empty values when read, as Core Data does with
/// `shouldDeleteInaccessibleFaults` on (its default). Off, reading it traps: BadInputTests.
@Suite struct InaccessibleFaultTests {
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

    @Test func resetForgetsItAndRollbackMakesItAFaultAgain() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let gone = try #require(context.object(with: seeded.a) as? Book)
            try Fixtures.deleteInAnotherContext(seeded.a, in: container)
            _ = gone.title
            context.rollback()
            #expect(gone.isFault && !gone.isDeleted && context.deletedObjects.isEmpty)
            _ = gone.title  // still no row: deleted again
            #expect(gone.isDeleted && context.deletedObjects == [gone])
            context.reset()
            #expect(context.deletedObjects.isEmpty && !context.hasChanges)
        }
    }
}

/// What did-save observers saw: per notification, how many deleted objects it listed.
private final class Observed: Sendable {
    private let counts = TestMutex<[Int?]>([])
    func record(_ count: Int?) { counts.withLock { $0.append(count) } }
    var deletedCounts: [Int?] { counts.withLock { $0 } }
}
