import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// A link edited while one of its ends is a changed object read before another coordinator
// saved the same link. The edit may leave that end equal to its old snapshot; it must
// still reach the end's row, or the file store (which keeps both ends of a link in rows)
// holds a link one side denies. Fixed by keeping every edited object among those a save
// writes and checks (as Core Data keeps it in `updatedObjects`), even when its values equal
// its snapshot again: the stale end's save then meets the newer row as a conflict. (Two
// earlier attempts were reverted: catching the end up at the edit hid a conflict on its
// other values from the error policy; writing it only when its row was newer broke a
// randomized conflict seed.)

@Suite(.serialized) struct ConflictStaleEndTests {
    /// Context A links X and Q (both loaded). Another coordinator links them too and saves.
    /// A refreshes X (now at its newest version; Q still at its first) and unlinks them,
    /// through X or through Q. Under the error policy A's save may fail with the conflict
    /// on Q (changed on both sides, as Core Data reports it) and then changes nothing; under
    /// a by-property policy it saves. Either way every stored link is listed by both ends,
    /// and a fresh context sees the two ends agree.
    ///
    /// `kind` names X's relationship to Q: "authors" (many-to-many, X a book and Q an
    /// author), "books" (one-to-many from the to-many side, X a shelf and Q a book), "shelf"
    /// (one-to-many from the to-one side, X a book and Q a shelf).
    /// Until the fix, the "authors" and "books" cases left Q's row listing X; the "shelf"
    /// cases passed (refreshing a to-one brings its target up to date) and guard that side.
    @Test(arguments: ["authors", "books", "shelf"], ["X", "Q"])
    func unlinkAfterRefreshingOneEndOfALinkSavedElsewhere(kind: String, via: String) throws {
        for policy in [NSErrorMergePolicy, NSMergeByPropertyObjectTrumpMergePolicy] {
            try Self.unlinkAfterRefreshing(kind: kind, via: via, policy: policy)
        }
    }

    /// An object whose edits leave its values as they were read (set to the same name, or
    /// changed and changed back) is still an edited object: it is in `updatedObjects`, the
    /// save checks it against the store, and a newer row is a conflict the error policy
    /// reports — as Core Data compares each edited object's snapshot with the store.
    @Test(arguments: ["same", "back"])
    func anEditThatRestoresTheValuesIsStillCheckedAtSave(edit: String) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let id = try seed.performAndWait {
            let a = Author(context: seed)
            a.name = "Ann"
            try seed.save()
            return a.objectID
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            let author = a.object(with: id) as! Author
            if edit == "same" {
                author.name = "Ann"
            } else {
                author.name = "Bob"
                author.name = "Ann"
            }
            #expect(a.updatedObjects == [author] && !author.hasPersistentChangedValues)
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            b.object(sameAs: id, as: Author.self).name = "Cy"
            try b.save()
        }
        let error = a.performAndWait { () -> CoreDataError? in
            do {
                try a.save()
                return nil
            } catch {
                return error as? CoreDataError
            }
        }
        #expect(error?.code == .managedObjectMerge, "\(edit): \(String(describing: error))")
        #expect(error?.conflicts.map(\.objectID) == [id])
        // Nothing was written: the other coordinator's name stands.
        let fresh = c1.newBackgroundContext()
        #expect(fresh.performAndWait { (fresh.object(with: id) as! Author).name } == "Cy")
    }

    private static func unlinkAfterRefreshing(kind: String, via: String, policy: NSMergePolicy) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (xID, qID) = try seed.performAndWait {
            let (x, q) = LinkPair.make(kind, in: seed)
            try seed.save()
            return (x.objectID, q.objectID)
        }
        let a = c1.newBackgroundContext()
        a.mergePolicy = policy
        a.performAndWait {
            let x = a.object(with: xID), q = a.object(with: qID)
            LinkPair.setLinked(true, kind, x: x, q: q, throughX: true)
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            let x = b.object(sameAs: xID, as: NSManagedObject.self), q = b.object(sameAs: qID, as: NSManagedObject.self)
            LinkPair.setLinked(true, kind, x: x, q: q, throughX: true)
            try b.save()
        }
        let outcome: String = a.performAndWait {
            let x = a.object(with: xID), q = a.object(with: qID)
            a.refresh(x, mergeChanges: true)  // X at its newest version; Q still at its first
            LinkPair.setLinked(false, kind, x: x, q: q, throughX: via == "X")
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        if policy === NSErrorMergePolicy {
            #expect(outcome == "saved" || outcome == "threw 133020", "\(kind) via \(via): \(outcome)")
        } else {
            #expect(outcome == "saved", "\(kind) via \(via): \(outcome)")
        }
        let fresh = c1.newBackgroundContext()
        let (xLinks, qLinks) = fresh.performAndWait {
            let x = fresh.object(with: xID), q = fresh.object(with: qID)
            return (LinkPair.linkCount(kind, of: x, isX: true), LinkPair.linkCount(kind, of: q, isX: false))
        }
        let problems = try storedGraphProblems(c1)
        #expect(problems == [], "\(kind) via \(via), \(policy)")
        // Both ends agree. A failed save leaves the other coordinator's link.
        #expect(xLinks == qLinks, "\(kind) via \(via), \(policy): \(xLinks) \(qLinks)")
        if outcome != "saved" { #expect(xLinks == 1) }
    }
}
