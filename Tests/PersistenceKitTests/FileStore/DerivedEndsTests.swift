import Foundation
import Testing
@testable import PersistenceKit

// The file store keeps derived to-many ends (a shelf's `books`, an author's side of a
// many-to-many) from the owning ends instead of writing them (format version 3; see
// `DerivedEnds`). Before, a save that put one book on a large shelf rewrote the shelf's
// whole list.

@Suite struct DerivedEndsTests {
    /// Bytes of the store file.
    static func size(_ url: URL) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? -1
    }

    /// A shelf with `count` books, saved; returns the shelf's ID.
    static func seedShelf(_ context: NSManagedObjectContext, books count: Int) throws -> NSManagedObjectID {
        try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "big"
            for i in 0..<count {
                let book = Book(context: context)
                book.title = "b\(i)"
                book.shelf = shelf
            }
            try context.save()
            return shelf.objectID
        }
    }

    /// The shelf `shelfID` names, in `context` (whose container may have reopened the store).
    static func shelf(_ shelfID: NSManagedObjectID, in context: NSManagedObjectContext) throws -> Shelf? {
        let coordinator = try #require(context.persistentStoreCoordinator)
        let id = try #require(coordinator.managedObjectID(forURIRepresentation: shelfID.uriRepresentation()))
        return try context.existingObject(with: id) as? Shelf
    }

    /// Puts one new book on the shelf and saves; returns how many bytes the file grew by.
    static func addOneBook(to shelfID: NSManagedObjectID, _ context: NSManagedObjectContext, url: URL) throws -> Int {
        let before = try size(url)
        try context.performAndWait {
            let book = Book(context: context)
            book.title = "one more"
            book.shelf = try shelf(shelfID, in: context)
            try context.save()
        }
        return try size(url) - before
    }

    static func bookCount(of shelfID: NSManagedObjectID, _ container: NSPersistentContainer) throws -> Int {
        let context = container.newBackgroundContext()
        return try context.performAndWait { try shelf(shelfID, in: context)?.books.count ?? -1 }
    }

    @Test func oneBookOntoALargeShelfWritesASmallRecord() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        // Normal durability: the file is exactly its records (no space reserved ahead).
        var container = try FSSupport.container(at: url, durability: "normal")
        let context = container.newBackgroundContext()
        let shelfID = try Self.seedShelf(context, books: 5_000)
        let grown = try Self.addOneBook(to: shelfID, context, url: url)
        // The new book's row and the shelf's row without its list: a few hundred bytes. The
        // list alone was over 60 KB.
        #expect(grown > 0 && grown < 1_000, "the save appended \(grown) bytes")
        #expect(try Self.bookCount(of: shelfID, container) == 5_001)

        try FSSupport.close(container)
        container = try FSSupport.container(at: url, durability: "normal")
        #expect(try Self.bookCount(of: shelfID, container) == 5_001, "rebuilt from the books' own shelf column")
        try FSSupport.close(container)
    }

    /// A file of version 2 stores the lists: it is read from the owning ends, saves keep
    /// writing the lists (so an older build still reads it right), and a compaction rewrites
    /// it as version 3 without them.
    @Test func versionTwoFilesKeepTheirListsUntilCompacted() throws {
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        var container = try FSSupport.container(at: url, durability: "normal")
        let shelfID = try Self.seedShelf(container.newBackgroundContext(), books: 2_000)
        try FSSupport.close(container)

        var bytes = try FSSupport.bytes(url)
        #expect(FSSupport.u32(bytes, at: 8) == 3, "new files are version 3")
        FSSupport.putU32(2, into: &bytes, at: 8)  // the records' checksum is the same in 2 and 3
        FSSupport.fixHeaderCRC(&bytes)
        try FSSupport.write(bytes, to: url)

        container = try FSSupport.container(at: url, durability: "normal")
        #expect(try Self.bookCount(of: shelfID, container) == 2_000)
        let grown = try Self.addOneBook(to: shelfID, container.newBackgroundContext(), url: url)
        #expect(grown > 2_001 * 8, "a version 2 file gets the shelf's whole list: \(grown) bytes")
        #expect(FSSupport.u32(try FSSupport.bytes(url), at: 8) == 2)

        let store = try #require(FSSupport.fileStores(container).first)
        try store.compact()
        let compacted = try FSSupport.bytes(url)
        #expect(FSSupport.u32(compacted, at: 8) == 3, "compaction writes version 3")
        #expect(try Self.bookCount(of: shelfID, container) == 2_001)
        #expect(try Self.addOneBook(to: shelfID, container.newBackgroundContext(), url: url) < 1_000)
        try FSSupport.close(container)

        container = try FSSupport.container(at: url, durability: "normal")
        #expect(try Self.bookCount(of: shelfID, container) == 2_002)
        #expect(try storedGraphProblems(container) == [])
        try FSSupport.close(container)
    }

    /// Random moves, author changes, inserts and deletes (cascades included), with
    /// compactions between: after each save the ends agree, and the lists the store kept
    /// save by save equal the lists built afresh by reopening.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func listsKeptSaveBySaveEqualListsBuiltAfresh(seed: UInt64) throws {
        var random = FSRandom(seed: seed)
        let folder = try TemporaryFolder()
        let url = folder.storeURL
        var container = try FSSupport.container(at: url)
        let model = container.managedObjectModel
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelves = (0..<5).map { i in
                let s = Shelf(context: context)
                s.name = "s\(i)"
                return s
            }
            let authors = (0..<5).map { i in
                let a = Author(context: context)
                a.name = "a\(i)"
                return a
            }
            for i in 0..<60 {
                let b = Book(context: context)
                b.title = "b\(i)"
                b.shelf = shelves.randomElement(using: &random)
                b.authors = Set(authors.filter { _ in random.next() % 3 == 0 })
            }
            try context.save()
        }
        for round in 0..<40 {
            try context.performAndWait {
                let shelves = try context.fetch(Shelf.fetchRequest())
                let books = try context.fetch(Book.fetchRequest())
                let authors = try context.fetch(Author.fetchRequest())
                for _ in 0..<5 {
                    switch random.next() % 6 {
                    case 0, 1:
                        books.randomElement(using: &random)?.shelf = random.next() % 5 == 0 ? nil : shelves.randomElement(using: &random)
                    case 2:
                        books.randomElement(using: &random)?.authors = Set(authors.filter { _ in random.next() % 3 == 0 })
                    case 3:
                        let b = Book(context: context)
                        b.title = "new"
                        b.shelf = shelves.randomElement(using: &random)
                        b.authors = Set(authors.filter { _ in random.next() % 4 == 0 })
                    case 4:
                        if let b = books.randomElement(using: &random), !b.isDeleted { context.delete(b) }
                    default:
                        // A shelf goes with its books (cascade); a new one takes its place.
                        if round % 8 == 7, let s = shelves.randomElement(using: &random), !s.isDeleted {
                            context.delete(s)
                            Shelf(context: context).name = "replacement"
                        }
                    }
                }
                try context.save()
            }
            #expect(try storedGraphProblems(container) == [], "seed \(seed), round \(round)")
            if round % 10 == 9, let store = FSSupport.fileStores(container).first { try store.compact() }
        }
        let kept = try FSSupport.allRows(try #require(FSSupport.fileStores(container).first), model)
        try FSSupport.close(container)
        container = try FSSupport.container(at: url)
        let rebuilt = try FSSupport.allRows(try #require(FSSupport.fileStores(container).first), model)
        #expect(kept == rebuilt, "seed \(seed)")
        #expect(kept.values.contains { row in row.values.contains { if case let .references(r) = $0 { r.count > 3 } else { false } } })
        try FSSupport.close(container)
    }
}
