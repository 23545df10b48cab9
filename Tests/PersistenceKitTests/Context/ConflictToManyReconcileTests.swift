import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// A by-property merge policy settles a to-many relationship of an object in conflict: the
// other ends must be made to agree with the value it keeps or takes, as `reconcileToOne`
// does for to-one relationships, or the file store (which keeps both ends of a link in
// rows) holds a link one side denies. Reduced from the randomized conflict run, seeds 4869
// and 6284 (`RandomConflictTests`).
@Suite("Conflicts keeping a to-many set", .serialized) struct ConflictToManyReconcileTests {
    /// Links or unlinks X and Q through Q's to-many relationship.
    private static func setLinked(_ on: Bool, _ kind: String, x: Book, q: NSManagedObject) {
        if kind == "authors" {
            if on { (q as! Author).$books.insert(x) } else { (q as! Author).$books.remove(x) }
        } else {
            if on { (q as! Shelf).$books.insert(x) } else { (q as! Shelf).$books.remove(x) }
        }
    }

    /// Whether X lists Q, and whether Q lists X.
    private static func links(_ kind: String, x: Book, q: NSManagedObject) -> (Bool, Bool) {
        kind == "authors"
            ? (x.authors.contains(q as! Author), (q as! Author).books.contains(x))
            : (x.shelf === q, (q as! Shelf).books.contains(x))
    }

    /// Context A links book X and Q (an author, "authors"; a shelf, "books") through Q's
    /// to-many, Q read before any link. Another coordinator links them too and saves; A
    /// refreshes X, which now lists Q at its newest row as A has it (X has no change of its
    /// own left in that relationship). A third context unlinks them and saves: Q's row is
    /// back to no books, so a conflict on Q finds its set unchanged in the store and keeps
    /// A's set, which lists X; X's row no longer lists Q.
    /// With `bookChanged`, A also retitles X (seed 4869: X takes the store's relationship,
    /// which drops Q); without, X's values equal its row after the refresh (seed 6284, where
    /// X was then left out of the save and only its stale copy listed Q). Either way X is
    /// saved and in conflict too: A edited it when it made the link.
    /// The save must not write Q listing X and leave X's row without Q ("authors"). In the
    /// "books" cases refreshing X, whose shelf is a to-one, brings Q up to date with it, so no
    /// conflict keeps Q's set; they guard the one-to-many side.
    @Test(arguments: ["authors", "books"], [false, true])
    func conflictKeepingAToManySetMakesItsTargetsAgree(kind: String, bookChanged: Bool) throws {
        for policy in [NSMergeByPropertyObjectTrumpMergePolicy, NSMergeByPropertyStoreTrumpMergePolicy] {
            let folder = try TemporaryFolder()
            let (c1, c2) = try twoCoordinators(on: folder)
            let seed = c1.newBackgroundContext()
            let (xID, qID) = try seed.performAndWait {
                let x = Book(context: seed)
                x.title = "X"
                let q: NSManagedObject = kind == "authors" ? Author(context: seed) : Shelf(context: seed)
                try seed.save()
                return (x.objectID, q.objectID)
            }
            let a = c1.newBackgroundContext()
            a.performAndWait {
                a.mergePolicy = policy
                let x = a.object(with: xID) as! Book, q = a.object(with: qID)
                _ = x.title
                Self.setLinked(true, kind, x: x, q: q)
            }
            let b = c2.newBackgroundContext()
            try b.performAndWait {
                Self.setLinked(true, kind, x: b.object(sameAs: xID, as: Book.self), q: b.object(sameAs: qID, as: NSManagedObject.self))
                try b.save()
            }
            a.performAndWait {
                let x = a.object(with: xID) as! Book
                a.refresh(x, mergeChanges: true)  // X at its newest row, which lists Q; Q still at its first
                if bookChanged { x.title = "retitled in A" }
            }
            let c = c2.newBackgroundContext()
            try c.performAndWait {
                Self.setLinked(false, kind, x: c.object(sameAs: xID, as: Book.self), q: c.object(sameAs: qID, as: NSManagedObject.self))
                try c.save()
            }
            try a.performAndWait { try a.save() }

            #expect(try storedGraphProblems(c1) == [], "\(policy)")
            let fresh = c1.newBackgroundContext()
            let (xLists, qLists) = fresh.performAndWait {
                let x = fresh.object(with: xID) as! Book, q = fresh.object(with: qID)
                return Self.links(kind, x: x, q: q)
            }
            #expect(xLists == qLists, "\(policy): X lists Q \(xLists), Q lists X \(qLists)")
            // Property-level trump: A added the link to Q's books; the store removed it from
            // X's authors. X is saved too, with or without its new title: A edited it (the
            // link's other end) and an edited object stays among those a save writes and
            // checks, as in Core Data, even when its values equal its row again. So the
            // store's removal stands under store trump, A's link under object trump.
            // A shelf is brought up to date with the book refreshed above (its to-one end),
            // so A has no change of its own left there: the store's removal stands.
            let linked = kind == "authors" && policy == NSMergeByPropertyObjectTrumpMergePolicy
            #expect(xLists == linked, "\(policy)")
        }
    }
}
