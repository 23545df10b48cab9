import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// A link edited while one of its ends is a changed object read before another coordinator
// saved the same link. The edit may leave that end equal to its old snapshot; it must
// still reach the end's row, or the file store (which keeps both ends of a link in rows)
// holds a link one side denies. See `catchUpIfEditRestoresSnapshot`.

@Suite(.serialized) struct ConflictStaleEndTests {
    /// Context A links X and Q (both loaded). Another coordinator links them too and saves.
    /// A refreshes X (now at its newest version; Q still at its first) and unlinks them,
    /// through X or through Q. After A's save no row may list the other, and a fresh
    /// context must see both ends empty.
    ///
    /// `kind` names X's relationship to Q: "authors" (many-to-many, X a book and Q an
    /// author), "books" (one-to-many from the to-many side, X a shelf and Q a book), "shelf"
    /// (one-to-many from the to-one side, X a book and Q a shelf).
    /// The "authors" and "books" cases failed before the fix (Q's row kept listing X); the
    /// "shelf" cases passed already (refreshing a to-one brings its target up to date) and
    /// guard that side.
    @Test(arguments: ["authors", "books", "shelf"], ["X", "Q"])
    func unlinkAfterRefreshingOneEndOfALinkSavedElsewhere(kind: String, via: String) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (xID, qID) = try seed.performAndWait {
            let (x, q) = Self.makePair(kind, in: seed)
            try seed.save()
            return (x.objectID, q.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            let x = a.object(with: xID), q = a.object(with: qID)
            Self.setLinked(true, kind, x: x, q: q, throughX: true)
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            let x = b.object(sameAs: xID, as: NSManagedObject.self), q = b.object(sameAs: qID, as: NSManagedObject.self)
            Self.setLinked(true, kind, x: x, q: q, throughX: true)
            try b.save()
        }
        let outcome: String = a.performAndWait {
            let x = a.object(with: xID), q = a.object(with: qID)
            a.refresh(x, mergeChanges: true)  // X at its newest version; Q still at its first
            Self.setLinked(false, kind, x: x, q: q, throughX: via == "X")
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        #expect(outcome == "saved")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let (xLinks, qLinks) = fresh.performAndWait {
            let x = fresh.object(with: xID), q = fresh.object(with: qID)
            return (Self.linkCount(kind, of: x, isX: true), Self.linkCount(kind, of: q, isX: false))
        }
        #expect(xLinks == 0 && qLinks == 0)
    }

    /// X and Q for `kind` (see the test), unlinked, inserted into `context`.
    private static func makePair(_ kind: String, in context: NSManagedObjectContext) -> (NSManagedObject, NSManagedObject) {
        func book() -> Book {
            let b = Book(context: context)
            b.title = "B"
            return b
        }
        switch kind {
        case "authors":
            let q = Author(context: context)
            q.name = "Q"
            return (book(), q)
        case "books":
            let x = Shelf(context: context)
            x.name = "X"
            return (x, book())
        default:
            let q = Shelf(context: context)
            q.name = "Q"
            return (book(), q)
        }
    }

    /// Links or unlinks X and Q through X's relationship or through Q's inverse.
    private static func setLinked(_ on: Bool, _ kind: String, x: NSManagedObject, q: NSManagedObject, throughX: Bool) {
        switch (kind, throughX) {
        case ("authors", true):
            if on { (x as! Book).$authors.insert(q as! Author) } else { (x as! Book).$authors.remove(q as! Author) }
        case ("authors", false):
            if on { (q as! Author).$books.insert(x as! Book) } else { (q as! Author).$books.remove(x as! Book) }
        case ("books", true):
            if on { (x as! Shelf).$books.insert(q as! Book) } else { (x as! Shelf).$books.remove(q as! Book) }
        case ("books", false):
            (q as! Book).shelf = on ? (x as! Shelf) : nil
        case (_, true):
            (x as! Book).shelf = on ? (q as! Shelf) : nil
        default:
            if on { (q as! Shelf).$books.insert(x as! Book) } else { (q as! Shelf).$books.remove(x as! Book) }
        }
    }

    /// How many objects `o` (X when `isX`, else Q) is linked to through the pair's relationship.
    private static func linkCount(_ kind: String, of o: NSManagedObject, isX: Bool) -> Int {
        switch (kind, isX) {
        case ("authors", true): (o as! Book).authors.count
        case ("authors", false): (o as! Author).books.count
        case ("books", true): (o as! Shelf).books.count
        case ("books", false): (o as! Book).shelf == nil ? 0 : 1
        case (_, true): (o as! Book).shelf == nil ? 0 : 1
        default: (o as! Shelf).books.count
        }
    }
}
