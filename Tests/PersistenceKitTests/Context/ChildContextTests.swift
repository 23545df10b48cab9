import Foundation
import Testing
@testable import PersistenceKit

/// A container over an in-memory store, or over a file store in `folder`.
private func container(fileStore: Bool, in folder: borrowing TemporaryFolder, name: String = #function) throws -> NSPersistentContainer {
    fileStore ? try FSSupport.container(at: folder.storeURL, name: name) : try Fixtures.container(name: name)
}

/// A private-queue child of `parent`.
private func child(of parent: NSManagedObjectContext) -> NSManagedObjectContext {
    let c = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    c.parent = parent
    return c
}

/// The titles of the books the store holds, sorted.
private func storedTitles(_ container: NSPersistentContainer) throws -> [String] {
    let reader = container.newBackgroundContext()
    return try reader.performAndWait { try reader.fetch(Book.fetchRequest()).map(\.title).sorted() }
}

@Suite("Child contexts") struct ChildContextTests {
    @Test(arguments: [false, true]) func saveGoesToTheParentThenTheStore(fileStore: Bool) throws {
        let folder = try TemporaryFolder()
        let container = try container(fileStore: fileStore, in: folder)
        let parent = container.newBackgroundContext()
        let child = child(of: parent)
        #expect(child.parent === parent && child.parentContext === parent)
        #expect(child.persistentStoreCoordinator === container.persistentStoreCoordinator)
        let id = try child.performAndWait {
            let book = Book(context: child)
            book.title = "Dune"
            book.pages = 412
            try child.save()
            #expect(!child.hasChanges)
            return book.objectID
        }
        try parent.performAndWait {
            #expect(parent.insertedObjects.count == 1)
            let book = try #require(parent.insertedObjects.first as? Book)
            #expect(book.objectID.isTemporaryID, "temporary in the parent until the root saves")
            #expect(book.title == "Dune" && book.pages == 412)
            _ = id
        }
        #expect(try storedTitles(container) == [], "a child's save does not reach the store")
        let permanent = try parent.performAndWait {
            try parent.save()
            return try #require(parent.registeredObjects.first as? Book).objectID
        }
        #expect(!permanent.isTemporaryID)
        #expect(try storedTitles(container) == ["Dune"])
    }

    @Test func discardingAChildLeavesTheParentUntouched() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        do {
            let child = child(of: parent)
            child.performAndWait {
                Book(context: child).title = "Never saved"
            }
        }
        parent.performAndWait { #expect(!parent.hasChanges && parent.insertedObjects.isEmpty) }
    }

    @Test(arguments: [false, true]) func aChildSeesTheParentsUnsavedInsertAndChange(fileStore: Bool) throws {
        let folder = try TemporaryFolder()
        let container = try container(fileStore: fileStore, in: folder)
        let parent = container.newBackgroundContext()
        let savedID = try parent.performAndWait {
            let saved = Book(context: parent)
            saved.title = "Saved"
            try parent.save()
            saved.title = "Changed in parent"
            Book(context: parent).title = "Inserted in parent"
            return saved.objectID
        }
        let child = child(of: parent)
        try child.performAndWait {
            let r = Book.fetchRequest()
            r.sortKeys = [SortKey("title")]
            let titles = try child.fetch(r).map(\.title)
            #expect(titles == ["Changed in parent", "Inserted in parent"])
            #expect((child.object(with: savedID) as? Book)?.title == "Changed in parent")
            let count = try child.count(for: Book.fetchRequest())
            #expect(count == 2)
        }
    }

    @Test func rollbackRefreshAndDeleteInAChildDoNotTouchTheParent() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let id = try parent.performAndWait {
            let book = Book(context: parent)
            book.title = "Original"
            try parent.save()
            return book.objectID
        }
        let child = child(of: parent)
        child.performAndWait {
            let book = child.object(with: id) as! Book
            book.title = "Edited"
            child.rollback()
            #expect(book.title == "Original")
            book.title = "Edited again"
            child.refresh(book, mergeChanges: false)
            #expect(book.title == "Original")
            child.delete(book)
            child.processPendingChanges()
        }
        parent.performAndWait {
            let book = parent.object(with: id) as! Book
            #expect(book.title == "Original" && !book.isDeleted && !parent.hasChanges)
        }
        try child.performAndWait { try child.save() }
        parent.performAndWait {
            #expect(parent.deletedObjects.map(\.objectID) == [id], "the child's delete arrives when it saves")
        }
    }

    @Test(arguments: [
        (NSMergePolicy.mergeByPropertyObjectTrump, "child title", Int64(300)),
        (NSMergePolicy.mergeByPropertyStoreTrump, "parent title", Int64(300)),
        (NSMergePolicy.overwrite, "child title", Int64(100)),
        (NSMergePolicy.rollback, "parent title", Int64(300)),
    ])
    func aChildsSaveMeetsTheParentsNewerChange(policy: NSMergePolicy, title: String, pages: Int64) throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let id = try parent.performAndWait {
            let book = Book(context: parent)
            book.title = "first"
            book.pages = 100
            try parent.save()
            return book.objectID
        }
        let child = child(of: parent)
        child.mergePolicy = policy
        child.performAndWait { (child.object(with: id) as! Book).title = "child title" }
        parent.performAndWait {
            let book = parent.object(with: id) as! Book
            book.title = "parent title"
            book.pages = 300
        }
        try child.performAndWait {
            try child.save()
            let book = child.object(with: id) as! Book
            #expect(book.title == title && book.pages == pages)
        }
        parent.performAndWait {
            let book = parent.object(with: id) as! Book
            #expect(book.title == title && book.pages == pages)
        }
    }

    @Test func underTheErrorPolicyAChildsSaveFailsAndChangesNothing() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let id = try parent.performAndWait {
            let book = Book(context: parent)
            book.title = "first"
            try parent.save()
            return book.objectID
        }
        let child = child(of: parent)
        child.performAndWait { (child.object(with: id) as! Book).title = "child title" }
        parent.performAndWait { (parent.object(with: id) as! Book).title = "parent title" }
        child.performAndWait {
            #expect(throws: CoreDataError.self) { try child.save() }
            #expect(child.hasChanges)
        }
        parent.performAndWait { #expect((parent.object(with: id) as! Book).title == "parent title") }
    }

    @Test func obtainPermanentIDsWorksThroughTheChain() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let child = child(of: parent)
        let id = try child.performAndWait {
            let book = Book(context: child)
            book.title = "Keyed"
            try child.obtainPermanentIDs(for: [book])
            #expect(!book.objectID.isTemporaryID)
            try child.save()
            #expect(book.objectID.persistentStoreIdentifier == container.persistentStoreCoordinator.persistentStores[0].identifier)
            return book.objectID
        }
        try parent.performAndWait {
            let book = try #require(parent.registeredObject(for: id) as? Book)
            #expect(book.isInserted && book.title == "Keyed" && !book.objectID.isTemporaryID)
            try parent.save()
            #expect(book.objectID == id)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let book = try reader.existingObject(with: id) as? Book
            #expect(book?.title == "Keyed")
        }
    }

    @Test func relationshipsArriveWithBothEnds() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        let child = child(of: parent)
        try child.performAndWait {
            let shelf = Shelf(context: child)
            shelf.name = "Fiction"
            for t in ["A", "B"] {
                let b = Book(context: child)
                b.title = t
                b.shelf = shelf
            }
            try child.save()
        }
        try parent.performAndWait {
            let shelf = try #require(parent.insertedObjects.compactMap { $0 as? Shelf }.first)
            #expect(shelf.books.map(\.title).sorted() == ["A", "B"])
            try parent.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let shelf = try #require(try reader.fetch(Shelf.fetchRequest()).first)
            #expect(shelf.books.map(\.title).sorted() == ["A", "B"])
        }
    }

    @Test func aChildSavesChangesToObjectsThatItsParentInserted() throws {
        let container = try Fixtures.container()
        let parent = container.newBackgroundContext()
        parent.performAndWait { Book(context: parent).title = "draft" }
        let child = child(of: parent)
        try child.performAndWait {
            let book = try #require(try child.fetch(Book.fetchRequest()).first)
            book.title = "final"
            try child.save()
        }
        try parent.performAndWait {
            let book = try #require(parent.insertedObjects.first as? Book)
            #expect(book.title == "final")
            try parent.save()
        }
        #expect(try storedTitles(container) == ["final"])
    }

    @Test func aGrandchildSavesThroughTwoLevels() throws {
        let container = try Fixtures.container()
        let root = container.newBackgroundContext()
        let middle = child(of: root)
        let leaf = child(of: middle)
        try leaf.performAndWait {
            Book(context: leaf).title = "deep"
            try leaf.save()
        }
        try middle.performAndWait { try middle.save() }
        root.performAndWait { #expect((root.insertedObjects.first as? Book)?.title == "deep") }
        try root.performAndWait { try root.save() }
        #expect(try storedTitles(container) == ["deep"])
    }
}
