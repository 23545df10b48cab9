import Foundation
import Synchronization
import Testing
@testable import PersistenceKit

/// A hand-built model for the no-action rule: `Parent.children` (to-many, no action) and
/// `Child.parent` (to-one, nullify).
private func noActionContainer() throws -> NSPersistentContainer {
    let parentName = NSAttributeDescription(name: "name", type: .stringAttributeType)
    let childName = NSAttributeDescription(name: "name", type: .stringAttributeType)
    let children = NSRelationshipDescription(name: "children")
    children.maxCount = 0
    children.deleteRule = .noActionDeleteRule
    let parent = NSRelationshipDescription(name: "parent")
    parent.maxCount = 1
    parent.deleteRule = .nullifyDeleteRule
    let parentEntity = NSEntityDescription(name: "DRNAParent", properties: [parentName, children])
    let childEntity = NSEntityDescription(name: "DRNAChild", properties: [childName, parent])
    children.destinationEntity = childEntity
    children.inverseRelationship = parent
    parent.destinationEntity = parentEntity
    parent.inverseRelationship = children
    let model = NSManagedObjectModel(entities: [parentEntity, childEntity])
    try model.validate()
    let container = NSPersistentContainer(name: "DeleteRuleNoAction", managedObjectModel: model)
    container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
    let box = ErrorBox()
    container.loadPersistentStores { _, error in box.set(error) }
    if let e = box.get() { throw e }
    return container
}

private struct Counts: Sendable, Equatable {
    var shelves = 0, books = 0, authors = 0, covers = 0
}

private func storeCounts(_ container: NSPersistentContainer) async throws -> Counts {
    let ctx = container.newBackgroundContext()
    return try await ctx.perform {
        Counts(
            shelves: try ctx.count(for: Shelf.fetchRequest()), books: try ctx.count(for: Book.fetchRequest()),
            authors: try ctx.count(for: Author.fetchRequest()), covers: try ctx.count(for: Cover.fetchRequest()))
    }
}

private struct LibraryIDs: Sendable {
    let shelf: NSManagedObjectID
    let books: [NSManagedObjectID]
    let covers: [NSManagedObjectID]
    let author: NSManagedObjectID
}

/// One shelf with two books; each book has a cover; one author wrote both books.
private func seedLibrary(_ container: NSPersistentContainer) async throws -> LibraryIDs {
    let ctx = container.newBackgroundContext()
    return try await ctx.perform {
        let shelf = Shelf(context: ctx)
        shelf.name = "Shelf"
        let author = Author(context: ctx)
        author.name = "Author"
        var books: [Book] = []
        var covers: [Cover] = []
        for i in 0..<2 {
            let b = Book(context: ctx)
            b.title = "Book \(i)"
            b.shelf = shelf
            let c = Cover(context: ctx)
            c.color = "c\(i)"
            b.cover = c
            b.authors = [author]
            books.append(b)
            covers.append(c)
        }
        try ctx.save()
        return LibraryIDs(
            shelf: shelf.objectID, books: books.map(\.objectID), covers: covers.map(\.objectID), author: author.objectID)
    }
}

/// An in-memory store that counts the single-row reads the context makes.
final class RowReadCountingStore: ForwardingStore {
    let base: InMemoryStore
    let rowReads = Atomic<Int>(0)

    init(model: NSManagedObjectModel) { base = InMemoryStore(model: model) }

    func fetchRow(_ id: StoreRowID) throws -> StoreRow? {
        rowReads.add(1, ordering: .relaxed)
        return try base.fetchRow(id)
    }
    func rowVersion(_ id: StoreRowID) throws -> Int64? { try base.fetchRow(id)?.version }  // the cheap path: not counted
}

@Suite("Delete rules") struct DeleteRuleTests {
    @Test func nullifyRemovesDeletedObjectFromInverses() async throws {
        let container = try Fixtures.container()
        let ids = try await seedLibrary(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let book = try #require(try ctx.existingObject(with: ids.books[0]) as? Book)
            let shelf = try #require(try ctx.existingObject(with: ids.shelf) as? Shelf)
            let author = try #require(try ctx.existingObject(with: ids.author) as? Author)
            #expect(shelf.books.count == 2)
            #expect(author.books.count == 2)
            ctx.delete(book)
            ctx.processPendingChanges()
            #expect(!shelf.books.contains(book))
            #expect(shelf.books.count == 1)
            #expect(author.books.count == 1)
            #expect(!author.books.contains(book))
            #expect(shelf.isUpdated)
            #expect(author.isUpdated)
            #expect(!shelf.isDeleted)
            #expect(!author.isDeleted)
            // Book.cover cascades.
            let deletedIDs = Set(ctx.deletedObjects.map(\.objectID))
            #expect(deletedIDs == Set([ids.books[0], ids.covers[0]]))
            try ctx.save()
        }
        #expect(try await storeCounts(container) == Counts(shelves: 1, books: 1, authors: 1, covers: 1))
        let check = container.newBackgroundContext()
        let (shelfBooks, authorBooks): ([String], [String]) = try await check.perform {
            let shelf = try #require(try check.existingObject(with: ids.shelf) as? Shelf)
            let author = try #require(try check.existingObject(with: ids.author) as? Author)
            return (shelf.books.map(\.title), author.books.map(\.title))
        }
        #expect(shelfBooks == ["Book 1"])
        #expect(authorBooks == ["Book 1"])
    }

    @Test func nullifyToOneSide() async throws {
        let container = try Fixtures.container()
        let ids = try await seedLibrary(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            // Deleting a cover nullifies Book.cover (Cover.book is nullify by default).
            let cover = try ctx.existingObject(with: ids.covers[1])
            let book = try #require(try ctx.existingObject(with: ids.books[1]) as? Book)
            ctx.delete(cover)
            ctx.processPendingChanges()
            #expect(book.cover == nil)
            #expect(!book.isDeleted)
            try ctx.save()
        }
        #expect(try await storeCounts(container) == Counts(shelves: 1, books: 2, authors: 1, covers: 1))
        let check = container.newBackgroundContext()
        let hasCover: Bool = try await check.perform {
            try #require(try check.existingObject(with: ids.books[1]) as? Book).cover != nil
        }
        #expect(!hasCover)
    }

    @Test func cascadeChainDeletesShelfBooksAndCovers() async throws {
        let container = try Fixtures.container()
        let ids = try await seedLibrary(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let shelf = try ctx.existingObject(with: ids.shelf)
            ctx.delete(shelf)
            ctx.processPendingChanges()
            let deleted = Set(ctx.deletedObjects.map(\.objectID))
            #expect(deleted == Set([ids.shelf] + ids.books + ids.covers))
            let author = try #require(try ctx.existingObject(with: ids.author) as? Author)
            #expect(!author.isDeleted)
            #expect(author.books.isEmpty)
            try ctx.save()
            #expect(!ctx.hasChanges)
        }
        #expect(try await storeCounts(container) == Counts(shelves: 0, books: 0, authors: 1, covers: 0))
        let check = container.newBackgroundContext()
        let authorBookCount: Int = try await check.perform {
            try #require(try check.existingObject(with: ids.author) as? Author).books.count
        }
        #expect(authorBookCount == 0)
    }

    @Test func cascadeFromAFaultReachesUnloadedObjects() async throws {
        let container = try Fixtures.container()
        let ids = try await seedLibrary(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            // Only the shelf is registered, as a fault; its books and covers are not loaded.
            let shelf = ctx.object(with: ids.shelf)
            #expect(shelf.isFault)
            #expect(ctx.registeredObjects.count == 1)
            ctx.delete(shelf)
            try ctx.save()
        }
        #expect(try await storeCounts(container) == Counts(shelves: 0, books: 0, authors: 1, covers: 0))
    }

    @Test func cascadeOfUnsavedInsertsLeavesNothingToSave() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let shelf = Shelf(context: ctx)
            let book = Book(context: ctx)
            book.shelf = shelf
            let cover = Cover(context: ctx)
            cover.book = book
            #expect(ctx.insertedObjects.count == 3)
            ctx.delete(shelf)
            ctx.processPendingChanges()
            #expect(ctx.insertedObjects.isEmpty)
            #expect(ctx.deletedObjects.isEmpty)
            #expect(!ctx.hasChanges)
            #expect(ctx.registeredObjects.isEmpty)
            try ctx.save()
        }
        #expect(try await storeCounts(container) == Counts())
    }

    @Test func denyFailsTheSaveAndWritesNothing() async throws {
        let container = try Fixtures.container()
        let ids = try await seedLibrary(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let author = try #require(try ctx.existingObject(with: ids.author) as? Author)
            // An unrelated change in the same save must not be written either.
            let shelf = try #require(try ctx.existingObject(with: ids.shelf) as? Shelf)
            shelf.name = "Renamed"
            let extra = Book(context: ctx)
            extra.title = "Extra"
            ctx.delete(author)
            let error = #expect(throws: CoreDataError.self) { try ctx.save() }
            #expect(error?.code == .validationRelationshipDeniedDelete)
            #expect(error?.objectID == ids.author)
            #expect(error?.key == "books")
            // The context keeps its changes.
            #expect(author.isDeleted)
            #expect(ctx.deletedObjects == [author])
            #expect(ctx.insertedObjects == [extra])
            #expect(ctx.updatedObjects == [shelf])
            #expect(shelf.name == "Renamed")
            #expect(extra.objectID.isTemporaryID)
        }
        #expect(try await storeCounts(container) == Counts(shelves: 1, books: 2, authors: 1, covers: 2))
        let check = container.newBackgroundContext()
        let (shelfName, authorBooks): (String, Int) = try await check.perform {
            let shelf = try #require(try check.existingObject(with: ids.shelf) as? Shelf)
            let author = try #require(try check.existingObject(with: ids.author) as? Author)
            return (shelf.name, author.books.count)
        }
        #expect(shelfName == "Shelf")
        #expect(authorBooks == 2)
    }

    @Test func denyAllowsDeletionOnceTheRelationshipIsEmpty() async throws {
        let container = try Fixtures.container()
        let ids = try await seedLibrary(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let author = try #require(try ctx.existingObject(with: ids.author) as? Author)
            ctx.delete(author)
            #expect(throws: CoreDataError.self) { try ctx.save() }
            author.books = []
            try ctx.save()
            #expect(!ctx.hasChanges)
        }
        #expect(try await storeCounts(container) == Counts(shelves: 1, books: 2, authors: 0, covers: 2))
        let check = container.newBackgroundContext()
        let authorCounts: [Int] = try await check.perform {
            try ids.books.map { try #require(try check.existingObject(with: $0) as? Book).authors.count }
        }
        #expect(authorCounts == [0, 0])
    }

    @Test func denyPassesWhenTheTargetsAreDeletedToo() async throws {
        let container = try Fixtures.container()
        let ids = try await seedLibrary(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            // The shelf cascades to both books, which nullify Author.books; then the author is empty.
            ctx.delete(try ctx.existingObject(with: ids.shelf))
            ctx.delete(try ctx.existingObject(with: ids.author))
            try ctx.save()
        }
        #expect(try await storeCounts(container) == Counts())
    }

    @Test func noActionLeavesTheInverseAlone() async throws {
        let container = try noActionContainer()
        let seed = container.newBackgroundContext()
        let (parentID, childID): (NSManagedObjectID, NSManagedObjectID) = try await seed.perform {
            let p = NSEntityDescription.insertNewObject(forEntityName: "DRNAParent", into: seed)
            p.setValue("P", forKey: "name")
            let c = NSEntityDescription.insertNewObject(forEntityName: "DRNAChild", into: seed)
            c.setValue("C", forKey: "name")
            c.setValue(p, forKey: "parent")
            #expect((p.value(forKey: "children") as? Set<NSManagedObject>) == [c])
            try seed.save()
            return (p.objectID, c.objectID)
        }
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let p = try ctx.existingObject(with: parentID)
            let c = try ctx.existingObject(with: childID)
            ctx.delete(p)
            ctx.processPendingChanges()
            // No action: the child still points at the deleted parent and is not changed.
            #expect((c.value(forKey: "parent") as? NSManagedObject) === p)
            #expect(!c.isUpdated)
            #expect(!c.isDeleted)
            #expect(ctx.deletedObjects == [p])
            #expect(ctx.updatedObjects.isEmpty)
            try ctx.save()
        }
        let check = container.newBackgroundContext()
        let (parents, children, danglingID): (Int, Int, NSManagedObjectID?) = try await check.perform {
            let c = try check.existingObject(with: childID)
            return (
                try check.count(for: NSFetchRequest<NSManagedObject>(entityName: "DRNAParent")),
                try check.count(for: NSFetchRequest<NSManagedObject>(entityName: "DRNAChild")),
                (c.value(forKey: "parent") as? NSManagedObject)?.objectID
            )
        }
        #expect(parents == 0)
        #expect(children == 1)
        // The store still holds the dangling reference, as Core Data's no-action rule does.
        #expect(danglingID == parentID)
    }

    /// Deleting an object that was never saved takes it out of the relationships of saved
    /// objects whatever the rule (deny and no action included), so the save does not drop the
    /// link silently and those objects do not keep unsaved changes forever.
    @Test func deletingANeverSavedObjectUnlinksItWhateverTheRule() throws {
        let context = try Fixtures.container().newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            book.title = "N"
            let author = Author(context: context)  // Author.books: deny
            author.name = "x"
            author.books = [book]
            context.delete(author)
            try context.save()
            #expect(book.authors.isEmpty)
            #expect(!book.hasPersistentChangedValues && !context.hasChanges)
        }
    }
}

@Suite("Cost of applying delete rules") struct DeleteRuleCostTests {
    /// After the first deletion changed the shelf, a later pass of the delete rules checks the
    /// shelf's row version first instead of re-reading and decoding the whole row, so deleting
    /// books one pass at a time is not quadratic.
    @Test func deletingOnePassAtATimeDoesNotReReadTheSharedTarget() throws {
        let model = try Fixtures.model()
        let store = RowReadCountingStore(model: model)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(store)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "long"
            for i in 0..<200 {
                let b = Book(context: context)
                b.title = "b\(i)"
                b.shelf = shelf
            }
            try context.save()
            let books = Array(shelf.books)
            let before = store.rowReads.load(ordering: .relaxed)
            for b in books {
                context.delete(b)
                context.processPendingChanges()  // one pass of the delete rules per deletion
            }
            let reads = store.rowReads.load(ordering: .relaxed) - before
            #expect(reads < 10, "\(reads) row reads for 200 deletions")
            #expect(shelf.books.isEmpty)
            try context.save()
        }
    }
}
