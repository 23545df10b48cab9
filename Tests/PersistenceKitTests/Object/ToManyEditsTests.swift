import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

/// A bin that can insert an item from its update validation.
final class TMEBin: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "bin", deleteRule: .nullifyDeleteRule) var items: Set<TMEItem>
    /// Not a managed property: the next `validateForUpdate()` inserts an item into this
    /// bin's context and links it.
    var insertsItemWhenValidated = false

    override func validateForUpdate() throws {
        try super.validateForUpdate()
        if insertsItemWhenValidated, let context = managedObjectContext {
            insertsItemWhenValidated = false
            TMEItem(context: context).bin = self
        }
    }
}

final class TMEItem: NSManagedObject {
    @Relationship(inverse: "items", deleteRule: .nullifyDeleteRule) var bin: TMEBin?
}

// A save writes a changed to-many from its snapshot's list and the edits since
// (NSManagedObject+ToManyEdits.swift) instead of walking every target. These tests pin when
// the edits are trusted, and check the lists such saves store against what the objects hold.
// (Debug builds also compare every patched list with the full encoding, in every test.)
@Suite("To-many edits saved as patches") struct ToManyEditsTests {
    private static func index(_ name: String, of object: NSManagedObject) -> Int {
        object.entity.indexByName[name]!
    }

    /// The list a save would write for `object.name` from the tracked edits; nil when it
    /// would walk the set.
    private static func patched(_ object: NSManagedObject, _ name: String) -> [StoreRowID]? {
        let i = index(name, of: object)
        // A fault holds no slots (and no count to give).
        guard object.slots.indices.contains(i), case let .toMany(set) = object.slots[i] else { return nil }
        return object.patchedToManyRows(at: i, count: set.count) { $0.rowID ?? $0.pendingRow }
    }

    private static func rows(_ objects: some Sequence<NSManagedObject>) -> [StoreRowID] {
        objects.compactMap(\.rowID).sorted()
    }

    /// Every shelf's and author's books, by title and ID, as `context` sees them.
    private static func links(in context: NSManagedObjectContext) throws -> [String: Set<String>] {
        try context.performAndWait {
            var result: [String: Set<String>] = [:]
            for shelf in try context.fetch(Shelf.fetchRequest()) {
                result["shelf \(shelf.objectID.uriRepresentation())"] = Set(shelf.books.map { "\($0.objectID.uriRepresentation())" })
            }
            for author in try context.fetch(Author.fetchRequest()) {
                result["author \(author.objectID.uriRepresentation())"] = Set(author.books.map { "\($0.objectID.uriRepresentation())" })
            }
            return result
        }
    }

    @Test func editsSinceTheSnapshotGiveTheList() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            let first = Book(context: context)
            first.shelf = shelf
            #expect(Self.patched(shelf, "books") == nil)  // inserted: no snapshot to start from
            try context.save()
            #expect(Self.patched(shelf, "books") == Self.rows([first]))

            let second = Book(context: context)
            second.shelf = shelf
            first.shelf = nil
            try context.obtainPermanentIDs(for: [second])
            #expect(Self.patched(shelf, "books") == Self.rows([second]))
            try context.save()
            #expect(Self.patched(shelf, "books") == Self.rows([second]))

            // Added and taken out again before a save: no edit left.
            let third = Book(context: context)
            shelf.$books.insert(third)
            shelf.$books.remove(third)
            #expect(Self.patched(shelf, "books") == Self.rows([second]))
        }
    }

    @Test func writesTheEditsDoNotDescribeEndTheTracking() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            let book = Book(context: context)
            book.shelf = shelf
            try context.save()
            #expect(Self.patched(shelf, "books") == Self.rows([book]))

            // Replacing the whole set goes through the one-side edits for each change.
            shelf.setValue(Set<Book>(), forKey: "books")
            #expect(Self.patched(shelf, "books") == [])
            try context.save()

            // Turned into a fault: nothing to start from until its values are loaded again.
            context.refresh(shelf, mergeChanges: false)
            #expect(Self.patched(shelf, "books") == nil)
            #expect(shelf.books.isEmpty)
            #expect(Self.patched(shelf, "books") == [])

            // A refresh keeps the other end's pending change: the shelf lists the book again,
            // through the edits.
            book.shelf = shelf
            context.refresh(shelf, mergeChanges: false)
            #expect(shelf.books == [book])
            #expect(Self.patched(shelf, "books") == Self.rows([book]))

            // Values taken from a newer row (a merge) are not the snapshot plus edits.
            context.rollback()
            #expect(shelf.books.isEmpty)
            #expect(Self.patched(shelf, "books") == [])
            shelf.slots[Self.index("books", of: shelf)] = .toMany([])
            #expect(Self.patched(shelf, "books") == nil)
        }
    }

    @Test func aTargetFromAnotherContextIsStillADanglingReference() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let other = container.newBackgroundContext()
        let shelfID = try context.performAndWait {
            let shelf = Shelf(context: context)
            Book(context: context).shelf = shelf
            try context.save()
            return shelf.objectID
        }
        let stranger = other.performAndWait { Book(context: other) }
        try context.performAndWait {
            let shelf = try #require(try context.existingObject(with: shelfID) as? Shelf)
            _ = shelf.books
            try context.save()
            #expect(Self.patched(shelf, "books") != nil)
            // One side only: the stranger belongs to another context.
            shelf.primitiveInsert(stranger, toManyAt: Self.index("books", of: shelf))
            #expect(throws: CoreDataError.self) { try context.save() }
        }
    }

    /// Only the targets added since the snapshot are checked, until an object leaves the
    /// context: then every target is, until tracking starts again after that.
    @Test func aDepartureMeansEveryTargetIsChecked() throws {
        let context = try Fixtures.container().newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            let doomed = Book(context: context)
            doomed.shelf = shelf
            try context.save()
            let books = Self.index("books", of: shelf)
            let added = Book(context: context)
            added.shelf = shelf
            #expect(shelf.toManyTargetsToCheck(at: books) == [added])
            context.delete(doomed)
            try context.save()  // the deleted book leaves the context after the shelf's tracking restarted
            Book(context: context).shelf = shelf
            #expect(shelf.toManyTargetsToCheck(at: books) == nil)
            try context.save()
            let last = Book(context: context)
            last.shelf = shelf
            #expect(shelf.toManyTargetsToCheck(at: books) == [last])
        }
    }

    /// A deleted book that this context's stale shelf still lists (another context moved
    /// it away, this one refreshed it before deleting it) is a dangling reference when the
    /// shelf is saved next, as it is when the edits are not tracked.
    @Test(arguments: [false, true])
    func aStaleShelfStillListingADeletedBookFailsAsDangling(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = onFile ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
        defer { try? FSSupport.close(container) }
        let mover = container.newBackgroundContext()
        let context = container.newBackgroundContext()
        let (shelfID, bookID) = try context.performAndWait {
            let shelf = Shelf(context: context)
            let book = Book(context: context)
            book.shelf = shelf
            Book(context: context).shelf = shelf
            try context.save()
            _ = shelf.books.count
            return (shelf.objectID, book.objectID)
        }
        try mover.performAndWait {
            let book = try #require(try mover.existingObject(with: bookID) as? Book)
            book.shelf = Shelf(context: mover)
            try mover.save()
        }
        try context.performAndWait {
            let shelf = try #require(try context.existingObject(with: shelfID) as? Shelf)
            let book = try #require(try context.existingObject(with: bookID) as? Book)
            context.refresh(book, mergeChanges: false)
            context.delete(book)
            try context.save()
            #expect(shelf.books.contains(book))  // stale: nothing told this shelf
            Book(context: context).shelf = shelf
            let error = try #require(throws: CoreDataError.self) { try context.save() }
            #expect(error.code == .managedObjectValidation && error.description.contains("dangling reference"))
        }
    }

    /// A validation hook that inserts and links an object during a save: the same save
    /// writes the object and the link (not the list without the object, leaving the object
    /// for the next save).
    @Test(arguments: [false, true])
    func anObjectAValidationHookLinkedIsWrittenByTheSameSave(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [TMEBin.self, TMEItem.self])
        let container =
            onFile ? try FSSupport.container(at: folder.storeURL, model: model) : try OTSupport.container(model: model)
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        let binID = try context.performAndWait {
            let bin = TMEBin(context: context)
            try context.save()
            _ = bin.items.count
            bin.insertsItemWhenValidated = true
            bin.name = "spawn"
            try context.save()  // the hook's item is saved with it
            #expect(bin.items.count == 1 && context.insertedObjects.isEmpty && !context.hasChanges)
            bin.name = "done"
            try context.save()
            return bin.objectID
        }
        let fresh = container.newBackgroundContext()
        try fresh.performAndWait {
            let bin = try #require(try fresh.existingObject(with: binID) as? TMEBin)
            #expect(bin.items.count == 1)
        }
    }

    /// A large stored to-many turns into objects together (registered in one batch): the
    /// objects already registered are the ones it holds, and the new ones are registered.
    @Test func aLargeStoredToManyResolvesToTheRegisteredObjects() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let count = ObjectRegistry.bulkThreshold + 100
        let shelfID = try DerivedEndsTests.seedShelf(writer, books: count)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let request = Book.fetchRequest()
            request.predicate = #Predicate<Book> { $0.title == "b7" || $0.title == "b4000" }
            let known = try context.fetch(request)
            #expect(known.count == 2)
            let shelf = try #require(try context.existingObject(with: shelfID) as? Shelf)
            let books = shelf.books
            #expect(books.count == count)
            #expect(known.allSatisfy(books.contains))
            #expect(Set(books.map(\.objectID)).count == count)
            #expect(books.allSatisfy { context.registeredObject(for: $0.objectID) === $0 })
            #expect(Set(books.map(\.title)).count == count)
        }
    }

    /// Random edits through the public API, saved in between, with merges from a second
    /// context: after every save, a fresh context reads back what the editing context holds.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func randomEditsSaveTheListsTheObjectsHold(seed: UInt64) throws {
        for onFile in [false, true] {
            let folder = try TemporaryFolder()
            let container = onFile ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
            defer { try? FSSupport.close(container) }
            var random = FSRandom(seed: seed)
            let context = container.newBackgroundContext()
            let other = container.newBackgroundContext()
            func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(random.next() % UInt64(items.count))] }
            for step in 0..<60 {
                try context.performAndWait {
                    let shelves = try context.fetch(Shelf.fetchRequest())
                    let books = try context.fetch(Book.fetchRequest())
                    let authors = try context.fetch(Author.fetchRequest())
                    for _ in 0..<(1 + Int(random.next() % 4)) {
                        switch random.next() % 12 {
                        case 0: Shelf(context: context).name = "s\(step)"
                        case 1: Author(context: context).name = "a\(step)"
                        case 2, 3:
                            let book = Book(context: context)
                            book.title = "b\(step)"
                            book.shelf = pick(shelves)
                        case 4: pick(books)?.shelf = pick(shelves)
                        case 5: if let book = pick(books), let author = pick(authors) { book.$authors.insert(author) }
                        case 6: if let book = pick(books), let author = pick(authors) { author.$books.remove(book) }
                        case 7: if let book = pick(books), !book.isDeleted { context.delete(book) }
                        case 8:
                            if let shelf = pick(shelves), !shelf.isDeleted {
                                shelf.setValue(Set(books.filter { b in random.next() % 4 == 0 && !b.isDeleted }), forKey: "books")
                            }
                        case 9: if let shelf = pick(shelves) { context.refresh(shelf, mergeChanges: random.next() % 2 == 0) }
                        case 10: if random.next() % 3 == 0 { context.rollback() }
                        default: if let shelf = pick(shelves), let book = pick(books) { shelf.$books.insert(book) }
                        }
                    }
                    try context.save()
                }
                if step % 7 == 3 {
                    // Another context edits and saves; the first merges it.
                    let saved = TestMutex<Notification?>(nil)
                    let token = NotificationCenter.default.addObserver(
                        forName: .NSManagedObjectContextDidSave, object: other, queue: nil
                    ) { n in saved.withLock { $0 = n } }
                    try other.performAndWait {
                        other.reset()
                        let shelves = try other.fetch(Shelf.fetchRequest())
                        guard let shelf = pick(shelves), let book = pick(try other.fetch(Book.fetchRequest())) else { return }
                        book.shelf = shelf
                        try other.save()
                    }
                    NotificationCenter.default.removeObserver(token)
                    if let note = saved.withLock({ $0 }) { context.performAndWait { context.mergeChanges(fromContextDidSave: note) } }
                }
                let held = try Self.links(in: context)
                let fresh = container.newBackgroundContext()
                let stored = try Self.links(in: fresh)
                #expect(held == stored, "seed \(seed), step \(step), \(onFile ? "file" : "memory") store")
                if held != stored { return }
            }
        }
    }
}
