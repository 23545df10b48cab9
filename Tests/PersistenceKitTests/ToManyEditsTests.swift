import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// A save writes a changed to-many from its snapshot's list and the edits since
// (NSManagedObject+ToManyEdits.swift) instead of walking every target. These tests pin when
// the edits are trusted, and check the lists such saves store against what the objects hold.
// (Debug builds also compare every patched list with the full encoding, in every test.)

@Suite struct ToManyEditsTests {
    private static func index(_ name: String, of object: NSManagedObject) -> Int {
        object.entity.indexByName[name]!
    }

    /// The list a save would write for `object.name` from the tracked edits; nil when it
    /// would walk the set.
    private static func patched(_ object: NSManagedObject, _ name: String) -> [StoreRowID]? {
        object.patchedToManyRows(at: index(name, of: object)) { $0.rowID ?? $0.pendingRow }
    }

    private static func rows(_ objects: some Sequence<NSManagedObject>) -> [StoreRowID] {
        objects.compactMap(\.rowID).sorted()
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

    /// With a "no action" inverse a deleted target could stay in the set, so the save checks
    /// every target, as before; with the other rules only those added since the snapshot.
    @Test func noActionInverseChecksEveryTarget() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [TMEBin.self, TMEItem.self])
        let container = NSPersistentContainer(name: #function, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let bin = TMEBin(context: context)
            let item = TMEItem(context: context)
            item.bin = bin
            try context.save()
            let items = Self.index("items", of: bin)
            #expect(bin.toManyTargetsToCheck(at: items, relationship: bin.relationship(at: items)) == nil)
            let newItem = TMEItem(context: context)
            newItem.bin = bin
            #expect(bin.toManyTargetsToCheck(at: items, relationship: bin.relationship(at: items)) == nil)
        }
        let shelfContext = try Fixtures.container().newBackgroundContext()
        try shelfContext.performAndWait {
            let shelf = Shelf(context: shelfContext)
            Book(context: shelfContext).shelf = shelf
            try shelfContext.save()
            let added = Book(context: shelfContext)
            added.shelf = shelf
            let books = Self.index("books", of: shelf)
            #expect(shelf.toManyTargetsToCheck(at: books, relationship: shelf.relationship(at: books)) == [added])
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
}

/// A to-many whose inverse's delete rule is "no action": deleting an item leaves it listed.
final class TMEBin: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "bin", deleteRule: .nullifyDeleteRule) var items: Set<TMEItem>
}

final class TMEItem: NSManagedObject {
    @Relationship(inverse: "items", deleteRule: .noActionDeleteRule) var bin: TMEBin?
}
