import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

/// A link edited in a context that holds one of its ends at an older version of its row (the
/// other coordinator changed it): the save checks both rows and writes both ends, whatever
/// the merge policy.
@Suite("Links saved with one end stale", .serialized) struct ConflictStaleEndTests {
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

    private static func staleCase(
        kind: String, via: String, policy: NSMergePolicy, initially: Bool, refreshX: Bool, finalLink: Bool
    ) throws -> String? {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (xID, qID) = try seed.performAndWait {
            let (x, q) = LinkPair.make(kind, in: seed)
            if initially { LinkPair.setLinked(true, kind, x: x, q: q, throughX: true) }
            try seed.save()
            return (x.objectID, q.objectID)
        }
        let a = c1.newBackgroundContext()
        a.mergePolicy = policy
        a.performAndWait {
            let x = a.object(with: xID), q = a.object(with: qID)
            _ = LinkPair.linkCount(kind, of: x, isX: true)
            _ = LinkPair.linkCount(kind, of: q, isX: false)
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            let x = b.object(sameAs: xID, as: NSManagedObject.self), q = b.object(sameAs: qID, as: NSManagedObject.self)
            LinkPair.setLinked(!initially, kind, x: x, q: q, throughX: true)
            try b.save()
        }
        let (outcome, memory): (String, String) = a.performAndWait {
            let x = a.object(with: xID), q = a.object(with: qID)
            a.refresh(refreshX ? x : q, mergeChanges: true)
            LinkPair.setLinked(finalLink, kind, x: x, q: q, throughX: via == "X")
            let had = a.hasChanges
            let outcome: String
            do { try a.save(); outcome = had ? "saved" : "nothing" } catch { outcome = "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
            return (outcome, "\(LinkPair.linkCount(kind, of: x, isX: true))/\(LinkPair.linkCount(kind, of: q, isX: false)) changes=\(a.hasChanges)")
        }
        let fresh = c1.newBackgroundContext()
        let stored = fresh.performAndWait {
            let x = fresh.object(with: xID), q = fresh.object(with: qID)
            return "\(LinkPair.linkCount(kind, of: x, isX: true))/\(LinkPair.linkCount(kind, of: q, isX: false)) changes=false"
        }
        let problems = try storedGraphProblems(c1)
        if !problems.isEmpty { return "\(outcome): store problems \(problems)" }
        if outcome == "saved" && memory != stored { return "saved; memory \(memory) vs store \(stored)" }
        if outcome == "saved", policy === NSErrorMergePolicy || policy === NSMergeByPropertyObjectTrumpMergePolicy || policy === NSOverwriteMergePolicy,
            stored != (finalLink ? "1/1 changes=false" : "0/0 changes=false")
        {
            return "saved but the store has \(stored), A asked for \(finalLink)"
        }
        if outcome.hasPrefix("threw") && policy !== NSErrorMergePolicy { return outcome }
        return nil
    }

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
    /// In the "authors" and "books" cases Q's row must not keep listing X; in the "shelf"
    /// cases refreshing a to-one brings its target up to date, and they guard that side.
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

    /// `removeAll()` on a changed shelf whose row another coordinator has since given a
    /// book empties what the shelf holds: removing the shelf's inserted book must not move
    /// the shelf onto its newest row mid-loop, which would leave the other coordinator's book
    /// in place (the loop runs over the set read before).
    @Test func removeAllOnAStaleChangedShelf() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (shelfID, b1ID, b2ID) = try seed.performAndWait {
            let s = Shelf(context: seed)
            let b1 = Book(context: seed)
            b1.shelf = s
            let b2 = Book(context: seed)
            try seed.save()
            return (s.objectID, b1.objectID, b2.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            let s = a.object(with: shelfID) as! Shelf
            _ = s.books.count
            let n = Book(context: a)
            s.$books.insert(n)
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            let s = b.object(sameAs: shelfID, as: Shelf.self)
            b.object(sameAs: b2ID, as: Book.self).shelf = s
            try b.save()
        }
        _ = b1ID
        let left: Int = a.performAndWait {
            let s = a.object(with: shelfID) as! Shelf
            s.$books.removeAll()
            let left = s.books.count
            try? a.save()
            return left
        }
        #expect(left == 0)
        #expect(try storedGraphProblems(c1) == [])
    }

    /// Setting a to-many relationship on a stale changed shelf must leave exactly the set
    /// (same cause as `removeAllOnAStaleChangedShelf`).
    @Test func settingToManyOnAStaleChangedShelf() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (shelfID, b2ID) = try seed.performAndWait {
            let s = Shelf(context: seed)
            let b1 = Book(context: seed)
            b1.shelf = s
            let b2 = Book(context: seed)
            try seed.save()
            return (s.objectID, b2.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            let s = a.object(with: shelfID) as! Shelf
            s.$books.insert(Book(context: a))
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            b.object(sameAs: b2ID, as: Book.self).shelf = b.object(sameAs: shelfID, as: Shelf.self)
            try b.save()
        }
        let matches: Bool = a.performAndWait {
            let s = a.object(with: shelfID) as! Shelf
            let x = Book(context: a)
            s.books = [x]
            let matches = s.books == [x]
            try? a.save()
            return matches
        }
        #expect(matches)
        #expect(try storedGraphProblems(c1) == [])
    }

    /// With the default `NSErrorMergePolicy`, a save of an object that another coordinator
    /// changed since it was read fails with a merge conflict (133020), as in Core Data.
    /// Adding and then removing an inserted book must not move the shelf onto its newest
    /// row, where its own name change would be kept on top and the save would silently
    /// overwrite the other coordinator's name.
    @Test func aLinkEditDoesNotSwallowAnAttributeConflict() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let shelfID = try seed.performAndWait {
            let s = Shelf(context: seed)
            s.name = "orig"
            try seed.save()
            return s.objectID
        }
        let a = c1.newBackgroundContext()
        a.performAndWait { (a.object(with: shelfID) as! Shelf).name = "A" }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            b.object(sameAs: shelfID, as: Shelf.self).name = "B"
            try b.save()
        }
        let code: Int? = a.performAndWait {
            let s = a.object(with: shelfID) as! Shelf
            let n = Book(context: a)
            s.$books.insert(n)
            s.$books.remove(n)
            a.delete(n)
            do {
                try a.save()
                return nil
            } catch {
                return (error as NSError).code
            }
        }
        #expect(code == NSManagedObjectMergeError)
    }

    // MARK: Context level

    /// Context A holds shelf S refreshed (no books) and book X stale (still on S: another
    /// coordinator took X off S). A adds X to S through S. Either the save reports the
    /// conflict on X, or the link is stored; a save that succeeds while dropping the
    /// link silently is lost data.
    @Test(arguments: [NSErrorMergePolicy, NSMergeByPropertyObjectTrumpMergePolicy])
    func addingThroughTheDerivedEndWithAStaleOwnerIsNotLost(policy: NSMergePolicy) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let (sID, xID) = try Fixtures.seedShelfHoldingABook(c1)
        let a = c1.newBackgroundContext()
        a.mergePolicy = policy
        a.performAndWait {
            let s = a.object(with: sID) as! Shelf, x = a.object(with: xID) as! Book
            _ = s.books.count
            _ = x.title
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            b.object(sameAs: xID, as: Book.self).shelf = nil
            try b.save()
        }
        let (outcome, memory, hasChanges): (String, String, Bool) = a.performAndWait {
            let s = a.object(with: sID) as! Shelf, x = a.object(with: xID) as! Book
            a.refresh(s, mergeChanges: true)
            s.$books.insert(x)
            let updated = a.updatedObjects.map { ($0 as? Book)?.title ?? ($0 as? Shelf)?.name ?? "?" }.sorted()
            let outcome: String
            do { try a.save(); outcome = "saved (updated \(updated))" } catch { outcome = "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
            return (outcome, "S.books=\(s.books.count) X.shelf=\(x.shelf == nil ? "nil" : "S")", a.hasChanges)
        }
        let fresh = c1.newBackgroundContext()
        let stored = fresh.performAndWait {
            let s = fresh.object(with: sID) as! Shelf, x = fresh.object(with: xID) as! Book
            return "S.books=\(s.books.count) X.shelf=\(x.shelf == nil ? "nil" : "S")"
        }
        #expect(try storedGraphProblems(c1) == [])
        if outcome.hasPrefix("saved") {
            #expect(stored == "S.books=1 X.shelf=S", "\(outcome); in A: \(memory); hasChanges \(hasChanges)")
            #expect(memory == stored, "\(outcome); A's memory disagrees with the store")
        }
    }

    /// One-to-one through contexts: another coordinator moves cover C from book B2 to B1.
    /// Context A, which read all three before, refreshes B2 (no cover now; C still stale,
    /// naming B2) and gives C back to B2. Either a conflict is reported or the store holds
    /// C on B2 alone, with B1 letting go.
    @Test(arguments: [NSErrorMergePolicy, NSMergeByPropertyObjectTrumpMergePolicy], ["B2", "C"])
    func oneToOneTakenBackWithAStaleEnd(policy: NSMergePolicy, refresh: String) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (b1ID, b2ID, cID) = try seed.performAndWait {
            let b1 = Book(context: seed), b2 = Book(context: seed), c = Cover(context: seed)
            b1.title = "B1"
            b2.title = "B2"
            b2.cover = c
            try seed.save()
            return (b1.objectID, b2.objectID, c.objectID)
        }
        let a = c1.newBackgroundContext()
        a.mergePolicy = policy
        a.performAndWait {
            for id in [b1ID, b2ID, cID] { _ = a.object(with: id).value(forKey: id == cID ? "color" : "title") }
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            b.object(sameAs: b1ID, as: Book.self).cover = b.object(sameAs: cID, as: Cover.self)
            try b.save()
        }
        var info: [String] = []
        let outcome: String = a.performAndWait {
            let b2 = a.object(with: b2ID) as! Book, c = a.object(with: cID) as! Cover
            a.refresh(refresh == "B2" ? b2 : c, mergeChanges: true)
            info.append("before: B2.cover=\(b2.cover == nil ? "nil" : "C") C.book=\(c.book?.title ?? "nil") updated=\(a.updatedObjects.count)")
            b2.cover = c
            info.append("updated=\(a.updatedObjects.compactMap { ($0 as? Book)?.title ?? ($0 is Cover ? "C" : nil) }.sorted())")
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        #expect(try storedGraphProblems(c1) == [], "\(outcome) \(info)")
    }

    /// A matrix over one-to-one (cover), many-to-many (authors) and one-to-many (books /
    /// shelf): context A and another coordinator both read X and Q (linked or not); the other
    /// coordinator flips the link and saves; A refreshes one end and sets the link again
    /// (either way), through X or Q. After A's save (or its failure) the store has no
    /// one-sided link, and when A saved, A's memory agrees with a fresh context.
    @Test(arguments: ["cover", "authors", "books", "shelf"], ["X", "Q"])
    func unlinkingWithAStaleEndUnderEveryPolicy(kind: String, via: String) throws {
        var failures: [String] = []
        let policies: [(String, NSMergePolicy)] = [
            ("error", NSErrorMergePolicy), ("objectTrump", NSMergeByPropertyObjectTrumpMergePolicy),
            ("storeTrump", NSMergeByPropertyStoreTrumpMergePolicy), ("overwrite", NSOverwriteMergePolicy),
            ("rollback", NSRollbackMergePolicy),
        ]
        for (pname, policy) in policies {
            for initially in [false, true] {
                for refreshX in [true, false] {
                    for finalLink in [false, true] {
                        let label = "\(kind) via \(via) \(pname) initially=\(initially) refresh=\(refreshX ? "X" : "Q") final=\(finalLink)"
                        if let f = try Self.staleCase(kind: kind, via: via, policy: policy, initially: initially, refreshX: refreshX, finalLink: finalLink) {
                            failures.append("\(label): \(f)")
                        }
                    }
                }
            }
        }
        #expect(failures == [], "\(failures.joined(separator: "\n"))")
    }
}
