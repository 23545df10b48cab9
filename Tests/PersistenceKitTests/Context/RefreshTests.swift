import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

/// Records, for each objects-did-change / did-merge of one context, the IDs under each key.
private final class KeyLog: Sendable {
    private let notes = TestMutex<[(name: Notification.Name, ids: [String: Set<NSManagedObjectID>])]>([])
    private let tokens = TestMutex<[any NSObjectProtocol]>([])
    init(_ context: NSManagedObjectContext, _ names: [Notification.Name] = [.NSManagedObjectContextObjectsDidChange]) {
        let t = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { [notes] note in
                var ids: [String: Set<NSManagedObjectID>] = [:]
                for (k, v) in note.userInfo ?? [:] {
                    guard let k = k as? String else { continue }
                    if let s = v as? Set<NSManagedObject> { ids[k] = Set(s.map(\.objectID)) }
                    if let s = v as? Set<NSManagedObjectID> { ids[k] = s }
                }
                notes.withLock { $0.append((name, ids)) }
            }
        }
        tokens.withLock { $0 = t }
    }
    var all: [[String: Set<NSManagedObjectID>]] { notes.withLock { $0.map(\.ids) } }
    func named(_ n: Notification.Name) -> [[String: Set<NSManagedObjectID>]] { notes.withLock { $0.filter { $0.name == n }.map(\.ids) } }
    deinit { for t in tokens.withLock({ $0 }) { NotificationCenter.default.removeObserver(t) } }
}

/// A note with a transient attribute, for the refresh tests.
final class TransientNote: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.transient) var scratch: String = "unset"
}

private enum TransientNotes {
    static func noteContainer(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try NSManagedObjectModel(managedObjectClasses: [TransientNote.self]))
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }
}

final class TransientFolder: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute(.transient) var scratch: String = "unset"
    @Relationship(inverse: "folder", deleteRule: .cascadeDeleteRule) var notes: Set<TransientItem>
}

final class TransientItem: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.transient) var scratch: String = "unset"
    @Relationship(inverse: "notes", deleteRule: .nullifyDeleteRule) var folder: TransientFolder?
}

/// Changes book `id` in a separate context and saves.
private func externalEdit(_ container: NSPersistentContainer, _ id: NSManagedObjectID, title: String? = nil, pages: Int64? = nil)
    async throws
{
    let ctx = container.newBackgroundContext()
    try await ctx.perform {
        let book = try #require(try ctx.existingObject(with: id) as? Book)
        if let title { book.title = title }
        if let pages { book.pages = pages }
        try ctx.save()
    }
}

/// `refresh(_:mergeChanges:)` and `refreshAllObjects()`: discarding or keeping pending
/// changes over the saved values, transient values, pending deletions and their announcements.
@Suite("Refresh and merge of pending changes") struct RefreshTests {
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

    // MARK: transient values and relationships

    static func transientContainer(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(
            name: name, managedObjectModel: try NSManagedObjectModel(managedObjectClasses: [TransientFolder.self, TransientItem.self]))
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// Refresh, then delete before processing: announced as deleted only.
    @Test func refreshedThenDeletedIsNotAlsoUpdated() throws {
        let context = try Fixtures.container().newBackgroundContext()
        let id = try context.performAndWait {
            let b = Book(context: context)
            try context.save()
            return b.objectID
        }
        let log = KeyLog(context)
        try context.performAndWait { () throws in
            let b = try #require(context.registeredObject(for: id))
            context.refresh(b, mergeChanges: true)
            context.delete(b)
            context.processPendingChanges()
        }
        try #require(log.all.count == 1)
        #expect(log.all[0][NSDeletedObjectsKey] == [id])
        #expect(log.all[0][NSUpdatedObjectsKey] == nil, "deleted object also listed as updated")
    }

    /// Same through a cascade, and through refreshAllObjects() with an unannounced deletion.
    @Test func cascadeAndRefreshAllWithPendingDeletion() throws {
        let context = try Fixtures.container().newBackgroundContext()
        let (shelfID, bookID) = try context.performAndWait {
            let s = Shelf(context: context)
            let b = Book(context: context)
            b.shelf = s
            try context.save()
            return (s.objectID, b.objectID)
        }
        let log = KeyLog(context)
        try context.performAndWait { () throws in
            context.refresh(try #require(context.registeredObject(for: bookID)), mergeChanges: false)
            context.delete(try #require(context.registeredObject(for: shelfID)))
            context.processPendingChanges()  // cascade deletes the book
        }
        try #require(log.all.count == 1)
        #expect(log.all[0][NSDeletedObjectsKey] == [shelfID, bookID])
        #expect(log.all[0][NSUpdatedObjectsKey] == nil, "cascade-deleted book also listed as updated")

        let context2 = try Fixtures.container().newBackgroundContext()
        let id2 = try context2.performAndWait {
            let b = Book(context: context2)
            try context2.save()
            return b.objectID
        }
        let log2 = KeyLog(context2)
        try context2.performAndWait { () throws in
            context2.delete(try #require(context2.registeredObject(for: id2)))
            context2.refreshAllObjects()
        }
        try #require(log2.all.count == 1)
        #expect(log2.all[0][NSDeletedObjectsKey] == [id2])
        #expect(log2.all[0][NSUpdatedObjectsKey] == nil, "refreshAllObjects: deleted object also listed as updated")
    }

    /// Main-actor code with the view context, outside `perform`: the main queue processes
    /// pending changes on its next turn, as Core Data's does at the end of a run-loop turn.
    @MainActor @Test func viewContextRefreshOnMainActorIsAnnounced() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let b = Book(context: view)
        try view.save()
        let log = KeyLog(view)
        view.refresh(b, mergeChanges: false)
        // The processing was enqueued on the main queue by the refresh; a block enqueued after
        // it runs after it.
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in DispatchQueue.main.async { c.resume() } }
        #expect(log.all.count == 1, "refresh on the view context from main-actor code never announced")
    }

    /// A pending refresh of an object a merge then deletes keeps the invalidated object alive.
    @Test func pendingRefreshDoesNotKeepMergedDeletionAlive() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let b = Book(context: context)
            try context.save()
            return b.objectID
        }
        weak var weakBook: NSManagedObject?
        try context.performAndWait { () throws in
            let b = try #require(context.registeredObject(for: id))
            weakBook = b
            context.refresh(b, mergeChanges: false)
            context.mergeChanges(fromContextDidSave: Notification(name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSDeletedObjectIDsKey: Set([id])]))
        }
        #expect(weakBook == nil, "invalidated object still held by unprocessed.refreshed")
    }

    /// A pending refresh, then a merge updating the same object: announced once as refreshed.
    @Test func mergeOverPendingRefreshAnnouncesOnce() throws {
        let container = try Fixtures.container()
        let reader = container.newBackgroundContext()
        let writer = container.newBackgroundContext()
        let id = try writer.performAndWait {
            let b = Book(context: writer)
            try writer.save()
            return b.objectID
        }
        try reader.performAndWait { () throws in _ = try #require(try reader.existingObject(with: id) as? Book).title }
        let log = KeyLog(reader)
        try writer.performAndWait { () throws in
            try #require(try writer.existingObject(with: id) as? Book).title = "x"
            try writer.save()
        }
        try reader.performAndWait { () throws in
            let b = try #require(reader.registeredObject(for: id) as? Book)
            reader.refresh(b, mergeChanges: true)
            _ = b.title  // loaded again
            reader.mergeChanges(fromContextDidSave: Notification(name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSUpdatedObjectIDsKey: Set([id])]))
            reader.processPendingChanges()
        }
        #expect(log.all.filter { $0[NSRefreshedObjectsKey] == [id] }.count == 1, "\(log.all)")
    }

    /// A refresh-only processing keeps the announced-insertions set the next save reuses.
    @Test func aRefreshOnlyProcessingKeepsTheAnnouncedInsertions() throws {
        let context = try Fixtures.container().newBackgroundContext()
        try context.performAndWait { () throws in
            let saved = Book(context: context)
            try context.save()
            for _ in 0..<3 { _ = Book(context: context) }
            context.processPendingChanges()
            #expect(context.announcedInsertions != nil)
            context.refresh(saved, mergeChanges: false)
            context.processPendingChanges()
            #expect(context.announcedInsertions != nil, "cache dropped by a refresh-only processing")
        }
    }

    // MARK: refresh(_:mergeChanges: true) and transient properties

    /// Apple, refresh(_:mergeChanges:): "If flag is YES, this method does not affect any
    /// transient properties; if flag is NO, transient properties are disposed of."
    /// An object without unsaved changes loses its transient value here.
    @Test func refreshWithMergingKeepsTransientValuesOfAnUnchangedObject() throws {
        let container = try TransientNotes.noteContainer()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let note = TransientNote(context: context)
            note.title = "T"
            note.scratch = "kept"
            try context.save()
            #expect(!note.hasChanges)
            #expect(note.scratch == "kept")
            context.refresh(note, mergeChanges: true)
            #expect(note.title == "T")
            #expect(note.scratch == "kept", "refresh(_:mergeChanges: true) must not affect transient properties")
        }
    }

    /// refreshAllObjects() is refresh(_:mergeChanges: true) on every registered object
    /// (WWDC 2015 / header: "preserving the unsaved changes"): transient values stay.
    @Test func refreshAllObjectsKeepsTransientValues() throws {
        let container = try TransientNotes.noteContainer()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let note = TransientNote(context: context)
            note.scratch = "kept"
            try context.save()
            context.refreshAllObjects()
            #expect(note.scratch == "kept", "refreshAllObjects() must not affect transient properties")
        }
    }

    // MARK: refreshing a deleted object after a conflict

    /// B deletes a book that A changed meanwhile; the save fails with a merge conflict. The
    /// documented recovery (refresh(_:mergeChanges:): "You typically use this method ... in
    /// particular if you get an optimistic locking failure when attempting to save") is to
    /// refresh with merging and save again: the refresh reloads the values from the store
    /// and re-applies the local changes — the deletion — so the next save deletes the
    /// current row. A refresh of a deleted object that did nothing would make every later save
    /// conflict again.
    @Test(arguments: ["refresh", "refreshAll"])
    func refreshingADeletedObjectWithMergingLetsTheDeletionBeSaved(mode: String) async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait { _ = try #require(try b.existingObject(with: seeded.a) as? Book).title }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "A2"
            try a.save()
        }
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a) as? Book)
            b.delete(book)
            let error = try #require(throws: CoreDataError.self) { try b.save() }
            #expect(error.code == .managedObjectMerge)
            if mode == "refresh" { b.refresh(book, mergeChanges: true) } else { b.refreshAllObjects() }
            #expect(book.isDeleted)
            do { try b.save() } catch { Issue.record("the save after refreshing still failed: \(error)") }
        }
        let check = container.newBackgroundContext()
        let titles = try check.performAndWait { try check.fetch(Book.fetchRequest()).map(\.title).sorted() }
        #expect(titles == ["B"])
    }

    // MARK: stale faults

    /// B fetches the books (returned as faults) and touches none. A, on the same
    /// coordinator, changes a book and saves. B then fires the fault: in Core Data a fault
    /// is fulfilled from the coordinator's row cache, which A's save updated, so B reads
    /// A's title — and B's later save of that book does not conflict.
    @Test func aFaultFiredAfterAnotherContextsSaveShowsTheSavedValues() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let books = try b.fetch(Book.fetchRequest())
            #expect(books.count == 2)
            #expect(books.allSatisfy { $0.isFault })
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "A2"
            try a.save()
        }
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a) as? Book)
            #expect(book.isFault)
            #expect(book.title == "A2", "the fault was fulfilled with the values read before the other save")
            book.pages = 999
            do { try b.save() } catch { Issue.record("the save conflicted: \(error)") }
        }
    }

    @Test func refreshWithoutMergingDiscardsAPendingDeletion() throws {
        let container = try Fixtures.container()
        let id = try Self.savedBook(container, title: "kept")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = context.object(with: id)
            context.delete(book)
            context.processPendingChanges()
            context.refresh(book, mergeChanges: false)
            #expect(!book.isDeleted)
            #expect(context.deletedObjects.isEmpty)
            try context.save()
            #expect(try context.count(for: Book.fetchRequest()) == 1)
        }
    }

    // MARK: refresh without merging keeps both ends of links others still make

    /// A shelf refreshed without merging after a new book was put on it: the book still
    /// points at the shelf, so the save stores the link on both ends.
    @Test func refreshingAShelfKeepsTheLinkANewBookStillMakes() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let shelfID = try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "S"
            try context.save()
            let book = Book(context: context)
            book.title = "N"
            book.shelf = shelf
            context.refresh(shelf, mergeChanges: false)
            try context.save()
            return shelf.objectID
        }
        let check = container.newBackgroundContext()
        try check.performAndWait {
            let shelf = try #require(try check.existingObject(with: shelfID) as? Shelf)
            let pointing = try check.fetch(Book.fetchRequest()).filter { $0.shelf === shelf }
            #expect(shelf.books == Set(pointing))
            #expect(pointing.count == 1)
        }
    }

    /// The other way round: a book taken off a shelf (moved to another) while the shelf is
    /// refreshed without merging stays off it.
    @Test func refreshingAShelfKeepsABookMovedAwayOff() throws {
        let container = try Fixtures.container()
        let (bookID, shelves) = try Self.seedShelves(container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = try #require(try context.existingObject(with: bookID) as? Book)
            let first = try #require(try context.existingObject(with: shelves[0]) as? Shelf)
            _ = first.books
            book.shelf = try #require(try context.existingObject(with: shelves[1]) as? Shelf)
            context.refresh(first, mergeChanges: false)
            #expect(!first.books.contains(book))
            try context.save()
        }
        try Self.expectConsistent(container, book: bookID, shelves: shelves)
    }

    // MARK: refreshing a deleted object

    /// B deletes shelf S (books cascade); A puts a new book on S and saves; B's save
    /// conflicts; B refreshes S with merging and saves again. The deletion is re-applied on
    /// the current row, which lists the new book, and S's delete rules run again, as the
    /// merge path reruns them: the new book goes with the cascade (it survived, shelfless).
    @Test(arguments: ["refresh", "refreshAll"])
    func aRefreshedDeletionCascadesToTargetsAddedMeanwhile(mode: String) async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            _ = shelf.books.count
            b.delete(shelf)
            b.processPendingChanges()
        }
        try a.performAndWait {
            let shelf = try #require(try a.existingObject(with: seeded.shelf) as? Shelf)
            let c = Book(context: a)
            c.title = "C"
            c.shelf = shelf
            try a.save()
        }
        try b.performAndWait {
            #expect(throws: CoreDataError.self) { try b.save() }
            let shelf = try #require(b.registeredObject(for: seeded.shelf))
            if mode == "refresh" { b.refresh(shelf, mergeChanges: true) } else { b.refreshAllObjects() }
            try b.save()
        }
        let check = container.newBackgroundContext()
        let rows: [String] = try check.performAndWait {
            try check.fetch(Book.fetchRequest()).map { "\($0.title) shelf=\($0.shelf?.objectID.uriRepresentation().lastPathComponent ?? "nil")" }
        }
        #expect(rows == [], "the deleted shelf's cascade did not reach the book added meanwhile")
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// Nullify variant: B deletes book A (nullify to its shelf); C (another context) adds
    /// author X to A; B's save conflicts, refresh, save.
    @Test func aRefreshedDeletionWithManyToManyAddedMeanwhile() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let book = try #require(try b.existingObject(with: seeded.a) as? Book)
            _ = book.authors.count
            b.delete(book)
            b.processPendingChanges()
        }
        let xID: NSManagedObjectID = try a.performAndWait {
            let book = try #require(try a.existingObject(with: seeded.a) as? Book)
            let x = Author(context: a)
            x.name = "X"
            x.$books.insert(book)
            try a.save()
            return x.objectID
        }
        try b.performAndWait {
            #expect(throws: CoreDataError.self) { try b.save() }
            b.refresh(try #require(b.registeredObject(for: seeded.a)), mergeChanges: true)
            try b.save()
        }
        let check = container.newBackgroundContext()
        let books: Int = try check.performAndWait { try #require(try check.existingObject(with: xID) as? Author).books.count }
        #expect(books == 0)
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// A deleted object whose row was deleted meanwhile: refresh with merging, then save.
    @Test func refreshOfADeletedObjectWhoseRowIsGone() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let book = try #require(try b.existingObject(with: seeded.a) as? Book)
            b.delete(book)
            b.processPendingChanges()
        }
        try Fixtures.deleteInAnotherContext(seeded.a, in: container)
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a))
            b.refresh(book, mergeChanges: true)
            b.refreshAllObjects()
            try b.save()
        }
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// A deleted fault (delete of an unfired object, pending changes not yet processed).
    @Test func refreshOfADeletedFaultThenSave() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let books = try b.fetch(Book.fetchRequest())
            #expect(books.allSatisfy { $0.isFault })
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "A2"
            try a.save()
        }
        try b.performAndWait {
            let book = try #require(b.registeredObject(for: seeded.a))
            b.delete(book)
            b.refresh(book, mergeChanges: true)
            try b.save()
        }
        let check = container.newBackgroundContext()
        let titles = try check.performAndWait { try check.fetch(Book.fetchRequest()).map(\.title).sorted() }
        #expect(titles == ["B"])
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// An unchanged folder with a transient value, whose to-many another context changed:
    /// refresh with merging reloads it; its items must agree both ways.
    @Test func refreshKeepsTransientAndTakesTheSavedToMany() throws {
        let container = try Self.transientContainer()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let (folderID, itemID): (NSManagedObjectID, NSManagedObjectID) = try b.performAndWait {
            let f = TransientFolder(context: b)
            f.name = "F"
            let i = TransientItem(context: b)
            i.title = "I"
            i.folder = f
            try b.save()
            f.scratch = "kept"
            return (f.objectID, i.objectID)
        }
        try a.performAndWait {
            let f = try #require(try a.existingObject(with: folderID) as? TransientFolder)
            let j = TransientItem(context: a)
            j.title = "J"
            j.folder = f
            (try a.existingObject(with: itemID) as! TransientItem).folder = nil
            try a.save()
        }
        try b.performAndWait {
            let f = try #require(b.registeredObject(for: folderID) as? TransientFolder)
            b.refresh(f, mergeChanges: true)
            #expect(f.scratch == "kept")
            #expect(f.notes.map(\.title).sorted() == ["J"])
            for n in f.notes { #expect(n.folder === f) }
            #expect(!b.hasChanges)
            f.name = "F2"
            try b.save()
        }
    }

    /// A folder with a pending to-many edit (an item added here) and a transient value:
    /// refresh with merging keeps both, and the save stores both sides.
    @Test func refreshWithPendingToManyEditsAndTransients() throws {
        let container = try Self.transientContainer()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let folderID: NSManagedObjectID = try b.performAndWait {
            let f = TransientFolder(context: b)
            f.name = "F"
            try b.save()
            return f.objectID
        }
        try b.performAndWait {
            let f = try #require(b.registeredObject(for: folderID) as? TransientFolder)
            f.scratch = "kept"
            let i = TransientItem(context: b)
            i.title = "mine"
            f.$notes.insert(i)
        }
        try a.performAndWait {
            let f = try #require(try a.existingObject(with: folderID) as? TransientFolder)
            let j = TransientItem(context: a)
            j.title = "theirs"
            j.folder = f
            f.name = "byA"
            try a.save()
        }
        try b.performAndWait {
            let f = try #require(b.registeredObject(for: folderID) as? TransientFolder)
            b.refreshAllObjects()
            #expect(f.scratch == "kept")
            #expect(f.name == "byA")
            #expect(f.notes.map(\.title).sorted() == ["mine", "theirs"])
            try b.save()
        }
        let check = container.newBackgroundContext()
        let titles: [String] = try check.performAndWait {
            try #require(try check.existingObject(with: folderID) as? TransientFolder).notes.map(\.title).sorted()
        }
        #expect(titles == ["mine", "theirs"])
    }

    // MARK: refresh

    @Test func refreshWithoutMergeDiscardsChangesAndLoadsStoreValues() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            a.title = "Mine"
            #expect(a.isUpdated)
        }
        try await externalEdit(container, ids.a, pages: 555)
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            ctx.refresh(a, mergeChanges: false)
            #expect(a.isFault)
            #expect(!a.isUpdated)
            #expect(!ctx.hasChanges)
            #expect(ctx.updatedObjects.isEmpty)
            #expect(a.title == "A")
            #expect(a.pages == 555)
            #expect(!a.isFault)
        }
    }

    @Test func refreshWithMergeKeepsChangesOnTopOfStoreValues() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            a.title = "Mine"
        }
        try await externalEdit(container, ids.a, title: "Theirs", pages: 555)
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            #expect(a.pages == 100)
            ctx.refresh(a, mergeChanges: true)
            #expect(a.title == "Mine")
            #expect(a.pages == 555)
            #expect(a.isUpdated)
            #expect(ctx.updatedObjects == [a])
            // The merged object is now based on the store's latest version: saving does not conflict.
            try ctx.save()
        }
        let check = container.newBackgroundContext()
        let state: String = try await check.perform {
            let a = try #require(try check.existingObject(with: ids.a) as? Book)
            return "\(a.title):\(a.pages)"
        }
        #expect(state == "Mine:555")
    }

    @Test func refreshWithMergeTurnsUnchangedObjectIntoFault() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            #expect(a.title == "A")
        }
        try await externalEdit(container, ids.a, title: "Theirs")
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            #expect(a.title == "A")  // stale until refreshed
            ctx.refresh(a, mergeChanges: true)
            #expect(a.isFault)
            #expect(a.title == "Theirs")
        }
    }

    @Test func refreshLeavesInsertedObjectsAlone() async throws {
        let container = try Fixtures.container()
        let ctx = container.newBackgroundContext()
        await ctx.perform {
            let fresh = Book(context: ctx)
            fresh.title = "Fresh"
            ctx.refresh(fresh, mergeChanges: false)
            #expect(fresh.isInserted)
            #expect(!fresh.isFault)
            #expect(fresh.title == "Fresh")
            #expect(ctx.insertedObjects == [fresh])
        }
    }

    @Test func refreshAllObjectsKeepsChangesAndFaultsTheRest() async throws {
        let container = try Fixtures.container()
        let ids = try await Fixtures.seedShelf(container)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let a = try #require(try ctx.existingObject(with: ids.a) as? Book)
            let b = try #require(try ctx.existingObject(with: ids.b) as? Book)
            a.title = "Mine"
            #expect(b.title == "B")
        }
        try await externalEdit(container, ids.a, pages: 111)
        try await externalEdit(container, ids.b, title: "B2", pages: 222)
        try await ctx.perform {
            let a = try #require(ctx.registeredObject(for: ids.a) as? Book)
            let b = try #require(ctx.registeredObject(for: ids.b) as? Book)
            let fresh = Book(context: ctx)
            fresh.title = "Fresh"
            ctx.refreshAllObjects()
            #expect(!a.isFault)
            #expect(a.isUpdated)
            #expect(b.isFault)
            #expect(!b.isUpdated)
            #expect(fresh.isInserted)
            #expect(!fresh.isFault)
            #expect(a.title == "Mine")
            #expect(a.pages == 111)
            #expect(b.title == "B2")
            #expect(b.pages == 222)
            #expect(fresh.title == "Fresh")
            #expect(ctx.updatedObjects == [a])
            #expect(ctx.insertedObjects == [fresh])
            // Identity is preserved.
            #expect(ctx.registeredObject(for: ids.a) === a)
            #expect(ctx.registeredObject(for: ids.b) === b)
        }
    }
}
