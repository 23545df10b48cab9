import Foundation
import Testing
@testable import PersistenceKit
import TestSupport

/// Attributes only: an object made outside a context holds no values until written or
/// inserted (`ValueStorage.defaults`).
final class OTDetached: NSManagedObject {
    @Attribute var name: String = "untitled"
    @Attribute var count: Int64 = 7
    @Attribute var note: String?
}

/// Records every lifecycle hook call, in order.
final class OTHooked: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var stamp: String = ""
    var calls: [String] = []

    override func awakeFromInsert() {
        super.awakeFromInsert()
        calls.append("awakeFromInsert")
        stamp = "inserted"  // initial values set here are part of the insert
    }
    override func awakeFromFetch() {
        super.awakeFromFetch()
        calls.append("awakeFromFetch")
    }
    override func willSave() {
        super.willSave()
        calls.append("willSave")
    }
    override func didSave() {
        super.didSave()
        calls.append("didSave")
    }
    override func prepareForDeletion() {
        super.prepareForDeletion()
        calls.append("prepareForDeletion")
    }
}

/// A folder whose files go with it; both record their `prepareForDeletion()` calls.
final class OTFolder: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "folder", deleteRule: .cascadeDeleteRule) var files: Set<OTFile>
    var prepared: [String] = []
    override func prepareForDeletion() {
        super.prepareForDeletion()
        // Relationships still hold their values here: delete rules have not run.
        prepared.append("folder with \(files.count) files")
    }
}

final class OTFile: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "files") var folder: OTFolder?
    var prepared: [String] = []
    override func prepareForDeletion() {
        super.prepareForDeletion()
        prepared.append("file in \(folder?.name ?? "nothing")")
    }
}

/// An object's state flags, faulting and life-cycle hooks from insert to saved deletion.
@Suite("Object state and life-cycle hooks") struct ObjectLifecycleTests {
    /// Saves one book and returns its ID.
    static func savedBook(_ container: NSPersistentContainer, title: String) throws -> NSManagedObjectID {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let book = Book(context: context)
            book.title = title
            try context.save()
            return book.objectID
        }
    }

    @Test func faultingStateIsZeroOnlyOnceValuesAreLoaded() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        let states = context.performAndWait { () -> [Int] in
            let book = context.object(with: seeded.a)
            let before = book.faultingState
            let stillFault = book.isFault  // reading the state does not fire the fault
            _ = book.value(forKey: "title")
            return [before, stillFault ? 1 : 0, book.faultingState]
        }
        #expect(states == [1, 1, 0])
    }

    // MARK: State flags

    @Test func stateFlagsThroughInsertSaveUpdateDelete() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            #expect(book.isInserted)
            #expect(!book.isUpdated)
            #expect(!book.isDeleted)
            #expect(!book.isFault)
            #expect(book.hasChanges)
            #expect(book.managedObjectContext === context)
            book.title = "One"
            #expect(book.isInserted)
            #expect(!book.isUpdated, "changing an inserted object does not make it updated")

            try context.save()
            #expect(!book.isInserted)
            #expect(!book.isUpdated)
            #expect(!book.hasChanges)
            #expect(!book.hasPersistentChangedValues)
            #expect(!book.isFault)

            book.title = "Two"
            #expect(book.isUpdated)
            #expect(book.hasChanges)
            #expect(book.hasPersistentChangedValues)
            book.title = "One"
            #expect(!book.hasPersistentChangedValues, "value is back to the committed one")

            try context.save()
            #expect(!book.hasChanges)

            context.delete(book)
            #expect(book.isDeleted)
            #expect(book.hasChanges)
            #expect(!book.isUpdated)
            #expect(context.deletedObjects == [book])
            try context.save()
            #expect(book.managedObjectContext == nil)
            #expect(!context.hasChanges)
        }
    }

    @Test func fetchedObjectsAreFaultsUntilRead() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            let b = Book(context: writer)
            b.title = "Faulty"
            try writer.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let books = try reader.fetch(Book.fetchRequest())
            let book = try #require(books.first)
            #expect(book.isFault)
            #expect(!book.hasChanges)
            #expect(book.title == "Faulty")
            #expect(!book.isFault)
            #expect(!book.isInserted)
            #expect(!book.isUpdated)
        }
    }

    // MARK: Lifecycle hooks

    @Test func lifecycleHooksAreCalledInOrder() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        let id: NSManagedObjectID = try context.performAndWait {
            let o = OTHooked(context: context)
            #expect(o.calls == ["awakeFromInsert"])
            #expect(o.stamp == "inserted")
            #expect(o.isInserted)
            #expect(!o.isUpdated)
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "willSave", "didSave"])
            #expect(o.stamp == "inserted")

            o.name = "changed"
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "willSave", "didSave", "willSave", "didSave"])

            // No changes: no hooks.
            try context.save()
            #expect(o.calls.count == 5)
            return o.objectID
        }

        let other = container.newBackgroundContext()
        try other.performAndWait {
            let fetched = try #require(try other.fetch(OTHooked.fetchRequest()).first)
            #expect(fetched.objectID == id)
            #expect(fetched.calls.isEmpty, "a fetched object is not inserted, and a fault is not awake yet")
            #expect(fetched.name == "changed")
            #expect(fetched.calls == ["awakeFromFetch"])
            #expect(fetched.stamp == "inserted")
            _ = fetched.name
            #expect(fetched.calls == ["awakeFromFetch"], "awakeFromFetch runs once per fault firing")

            other.delete(fetched)
            #expect(fetched.calls == ["awakeFromFetch", "prepareForDeletion"], "inside delete(_:), as Core Data")
            other.processPendingChanges()
            #expect(fetched.calls == ["awakeFromFetch", "prepareForDeletion"])
            try other.save()
            #expect(fetched.calls == ["awakeFromFetch", "prepareForDeletion", "willSave", "didSave"])
        }
    }

    /// `prepareForDeletion()` runs inside `delete(_:)`, with the relationships intact; a
    /// cascade's objects get it when the cascade reaches them (processing pending changes);
    /// delete rules that run again after a merge do not call it a second time.
    @Test func prepareForDeletionRunsInsideDeleteAndOnceForCascades() throws {
        let container = try OTSupport.container([OTFolder.self, OTFile.self])
        let context = container.newBackgroundContext()
        let folderID = try context.performAndWait {
            let folder = OTFolder(context: context)
            folder.name = "Docs"
            for n in ["a", "b"] {
                let file = OTFile(context: context)
                file.name = n
                file.folder = folder
            }
            try context.save()
            return folder.objectID
        }
        let other = container.newBackgroundContext()
        let saved = TestMutex<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: context, queue: nil) { n in
            saved.withLock { $0 = n }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try other.performAndWait {
            let folder = try #require(try other.existingObject(with: folderID) as? OTFolder)
            let files = folder.files
            other.delete(folder)
            #expect(folder.prepared == ["folder with 2 files"])
            #expect(files.allSatisfy { $0.prepared.isEmpty }, "the cascade has not run yet")
            other.processPendingChanges()
            #expect(files.allSatisfy { $0.prepared == ["file in Docs"] })
            // A third file added elsewhere and merged: the folder's delete rules run again
            // and reach it, without a second call on the folder.
            try context.performAndWait {
                let added = OTFile(context: context)
                added.name = "c"
                added.folder = try #require(try context.existingObject(with: folderID) as? OTFolder)
                try context.save()
            }
            other.mergeChanges(fromContextDidSave: try #require(saved.withLock { $0 }))
            try other.save()
            #expect(folder.prepared == ["folder with 2 files"])
            #expect(files.allSatisfy { $0.prepared.count == 1 })
        }
        let check = container.newBackgroundContext()
        try check.performAndWait { () throws -> Void in
            #expect(try check.count(for: OTFile.fetchRequest()) == 0, "the merged third file went with its folder")
            #expect(try check.count(for: OTFolder.fetchRequest()) == 0)
        }
    }

    @Test func willSaveChangesAreSaved() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        let id: NSManagedObjectID = try context.performAndWait {
            let o = OTHooked(context: context)
            o.name = "n"
            try context.save()
            #expect(!context.hasChanges)
            return o.objectID
        }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            let o = try #require(try other.existingObject(with: id) as? OTHooked)
            #expect(o.stamp == "inserted")
            #expect(o.name == "n")
        }
    }

    @Test func insertedThenDeletedObjectGetsPrepareForDeletionButNoSaveHooks() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = OTHooked(context: context)
            context.delete(o)
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "prepareForDeletion"])
            #expect(!context.hasChanges)
            #expect(try context.count(for: OTHooked.fetchRequest()) == 0)
        }
    }

    @Test func aDetachedObjectReadsItsDefaultsAndSavesWhatWasWrittenBeforeItsInsert() throws {
        let container = try OTSupport.container([OTDetached.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let entity = try #require(NSEntityDescription.entity(forEntityName: "OTDetached", in: context))
            let written = OTDetached(entity: entity, insertInto: nil)
            let untouched = OTDetached(entity: entity, insertInto: nil)
            #expect(written.name == "untitled" && written.count == 7 && written.note == nil)
            #expect(written.value(forKey: "count") as? Int64 == 7)
            written.count = 9
            written.note = "kept"
            // The write copied the defaults: other objects of the entity still read them.
            #expect(written.name == "untitled" && written.count == 9)
            #expect(untouched.count == 7 && untouched.note == nil)
            #expect(OTDetached(entity: entity, insertInto: nil).count == 7)
            try written.validateForInsert()
            try untouched.validateForInsert()
            let emptied = OTDetached(entity: entity, insertInto: nil)
            emptied.setValue(nil, forKey: "name")
            #expect(throws: CoreDataError.self) { try emptied.validateForInsert() }

            context.insert(written)
            context.insert(untouched)
            #expect(untouched.count == 7)
            try context.save()
            context.reset()
            let request = OTDetached.fetchRequest()
            request.sortDescriptors = [NSSortDescriptor(keyPath: \OTDetached.count, ascending: true)]
            let saved = try context.fetch(request)
            #expect(saved.map(\.count) == [7, 9])
            #expect(saved.map(\.name) == ["untitled", "untitled"])
            #expect(saved.map(\.note) == [nil, "kept"])
        }
    }

    @Test func awakeFromInsertRunsWhenTheObjectIsInsertedLater() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let entity = try #require(NSEntityDescription.entity(forEntityName: "OTHooked", in: context))
            let o = OTHooked(entity: entity, insertInto: nil)
            #expect(o.calls.isEmpty)
            #expect(o.managedObjectContext == nil)
            #expect(o.objectID.isTemporaryID)
            context.insert(o)
            #expect(o.calls == ["awakeFromInsert"])
            #expect(o.isInserted)
            #expect(context.insertedObjects == [o])
            context.insert(o)  // inserting again does nothing
            #expect(o.calls == ["awakeFromInsert"])
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "willSave", "didSave"])
        }
    }

    @Test func aDeletedObjectIsReadableUntilTheDeletionIsSaved() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            let book = Book(context: context)
            book.title = "Doomed"
            book.shelf = shelf
            try context.save()
            context.delete(book)
            context.processPendingChanges()
            #expect(book.isDeleted)
            #expect(book.title == "Doomed")
            #expect(book.managedObjectContext === context)
            #expect(!shelf.books.contains(book), "nullify removed the book from the shelf")
            // Undo the deletion by inserting the object again.
            context.insert(book)
            #expect(!book.isDeleted)
            #expect(context.deletedObjects.isEmpty)
        }
    }

    @Test func undeletingAnObjectKeepsItsEarlierEdits() throws {
        let container = try Fixtures.container()
        let id = try Self.savedBook(container, title: "old")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = try #require(try context.existingObject(with: id) as? Book)
            book.title = "new"
            context.delete(book)
            context.insert(book)
            #expect(book.isUpdated)
            try context.save()
        }
        let check = container.newBackgroundContext()
        let title = try check.performAndWait { (try check.existingObject(with: id) as? Book)?.title }
        #expect(title == "new")
    }

    @Test func anInsertedThenDeletedObjectStaysReadable() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            book.title = "draft"
            context.delete(book)
            context.processPendingChanges()
            #expect(book.managedObjectContext == nil)
            #expect(book.title == "draft")
            #expect(context.insertedObjects.isEmpty && context.deletedObjects.isEmpty)
        }
    }
}
