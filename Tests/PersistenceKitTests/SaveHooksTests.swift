import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// willSave()/didSave() hooks and conflict resolution, as Core Data documents them: objects
// the willSave hooks change get willSave too, changes made in didSave are ordinary unsaved
// changes, and the overwrite and rollback merge policies leave both ends of every
// relationship agreeing. Each test failed before its fix.

/// An item whose willSave calls are counted.
final class SHItem: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var stamp: Int64 = 0
    @Relationship(inverse: "items") var owner: SHOwner?
    var willSaveCalls = 0

    override func willSave() {
        super.willSave()
        willSaveCalls += 1
    }
}

/// An owner whose willSave stamps its items (only when the stamp differs, as Apple advises).
final class SHOwner: NSManagedObject {
    @Attribute var touched: Int64 = 0
    @Relationship(inverse: "owner") var items: Set<SHItem>
    /// When set, the next willSave inserts one new item.
    var spawnItem = false
    /// When set, every willSave changes `touched`: a hook that never settles.
    var restless = false

    override func willSave() {
        super.willSave()
        for item in items where item.stamp != touched + 1 { item.stamp = touched + 1 }
        if spawnItem, let context = managedObjectContext {
            spawnItem = false
            let item = SHItem(context: context)
            item.name = "spawned"
        }
        if restless { touched += 1 }
    }
}

/// An object that bumps its version once per save in willSave, and edits itself or inserts
/// another object in didSave when asked.
final class SHVersioned: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var version: Int64 = 0
    var willSaveCalls = 0
    var stampedThisSave = false
    var editInDidSave = false
    var insertInDidSave = false

    override func willSave() {
        super.willSave()
        willSaveCalls += 1
        if !stampedThisSave {
            version += 1
            stampedThisSave = true
        }
    }

    override func didSave() {
        super.didSave()
        stampedThisSave = false
        guard let context = managedObjectContext, !isDeleted else { return }
        if editInDidSave {
            editInDidSave = false
            name = "edited in didSave"
        }
        if insertInDidSave {
            insertInDidSave = false
            SHVersioned(context: context).name = "inserted in didSave"
        }
    }
}

/// Counts its awakeFromInsert calls.
final class SHAwake: NSManagedObject {
    @Attribute var name: String = ""
    var awakeCalls = 0

    override func awakeFromInsert() {
        super.awakeFromInsert()
        awakeCalls += 1
    }
}

/// The object IDs each objects-did-change notification of one context carried, by key.
private final class ChangeLog: Sendable {
    private let notes = TestMutex<[[String: Set<NSManagedObjectID>]]>([])
    private let token = TestMutex<(any NSObjectProtocol)?>(nil)

    init(_ context: NSManagedObjectContext) {
        let notes = self.notes
        let observer = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil
        ) { note in
            // Runs on the context's queue, where its objects may be read.
            var seen: [String: Set<NSManagedObjectID>] = [:]
            for (key, value) in note.userInfo ?? [:] {
                guard let key = key as? String else { continue }
                seen[key] = Set(((value as? Set<NSManagedObject>) ?? []).map(\.objectID))
            }
            notes.withLock { $0.append(seen) }
        }
        token.withLock { $0 = observer }
    }

    deinit { if let t = token.withLock({ $0 }) { NotificationCenter.default.removeObserver(t) } }

    var all: [[String: Set<NSManagedObjectID>]] { notes.withLock { $0 } }
    func clear() { notes.withLock { $0.removeAll() } }
}

@Suite struct SaveHooksTests {
    // MARK: willSave

    @Test func objectChangedByAnotherObjectsWillSaveGetsWillSave() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = SHOwner(context: context)
            let item = SHItem(context: context)
            item.owner = owner
            try context.save()
            item.willSaveCalls = 0
            owner.touched = 5  // only the owner changes; its willSave changes the item
            try context.save()
            #expect(item.stamp == 6)
            #expect(item.willSaveCalls == 1)
            #expect(!context.hasChanges)
        }
    }

    @Test func objectInsertedByAWillSaveHookGetsWillSaveAndIsSaved() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = SHOwner(context: context)
            owner.spawnItem = true
            try context.save()
            let items = try context.fetch(SHItem.fetchRequest())
            #expect(items.map(\.name) == ["spawned"])
            #expect(items.first?.willSaveCalls == 1)
            #expect(!context.hasChanges)
        }
    }

    @Test func objectInsertedByAWillSaveObserverGetsWillSave() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextWillSave, object: context, queue: nil) { _ in
            SHItem(context: context).name = "extra"
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try context.performAndWait {
            SHItem(context: context).name = "item"
            try context.save()
            let items = try context.fetch(SHItem.fetchRequest()).sorted { $0.name < $1.name }
            #expect(items.map(\.name) == ["extra", "item"])
            #expect(items.map(\.willSaveCalls) == [1, 1])
        }
    }

    /// Apple: when willSave changes the object through its accessors, Core Data calls
    /// willSave again before saving.
    @Test func willSaveRunsAgainOnAnUpdatedObjectThatChangedItself() throws {
        let container = try OTSupport.container([SHVersioned.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = SHVersioned(context: context)
            try context.save()
            o.willSaveCalls = 0
            o.name = "y"
            try context.save()
            #expect(o.version == 2)
            #expect(o.willSaveCalls == 2)
        }
    }

    @Test func willSaveThatNeverSettlesIsATypedErrorAndSavesNothing() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = SHOwner(context: context)
            try context.save()
            owner.restless = true
            owner.touched = 1
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .coreData)
            #expect(error?.message.contains("100 rounds") == true)
            let reader = container.newBackgroundContext()
            let stored = try reader.performAndWait { try reader.fetch(SHOwner.fetchRequest()).map(\.touched) }
            #expect(stored == [0])
        }
    }

    // MARK: didSave

    /// Apple: changes made in didSave dirty the context and leave it with unsaved changes.
    @Test func changeMadeInDidSaveIsAnnouncedAndSavedNextTime() throws {
        let container = try OTSupport.container([SHVersioned.self])
        let context = container.newBackgroundContext()
        let log = ChangeLog(context)
        try context.performAndWait {
            let o = SHVersioned(context: context)
            o.editInDidSave = true
            try context.save()
            #expect(o.isUpdated && context.hasChanges)
            log.clear()
            context.processPendingChanges()
            #expect(log.all.contains { $0[NSUpdatedObjectsKey]?.contains(o.objectID) == true })
            try context.save()
            let reader = container.newBackgroundContext()
            #expect(try reader.performAndWait { try reader.fetch(SHVersioned.fetchRequest()).map(\.name) } == ["edited in didSave"])
        }
    }

    @Test func insertMadeInDidSaveIsAnnouncedAndSavedNextTime() throws {
        let container = try OTSupport.container([SHVersioned.self])
        let context = container.newBackgroundContext()
        let log = ChangeLog(context)
        try context.performAndWait {
            let o = SHVersioned(context: context)
            o.insertInDidSave = true
            try context.save()
            #expect(context.insertedObjects.count == 1)
            log.clear()
            context.processPendingChanges()
            #expect(log.all.contains { $0[NSInsertedObjectsKey]?.count == 1 })
            try context.save()
            #expect(try context.count(for: SHVersioned.fetchRequest()) == 2)
        }
    }

    /// Apple: awakeFromInsert is invoked only once in the object's lifetime, so an object
    /// deleted before a save (which detaches it) and inserted again does not get it again.
    @Test func awakeFromInsertRunsOnceInAnObjectsLife() throws {
        let container = try OTSupport.container([SHAwake.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = SHAwake(context: context)
            o.name = "kept"
            context.delete(o)
            context.processPendingChanges()
            #expect(o.managedObjectContext == nil)
            context.insert(o)
            #expect(o.awakeCalls == 1)
            try context.save()
            let standalone = SHAwake(entity: o.entity, insertInto: nil)
            #expect(standalone.awakeCalls == 0)
            context.insert(standalone)
            #expect(standalone.awakeCalls == 1)
        }
    }

    // MARK: objects-did-change

    @Test func insertDeletedBeforeItWasAnnouncedPostsNothing() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = ChangeLog(context)
        context.performAndWait {
            context.delete(Book(context: context))
            context.processPendingChanges()
        }
        #expect(log.all.isEmpty)
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

    @Test func rollbackPolicyPutsADiscardedMoveBackOnBothEnds() throws {
        let container = try Fixtures.container()
        let (bookID, shelves) = try Self.seedShelves(container)
        let a = container.newBackgroundContext()
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: bookID) as? Book)
            book.shelf = try #require(try a.existingObject(with: shelves[1]) as? Shelf)
        }
        let b = container.newBackgroundContext()
        try b.performAndWait {
            try #require(try b.existingObject(with: bookID) as? Book).title = "B"
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = NSRollbackMergePolicy
            try a.save()
        }
        try Self.expectConsistent(container, book: bookID, shelves: shelves)
    }

    @Test func rollbackPolicyUndoesTheNullifyOfADiscardedDeletion() throws {
        let container = try Fixtures.container()
        let (bookID, shelves) = try Self.seedShelves(container)
        let a = container.newBackgroundContext()
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: bookID) as? Book)
            _ = book.shelf?.books
            a.delete(book)
            a.processPendingChanges()  // the nullify rule takes the book off its shelf
        }
        let b = container.newBackgroundContext()
        try b.performAndWait {
            try #require(try b.existingObject(with: bookID) as? Book).title = "B"
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = NSRollbackMergePolicy
            try a.save()
        }
        try Self.expectConsistent(container, book: bookID, shelves: shelves)
    }

    @Test func overwritePolicyTakesTheBookOffTheShelfTheOtherSaveChose() throws {
        let container = try Fixtures.container()
        let (bookID, shelves) = try Self.seedShelves(container)
        let a = container.newBackgroundContext()
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: bookID) as? Book)
            book.shelf = try #require(try a.existingObject(with: shelves[1]) as? Shelf)
        }
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let book = try #require(try b.existingObject(with: bookID) as? Book)
            book.shelf = try #require(try b.existingObject(with: shelves[2]) as? Shelf)
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = NSOverwriteMergePolicy
            try a.save()
        }
        try Self.expectConsistent(container, book: bookID, shelves: shelves)
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
}
