import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

/// The store's view: sorted "title:pages" of every book, and the shelf's book titles.
private func storeState(_ container: NSPersistentContainer, shelf: NSManagedObjectID) async throws -> ([String], [String]) {
    let ctx = container.newBackgroundContext()
    return try await ctx.perform {
        let r = Book.fetchRequest()
        r.sortKeys = [SortKey("title")]
        let books = try ctx.fetch(r).map { "\($0.title):\($0.pages)" }
        let s = try #require(try ctx.existingObject(with: shelf) as? Shelf)
        return (books, s.books.map(\.title).sorted())
    }
}

@Suite("Saving a context") struct SavingTests {
    // MARK: A relationship to an object that is in no context

    /// Core Data fails such a save ("Dangling reference to an invalid object", 1550). As
    /// found, the save succeeds, the store gets `shelf = nil`, and the book in memory still
    /// shows the shelf: the link is lost without a word.
    @Test func savingALinkToAnObjectNeverInsertedFails() throws {
        let container = try Fixtures.container()
        let model = container.managedObjectModel
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(entity: model.entitiesByName["Book"]!, insertInto: nil)
            let shelf = Shelf(entity: model.entitiesByName["Shelf"]!, insertInto: nil)
            book.shelf = shelf
            context.insert(book)  // the shelf is never inserted
            #expect(throws: CoreDataError.self) { try context.save() }
            #expect(context.hasChanges, "a failed save keeps the changes")
        }
    }

    /// A primitive link to an object of another context must not be saved (Core Data fails
    /// the save: objects in different contexts).
    @Test func savingAPrimitiveLinkToAnotherContextsObjectFails() throws {
        let container = try Fixtures.container()
        let other = container.newBackgroundContext()
        let foreign = try other.performAndWait { () -> Shelf in
            let shelf = Shelf(context: other)
            try other.save()
            return shelf
        }
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            book.setPrimitiveValue(foreign, forKey: "shelf")
            #expect(throws: CoreDataError.self) { try context.save() }
        }
    }

    @Test func saveWritesInsertsUpdatesAndDeletesAtomically() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            let b = try ctx.existingObject(with: ids.b)
            let shelf = try #require(try ctx.existingObject(with: ids.shelf) as? Shelf)
            a.pages = 150
            ctx.delete(b)
            let c = Book(context: ctx)
            c.title = "C"
            c.pages = 300
            c.shelf = shelf
            #expect(ctx.hasChanges)
            try ctx.save()
            #expect(!ctx.hasChanges)
            #expect(ctx.insertedObjects.isEmpty)
            #expect(ctx.updatedObjects.isEmpty)
            #expect(ctx.deletedObjects.isEmpty)
            #expect(!a.isUpdated)
            #expect(!c.isInserted)
            #expect(b.managedObjectContext == nil)
            #expect(ctx.registeredObject(for: ids.b) == nil)
            #expect(a.changedValues().isEmpty)
            #expect(a.committedValues(forKeys: ["pages"])["pages"] as? Int64 == 150)
        }
        let (books, shelfBooks) = try await storeState(container, shelf: ids.shelf)
        #expect(books == ["A:150", "C:300"])
        #expect(shelfBooks == ["A", "C"])
    }

    /// did-save reuses the inserted set objects-did-change announced when the insertions are
    /// still those (`announcedInsertions`); any change to them in between needs a new set.
    @Test func didSaveListsExactlyTheSavedInsertsWhateverWasAnnouncedBefore() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let saved = TestMutex<[Set<String>]>([])
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didSaveObjectsNotification, object: context, queue: nil
        ) { note in
            let objects = note.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject> ?? []
            let titles = Set(objects.compactMap { ($0 as? Book)?.title })
            saved.withLock { $0.append(titles) }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try context.performAndWait {
            func book(_ title: String) -> Book {
                let b = Book(context: context)
                b.title = title
                return b
            }
            // Announced, then saved unchanged.
            _ = book("a")
            _ = book("b")
            context.processPendingChanges()
            try context.save()
            // Announced, then one more inserted.
            _ = book("c")
            context.processPendingChanges()
            _ = book("d")
            try context.save()
            // Announced, then one deleted: the save announces nothing new, and must not
            // reuse the stale set.
            let e = book("e")
            _ = book("f")
            context.processPendingChanges()
            context.delete(e)
            try context.save()
            // The same with another inserted after the deletion was processed.
            let g = book("g")
            _ = book("h")
            context.processPendingChanges()
            context.delete(g)
            context.processPendingChanges()
            _ = book("j")
            try context.save()
            // Announced, then rolled back; the next save has only its own inserts.
            _ = book("k")
            context.processPendingChanges()
            context.rollback()
            _ = book("i")
            try context.save()
        }
        #expect(saved.withLock { $0 } == [["a", "b"], ["c", "d"], ["f"], ["h", "j"], ["i"]])
    }

    /// Writes nothing (its notifications: NotificationTests).
    @Test func saveWithoutChangesWritesNothing() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            try ctx.save()
            #expect(!a.isUpdated)
            #expect(!ctx.hasChanges)
        }
        let (books, _) = try await storeState(container, shelf: ids.shelf)
        #expect(books == ["A:100", "B:200"])
    }

    @Test func failedSaveLeavesStoreAndPendingChangesUntouched() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            let b = try #require(try ctx.existingObject(with: ids.b) as? Book)
            let shelf = try #require(try ctx.existingObject(with: ids.shelf) as? Shelf)
            a.title = "A2"
            ctx.delete(b)
            let bad = Book(context: ctx)
            bad.shelf = shelf
            bad.setValue(nil, forKey: "title")  // required: the save must fail
            ctx.processPendingChanges()

            let inserted = ctx.insertedObjects
            let updated = ctx.updatedObjects
            let deleted = ctx.deletedObjects
            #expect(inserted == [bad])
            #expect(updated == [a, shelf])
            #expect(deleted == [b])

            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationMissingMandatoryProperty)
            #expect(error.objectID == bad.objectID)
            #expect(error.key == "title")

            #expect(ctx.hasChanges)
            #expect(ctx.insertedObjects == inserted)
            #expect(ctx.updatedObjects == updated)
            #expect(ctx.deletedObjects == deleted)
            #expect(a.title == "A2")
            #expect(a.isUpdated)
            #expect(b.isDeleted)
            #expect(bad.isInserted)
            #expect(bad.objectID.isTemporaryID)
            #expect(shelf.books == [a, bad])
            #expect(a.changedValues()["title"] as? String == "A2")
            #expect(a.committedValues(forKeys: ["title"])["title"] as? String == "A")
        }
        var (books, shelfBooks) = try await storeState(container, shelf: ids.shelf)
        #expect(books == ["A:100", "B:200"])
        #expect(shelfBooks == ["A", "B"])

        // Fixing the problem lets the same changes save.
        try await ctx.perform {
            let bad = try #require(ctx.insertedObjects.first as? Book)
            bad.title = "New"
            try ctx.save()
        }
        (books, shelfBooks) = try await storeState(container, shelf: ids.shelf)
        #expect(books == ["A2:100", "New:0"])
        #expect(shelfBooks == ["A2", "New"])
    }

    @Test func relationshipChangesAreSavedOnBothSides() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        let otherShelfID: NSManagedObjectID = try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            let other = Shelf(context: ctx)
            other.name = "Other"
            a.shelf = other
            let author = Author(context: ctx)
            author.name = "Writer"
            author.$books.insert(a)
            #expect(a.authors == [author])
            try ctx.save()
            return other.objectID
        }
        let (_, oldShelf) = try await storeState(container, shelf: ids.shelf)
        #expect(oldShelf == ["B"])
        let check = container.newBackgroundContext()
        let (newShelf, authors): ([String], [String]) = try await check.perform {
            let s = try #require(try check.existingObject(with: otherShelfID) as? Shelf)
            let a = try #require(try check.existingObject(with: ids.a) as? Book)
            return (s.books.map(\.title), a.authors.map(\.name))
        }
        #expect(newShelf == ["A"])
        #expect(authors == ["Writer"])
    }

    @Test func changingAValueBackStillSavesCleanly() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            a.pages = 999
            a.pages = 100
            #expect(!a.hasPersistentChangedValues)
            try ctx.save()
            #expect(!ctx.hasChanges)
            #expect(!a.isUpdated)
        }
        let (books, _) = try await storeState(container, shelf: ids.shelf)
        #expect(books == ["A:100", "B:200"])
    }

    @Test func secondContextSeesSavedChangesAfterRefetch() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let writer = container.newBackgroundContext()
        let reader = container.newBackgroundContext()
        try await writer.perform {
            let a = try #require(try writer.existingObject(with: ids.a) as? Book)
            a.title = "Written"
            try writer.save()
        }
        let title: String = try await reader.perform {
            try #require(try reader.existingObject(with: ids.a) as? Book).title
        }
        #expect(title == "Written")
    }
}
