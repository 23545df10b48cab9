import Foundation
import Testing
@testable import PersistenceKit

/// Saves one book titled `title` in a fresh context and returns its permanent ID.
private func seedBook(_ container: NSPersistentContainer, title: String = "Dune", pages: Int64 = 412) async throws -> NSManagedObjectID {
    let ctx = container.newBackgroundContext()
    return try await ctx.perform {
        let b = Book(context: ctx)
        b.title = title
        b.pages = pages
        try ctx.save()
        return b.objectID
    }
}

@Suite("One object per row in a context") struct UniquingTests {
    @Test func fetchingTwiceReturnsTheIdenticalInstance() async throws {
        let container = try Fixtures.container()
        let id = try await seedBook(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let first = try ctx.fetch(Book.fetchRequest())
            let second = try ctx.fetch(Book.fetchRequest())
            #expect(first.count == 1)
            #expect(second.count == 1)
            let a = try #require(first.first)
            let b = try #require(second.first)
            #expect(a === b)
            #expect(a.objectID == id)
            // Reading values does not change identity either.
            #expect(a.title == "Dune")
            let third = try ctx.fetch(Book.fetchRequest())
            #expect(third.first === a)
            #expect(ctx.registeredObjects.count == 1)
        }
    }

    @Test func objectWithExistingObjectAndRegisteredObjectAgree() async throws {
        let container = try Fixtures.container()
        let id = try await seedBook(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            #expect(ctx.registeredObject(for: id) == nil)
            let viaObjectWith = ctx.object(with: id)
            #expect(viaObjectWith.isFault)
            let registered = try #require(ctx.registeredObject(for: id))
            #expect(registered === viaObjectWith)
            let existing = try ctx.existingObject(with: id)
            #expect(existing === viaObjectWith)
            #expect(!existing.isFault)
            let fetched = try #require(try ctx.fetch(Book.fetchRequest()).first)
            #expect(fetched === viaObjectWith)
            #expect(ctx.object(with: id) === viaObjectWith)
            #expect((existing as? Book)?.title == "Dune")
        }
    }

    @Test func existingObjectFirstThenFetchKeepsIdentity() async throws {
        let container = try Fixtures.container()
        let id = try await seedBook(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let existing = try ctx.existingObject(with: id)
            let fetched = try ctx.fetch(Book.fetchRequest())
            #expect(fetched.count == 1)
            #expect(fetched.first === existing)
            #expect(ctx.registeredObject(for: id) === existing)
        }
    }

    @Test func relationshipTargetsAreUniquedWithFetchedObjects() async throws {
        let container = try Fixtures.container()
        let seed = container.newBackgroundContext()
        let shelfID: NSManagedObjectID = try await seed.perform {
            let s = Shelf(context: seed)
            s.name = "S"
            let b = Book(context: seed)
            b.title = "B"
            b.shelf = s
            try seed.save()
            return s.objectID
        }
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let book = try #require(try ctx.fetch(Book.fetchRequest()).first)
            let shelf = try #require(try ctx.fetch(Shelf.fetchRequest()).first)
            #expect(book.shelf === shelf)
            #expect(shelf.books.first === book)
            #expect(ctx.object(with: shelfID) === shelf)
        }
    }

    @Test func differentContextsGetDifferentInstances() async throws {
        let container = try Fixtures.container()
        let id = try await seedBook(container)
        let c1 = container.newBackgroundContext()
        let c2 = container.newBackgroundContext()
        let o1 = try c1.performAndWait { try c1.existingObject(with: id) }
        try c2.performAndWait {
            let o2 = try c2.existingObject(with: id)
            #expect(o2 !== o1)
            #expect(o2.objectID == o1.objectID)
            #expect(o2.managedObjectContext === c2)
        }
        c1.performAndWait {
            #expect(o1.managedObjectContext === c1)
            #expect(c1.registeredObject(for: id) === o1)
        }
    }

    @Test func existingObjectThrowsForUnknownRow() async throws {
        let container = try Fixtures.container()
        let id = try await seedBook(container)
        let deleter = container.newBackgroundContext()
        try await deleter.perform {
            deleter.delete(try deleter.existingObject(with: id))
            try deleter.save()
        }
        let ctx = container.newBackgroundContext()
        await ctx.perform {
            let error = #expect(throws: CoreDataError.self) { try ctx.existingObject(with: id) }
            #expect(error?.code == .managedObjectReferentialIntegrity)
            #expect(ctx.registeredObject(for: id) == nil)
        }
    }

    @Test func savedInsertStaysTheRegisteredInstance() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let b = Book(context: ctx)
            b.title = "Kept"
            try ctx.save()
            let fetched = try ctx.fetch(Book.fetchRequest())
            #expect(fetched.count == 1)
            #expect(fetched.first === b)
            #expect(try ctx.existingObject(with: b.objectID) === b)
            #expect(ctx.object(with: b.objectID) === b)
            #expect(ctx.registeredObjects == [b])
        }
    }

    @Test func insertedObjectsHaveTemporaryIDsUntilSave() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        let savedID: NSManagedObjectID = try await ctx.perform {
            let b = Book(context: ctx)
            b.title = "Temp"
            let tempID = b.objectID
            #expect(tempID.isTemporaryID)
            #expect(ctx.registeredObject(for: tempID) === b)
            #expect(ctx.object(with: tempID) === b)
            #expect(try ctx.existingObject(with: tempID) === b)
            try ctx.save()
            let permanentID = b.objectID
            #expect(!permanentID.isTemporaryID)
            #expect(permanentID != tempID)
            #expect(ctx.registeredObject(for: permanentID) === b)
            #expect(ctx.registeredObject(for: tempID) == nil)
            #expect(!b.isInserted)
            #expect(!ctx.hasChanges)
            return permanentID
        }
        let other = container.newBackgroundContext()
        let title: String = try await other.perform {
            (try other.existingObject(with: savedID) as? Book)?.title ?? "<missing>"
        }
        #expect(title == "Temp")
        // The URI form of a permanent ID round-trips through the coordinator.
        let uri = savedID.uriRepresentation()
        #expect(container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: uri) == savedID)
    }

    @Test func obtainPermanentIDsKeepsObjectInsertedAndSaveKeepsTheID() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        let id: NSManagedObjectID = try await ctx.perform {
            let a = Book(context: ctx)
            a.title = "A"
            let b = Book(context: ctx)
            b.title = "B"
            let tempA = a.objectID
            try ctx.obtainPermanentIDs(for: [a, b])
            #expect(!a.objectID.isTemporaryID)
            #expect(!b.objectID.isTemporaryID)
            #expect(a.objectID != b.objectID)
            #expect(a.isInserted)
            #expect(ctx.insertedObjects == Set([a, b] as [NSManagedObject]))
            #expect(ctx.registeredObject(for: a.objectID) === a)
            #expect(ctx.registeredObject(for: tempA) == nil)
            let permanentA = a.objectID
            // Calling it again changes nothing.
            try ctx.obtainPermanentIDs(for: [a])
            #expect(a.objectID == permanentA)
            try ctx.save()
            #expect(a.objectID == permanentA)
            #expect(!a.isInserted)
            return permanentA
        }
        let other = container.newBackgroundContext()
        let title: String = try await other.perform {
            (try other.existingObject(with: id) as? Book)?.title ?? "<missing>"
        }
        #expect(title == "A")
    }

    @Test func objectsWithObtainedPermanentIDsStillMatchFetchesBeforeSave() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = Book(context: ctx)
            a.title = "Pending"
            try ctx.obtainPermanentIDs(for: [a])
            // Still an unsaved insert: includesPendingChanges (the default) must include it.
            let fetched = try ctx.fetch(Book.fetchRequest())
            #expect(fetched.count == 1)
            #expect(fetched.first === a)
            #expect(try ctx.count(for: Book.fetchRequest()) == 1)
        }
    }
}
