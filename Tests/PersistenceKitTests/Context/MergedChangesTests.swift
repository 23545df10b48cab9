import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

/// Resolves once `context` posts its first did-merge notification.
final class MergeSignal: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched under `lock`.
    private let lock = NSLock()
    private var state: (fired: Bool, waiter: CheckedContinuation<Void, Never>?) = (false, nil)
    private var token: (any NSObjectProtocol)?

    init(context: NSManagedObjectContext) {
        token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, queue: nil
        ) { [weak self] _ in self?.fire() }
    }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }

    private func fire() {
        lock.lock()
        let waiter = state.waiter
        state = (true, nil)
        lock.unlock()
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            lock.lock()
            if state.fired {
                lock.unlock()
                c.resume()
            } else {
                state.waiter = c
                lock.unlock()
            }
        }
    }
}

/// A merge into a context whose unsaved changes involve the merged objects: merged deletions
/// unlink, cascade and leave the receiver's own edits whole; both ends of a link agree.
@Suite("Merged saves over the receiver's own changes") struct MergedChangesTests {
    /// Runs `body` and saves on `context`; returns the did-save object-ID notification's
    /// userInfo, for `mergeChanges(fromRemoteContextSave:into:)`.
    private static func save(
        _ context: NSManagedObjectContext, _ body: () throws -> Void
    ) throws -> [AnyHashable: Any] {
        try context.performAndWait {
            try body()
            let info = TestMutex<[AnyHashable: Any]>([:])
            let token = NotificationCenter.default.addObserver(
                forName: NSManagedObjectContext.didSaveObjectIDsNotification, object: context, queue: nil
            ) { note in info.withLock { $0 = note.userInfo ?? [:] } }
            defer { NotificationCenter.default.removeObserver(token) }
            try context.save()
            return info.withLock { $0 }
        }
    }

    /// A saved shelf S holding books a and b, and a book c on no shelf.
    private static func seed(_ container: NSPersistentContainer) throws
        -> (s: NSManagedObjectID, a: NSManagedObjectID, b: NSManagedObjectID, c: NSManagedObjectID)
    {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let s = Shelf(context: context)
            s.name = "S"
            var books: [Book] = []
            for title in ["a", "b", "c"] {
                let book = Book(context: context)
                book.title = title
                book.shelf = title == "c" ? nil : s
                books.append(book)
            }
            try context.save()
            return (s.objectID, books[0].objectID, books[1].objectID, books[2].objectID)
        }
    }

    /// The shelf's titles and which books point back at it, read in a fresh context.
    private static func stored(_ container: NSPersistentContainer, shelf: NSManagedObjectID) throws -> (Set<String>, Set<String>) {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let s = try #require(try context.existingObject(with: shelf) as? Shelf)
            let pointing = try context.fetch(Book.fetchRequest()).filter { $0.shelf === s }
            return (Set(s.books.map(\.title)), Set(pointing.map(\.title)))
        }
    }

    enum Resolution: String, CaseIterable, Sendable { case automaticMerge, objectTrump, storeTrump }

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

    @Test func aMergedDeletionUnlinksTheReceiversUnsavedToOne() throws {
        let container = try Fixtures.container()
        let saver = container.newBackgroundContext()
        let (bookID, coverID) = try saver.performAndWait {
            let book = Book(context: saver)
            let cover = Cover(context: saver)
            try saver.save()
            return (book.objectID, cover.objectID)
        }
        let receiver = container.newBackgroundContext()
        try receiver.performAndWait {
            let book = try #require(try receiver.existingObject(with: bookID) as? Book)
            book.cover = try receiver.existingObject(with: coverID) as? Cover  // unsaved
        }
        let info = try Self.save(saver) { saver.delete(saver.object(with: coverID)) }
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: info, into: [receiver])
        try receiver.performAndWait {
            let book = try #require(receiver.registeredObject(for: bookID) as? Book)
            #expect(book.cover == nil)
            try receiver.save()
        }
        let fresh = container.newBackgroundContext()
        try fresh.performAndWait {
            let book = try #require(try fresh.existingObject(with: bookID) as? Book)
            #expect(book.cover == nil, "the store must not point at the deleted cover")
        }
    }

    @Test func aMergedDeletionLeavesTheReceiversChangedSet() throws {
        let container = try Fixtures.container()
        let ids = try Self.seed(container)
        let receiver = container.newBackgroundContext()
        try receiver.performAndWait {
            let s = try #require(try receiver.existingObject(with: ids.s) as? Shelf)
            s.$books.insert(try #require(try receiver.existingObject(with: ids.c) as? Book))  // unsaved
        }
        // The saver deletes c, which is on no shelf in the store: no update of S arrives,
        // only the deletion.
        let saver = container.newBackgroundContext()
        let info = try Self.save(saver) { saver.delete(saver.object(with: ids.c)) }
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: info, into: [receiver])
        try receiver.performAndWait {
            let s = try #require(receiver.registeredObject(for: ids.s) as? Shelf)
            #expect(Set(s.books.map(\.title)) == ["a", "b"])
            try receiver.save()
        }
        let (titles, pointing) = try Self.stored(container, shelf: ids.s)
        #expect(titles == ["a", "b"] && pointing == ["a", "b"])
    }

    @Test func aMergeKeepsBothSidesChangesToASet() throws {
        let container = try Fixtures.container()
        let ids = try Self.seed(container)
        let receiver = container.newBackgroundContext()
        try receiver.performAndWait {
            let s = try #require(try receiver.existingObject(with: ids.s) as? Shelf)
            _ = try receiver.existingObject(with: ids.a)
            s.$books.insert(try #require(try receiver.existingObject(with: ids.c) as? Book))  // adds c
        }
        let saver = container.newBackgroundContext()
        let info = try Self.save(saver) { (saver.object(with: ids.a) as? Book)?.shelf = nil }  // removes a
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: info, into: [receiver])
        try receiver.performAndWait {
            let s = try #require(receiver.registeredObject(for: ids.s) as? Shelf)
            let a = try #require(receiver.registeredObject(for: ids.a) as? Book)
            #expect(Set(s.books.map(\.title)) == ["b", "c"])
            #expect(a.shelf == nil)
            try receiver.save()
        }
        let (titles, pointing) = try Self.stored(container, shelf: ids.s)
        #expect(titles == ["b", "c"] && pointing == ["b", "c"])
    }

    @Test(arguments: Resolution.allCases)
    func bothEndsAgreeAfterTwoContextsMoveABook(resolution: Resolution) throws {
        let folder = try TemporaryFolder()
        var container = try FSSupport.container(at: folder.storeURL)
        let seed = container.newBackgroundContext()
        let (book, s2, s3) = try seed.performAndWait {
            let shelves = ["s1", "s2", "s3"].map { name in
                let shelf = Shelf(context: seed)
                shelf.name = name
                return shelf
            }
            let book = Book(context: seed)
            book.title = "B"
            book.shelf = shelves[0]
            try seed.save()
            return (book.objectID, shelves[1].objectID, shelves[2].objectID)
        }
        let mine = container.newBackgroundContext()
        let theirs = container.newBackgroundContext()
        mine.performAndWait {
            switch resolution {
            case .automaticMerge: mine.automaticallyMergesChangesFromParent = true
            case .objectTrump: mine.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
            case .storeTrump: mine.mergePolicy = NSMergeByPropertyStoreTrumpMergePolicy
            }
            (mine.object(with: book) as? Book)?.shelf = mine.object(with: s2) as? Shelf
        }
        try theirs.performAndWait {
            (theirs.object(with: book) as? Book)?.shelf = theirs.object(with: s3) as? Shelf
            try theirs.save()
        }
        try mine.performAndWait { try mine.save() }
        try FSSupport.close(container)

        let bookURI = book.uriRepresentation()
        container = try FSSupport.container(at: folder.storeURL)
        let fresh = container.newBackgroundContext()
        let reopenedBook = try #require(container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: bookURI))
        try fresh.performAndWait {
            let b = try #require(try fresh.existingObject(with: reopenedBook) as? Book)
            let expected = resolution == .storeTrump ? "s3" : "s2"
            #expect(b.shelf?.name == expected)
            for shelf in try fresh.fetch(Shelf.fetchRequest()) {
                #expect(shelf.books.contains(b) == (shelf.name == expected), "\(shelf.name) lists the book: \(shelf.books.contains(b))")
            }
        }
        try FSSupport.close(container)
    }

    /// Saves are broadcast after the commit lock is released, so a receiver can get the merge
    /// of a deletion before the merge of the insert it deleted; it must not register an object
    /// for a row that no longer exists (reading it would trap).
    @Test func anInsertMergedAfterTheDeletionOfItsRowRegistersNothing() async throws {
        let container = try Fixtures.container()
        let watcher = container.newBackgroundContext()
        await watcher.perform { watcher.automaticallyMergesChangesFromParent = true }
        let inserter = container.newBackgroundContext()
        let deleter = container.newBackgroundContext()
        // The deleter removes the inserter's new shelf before the inserter's save is broadcast
        // (did-save is posted first): its deletion reaches the watcher first.
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didSaveObjectsNotification, object: inserter, queue: nil
        ) { note in
            let ids = (note.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject>)?.map(\.objectID) ?? []
            deleter.performAndWait {
                for id in ids { deleter.delete(deleter.object(with: id)) }
                try? deleter.save()
            }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let id = try await inserter.perform {
            let shelf = Shelf(context: inserter)
            shelf.name = "short-lived"
            try inserter.save()
            return shelf.objectID
        }
        // Both merges were queued on the watcher before this block.
        let (registered, count) = try await watcher.perform {
            (watcher.registeredObject(for: id) != nil, try watcher.count(for: Shelf.fetchRequest()))
        }
        #expect(!registered)
        #expect(count == 0)
    }

    // MARK: Malformed merge input traps

    /// A did-save dictionary whose values are not collections of IDs, objects or URIs, or
    /// whose IDs belong to another coordinator, is a programmer error: it traps rather than
    /// being ignored without a word (the context would simply miss the changes).
    @Test func mergingAMalformedNotificationTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                context.mergeChanges(
                    fromContextDidSave: Notification(
                        name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSUpdatedObjectsKey: "not a set"]))
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains(NSUpdatedObjectsKey), "stderr: \(text)")
    }

    @Test func mergingIDsOfAnotherCoordinatorTraps() async {
        await #expect(processExitsWith: .failure) {
            let first = try Fixtures.container(name: "first")
            let second = try Fixtures.container(name: "second")
            let writer = first.newBackgroundContext()
            let id: NSManagedObjectID = try writer.performAndWait {
                let book = Book(context: writer)
                try writer.save()
                return book.objectID
            }
            NSManagedObjectContext.mergeChanges(
                fromRemoteContextSave: [NSDeletedObjectIDsKey: [id]], into: [second.newBackgroundContext()])
        }
    }

    // MARK: merged deletions

    /// Apple, mergeChanges(fromContextDidSave:): the merge "invokes delete(_:) on those which
    /// have been deleted", so their delete rules run here too. B puts a new book on shelf S;
    /// A deletes S (books cascade) and saves; B merges: the cascade reaches B's new book,
    /// which is deleted with the shelf instead of being saved without one.
    @Test func aMergedDeletionCascadesToWhatThisContextLinkedToIt() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let newBook: Book = try b.performAndWait {
            let book = Book(context: b)
            book.title = "NewB"
            book.shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            return book
        }
        let token = mergeSaves(of: a, into: b)
        defer { NotificationCenter.default.removeObserver(token) }
        try a.performAndWait {
            a.delete(try a.existingObject(with: seeded.shelf))
            try a.save()
        }
        try b.performAndWait {
            b.processPendingChanges()
            #expect(!b.insertedObjects.contains(newBook), "the cascade did not reach the book inserted on the deleted shelf")
            try b.save()
        }
        let check = container.newBackgroundContext()
        let titles = try check.performAndWait { try check.fetch(Book.fetchRequest()).map(\.title) }
        #expect(titles == [])
    }

    /// Other rules only unlink: B renames shelf S; A deletes book "A", whose rule towards
    /// its shelf is nullify, and saves; B merges: S, changed in B, stays, without the book.
    @Test func aMergedDeletionWithANullifyRuleOnlyUnlinks() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        try b.performAndWait {
            let shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            shelf.name = "Renamed in B"
            _ = shelf.books.count
        }
        let token = mergeSaves(of: a, into: b)
        defer { NotificationCenter.default.removeObserver(token) }
        try a.performAndWait {
            a.delete(try a.existingObject(with: seeded.a))
            try a.save()
        }
        let (deleted, titles): (Bool, [String]) = try b.performAndWait {
            let shelf = try #require(b.registeredObject(for: seeded.shelf) as? Shelf)
            try b.save()
            return (shelf.isDeleted, shelf.books.map(\.title))
        }
        #expect(!deleted)
        #expect(titles == ["B"])
    }

    @Test func aMergedDeletionOfAnObjectPendingDeletionDoesNotCrash() async throws {
        let container = try Fixtures.container()
        let id = try Self.savedBook(container, title: "gone")
        let a = container.newBackgroundContext()
        a.performAndWait {
            a.automaticallyMergesChangesFromParent = true
            a.delete(a.object(with: id))  // pending: delete rules not run yet
        }
        let merged = MergeSignal(context: a)
        let b = container.newBackgroundContext()
        try b.performAndWait {
            b.delete(b.object(with: id))
            try b.save()
        }
        await merged.wait()
        let count = try await a.perform {
            a.processPendingChanges()
            try a.save()
            return try a.count(for: Book.fetchRequest())
        }
        #expect(count == 0)
    }

    /// A merge left a fault holding the merged row without noting a clock reading: a later
    /// fetch (of anything) noted a newer reading, and the held row, replaced since by a save
    /// this context did not merge, was then taken as current.
    @Test func aRowHeldFromAMergeIsCheckedAfterALaterCommit() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { _ = b.object(with: seeded.a) }  // a fault holding no row; no fetch yet
        try a.performAndWait {
            try #require(try a.existingObject(with: seeded.a) as? Book).title = "v2"
            try a.save()
        }
        b.performAndWait {
            b.mergeChanges(
                fromContextDidSave: Notification(name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSUpdatedObjectIDsKey: [seeded.a]]))
            #expect(b.registeredObject(for: seeded.a)?.isFault == true)
        }
        try a.performAndWait {
            try #require(a.registeredObject(for: seeded.a) as? Book).title = "v3"
            try a.save()
        }
        let (title, failure): (String, String?) = try b.performAndWait {
            _ = try b.fetch(Shelf.fetchRequest())  // any fetch
            let book = b.registeredObject(for: seeded.a) as! Book
            let t = book.title
            book.pages = 1
            do { try b.save() } catch { return (t, "\(error)") }
            return (t, nil)
        }
        #expect(title == "v3", "the fault fired with a merged row a later commit had replaced")
        #expect(failure == nil, "\(failure ?? "")")
    }

    // MARK: cascade on merged deletions

    /// A cascade chain: B inserts a book on shelf S and a cover on that book; A deletes S.
    /// The merge deletes B's book, whose cascade takes B's cover.
    @Test func aMergedDeletionCascadesOnward() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.automaticallyMergesChangesFromParent = true
        try b.performAndWait {
            let book = Book(context: b)
            book.title = "NewB"
            book.shelf = try #require(try b.existingObject(with: seeded.shelf) as? Shelf)
            let cover = Cover(context: b)
            cover.book = book
            // and an existing book of S gets a new cover here
            let existing = try #require(try b.existingObject(with: seeded.a) as? Book)
            let c2 = Cover(context: b)
            c2.book = existing
        }
        try a.performAndWait {
            a.delete(try a.existingObject(with: seeded.shelf))
            try a.save()
        }
        try b.performAndWait {
            b.processPendingChanges()
            try b.save()
        }
        let check = container.newBackgroundContext()
        let (books, covers) = try check.performAndWait {
            (try check.count(for: Book.fetchRequest()), try check.count(for: Cover.fetchRequest()))
        }
        #expect(books == 0)
        #expect(covers == 0)
        #expect(try storedGraphProblems(container).isEmpty)
    }

    /// The cascade reaches an object updated here whose own deletion here was rolled back.
    @Test func aMergedCascadeReachesAnUpdatedObject() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let seeder = container.newBackgroundContext()
        let s2: NSManagedObjectID = try seeder.performAndWait {
            let s = Shelf(context: seeder)
            s.name = "S2"
            let k = Book(context: seeder)
            k.title = "K"
            k.shelf = s
            try seeder.save()
            return s.objectID
        }
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.automaticallyMergesChangesFromParent = true
        try b.performAndWait {
            // B moves book A from S onto S2 and retitles it.
            let book = try #require(try b.existingObject(with: seeded.a) as? Book)
            book.shelf = try #require(try b.existingObject(with: s2) as? Shelf)
            book.title = "moved"
        }
        try a.performAndWait {
            a.delete(try a.existingObject(with: s2))
            try a.save()
        }
        try b.performAndWait {
            b.processPendingChanges()
            try b.save()
        }
        #expect(try storedGraphProblems(container).isEmpty)
    }
}
