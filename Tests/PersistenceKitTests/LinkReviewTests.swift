import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// Found by reviewing `LinkKeeper` (the stores keeping both ends of each link) and the save
// changes that go with it: one-to-one take-overs, several claims on one derived to-one, a
// link to a row deleted in the same commit, a derived end listing a row deleted under "no
// action", self-inverse relationships, stale ends through contexts, and rows the store
// writes besides a save's own. The first four failed before their fixes.

final class LRPerson: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "friends") var friends: Set<LRPerson>
    @Relationship(inverse: "spouse") var spouse: LRPerson?
}

final class LRParent: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "parent") var children: Set<LRChild>
}

final class LRChild: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "children", deleteRule: .noActionDeleteRule) var parent: LRParent?
}

@Suite(.serialized) struct LinkReviewTests {
    typealias Bench = StoreLinkTests.Bench

    // MARK: Store level ("no commit can leave a link on one side only, whatever the contexts send")

    /// One-to-one (Book.cover owns): Book 2 takes Cover 1 from Book 1. The cover's derived
    /// end moves to Book 2; Book 1's owning end must let go of the cover.
    @Test(arguments: ["file", "memory"])
    func oneToOneTakeOverReleasesThePreviousOwner(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [
            b.row("Book", 1, ["title": .string("B1"), "cover": .reference(b.id("Cover", 1))]),
            b.row("Cover", 1, ["color": .string("red"), "book": .reference(b.id("Book", 1))]),
            b.row("Book", 2, ["title": .string("B2")]),
        ])
        #expect(try storedGraphProblems(b.store, b.model) == [])
        try b.commit(updates: [b.row("Book", 2, version: 1, ["title": .string("B2"), "cover": .reference(b.id("Cover", 1))])])
        #expect(try storedGraphProblems(b.store, b.model) == [], "\(kind)")
        #expect(try b.value("Cover", 1, "book") == .reference(b.id("Book", 2)))
        #expect(try b.value("Book", 1, "cover") == .null)
    }

    /// Two owning ends in one transaction claim the same one-to-one target: the derived
    /// end takes one (the larger row) and the other owner lets go (it kept pointing at the
    /// target, one-sided, before the fix).
    @Test(arguments: ["file", "memory"])
    func twoOwnersOfOneToOneInOneTransaction(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [
            b.row("Cover", 1, ["color": .string("red")]),
            b.row("Book", 1, ["title": .string("B1"), "cover": .reference(b.id("Cover", 1))]),
            b.row("Book", 2, ["title": .string("B2"), "cover": .reference(b.id("Cover", 1))]),
        ])
        #expect(try storedGraphProblems(b.store, b.model) == [], "\(kind)")
    }

    /// A row linked to a row the same transaction deletes: the link is dropped (it was
    /// stored pointing at the missing row before the fix).
    @Test(arguments: ["file", "memory"])
    func linkToARowDeletedInTheSameTransaction(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")]), b.row("Book", 1, ["title": .string("B")])])
        try b.commit(
            updates: [b.row("Book", 1, version: 1, ["title": .string("B"), "shelf": .reference(b.id("Shelf", 1))])],
            deletes: [(b.id("Shelf", 1), 1)])
        #expect(try storedGraphProblems(b.store, b.model) == [], "\(kind)")
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
        let (sID, xID) = try Self.seedShelfHoldingABook(c1)
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

    /// Self-inverse many-to-many and one-to-one (a relationship that is its own inverse).
    @Test(arguments: ["file", "memory"])
    func selfInverseRelationshipsKeepBothEnds(kind: String) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [LRPerson.self])
        let container = try Self.container(kind, model: model, at: folder)
        let ctx = container.newBackgroundContext()
        let ids = try ctx.performAndWait {
            let p = (0..<4).map { i -> LRPerson in
                let o = LRPerson(context: ctx)
                o.name = "P\(i)"
                return o
            }
            p[0].$friends.insert(p[1])
            p[0].$friends.insert(p[2])
            p[2].$friends.insert(p[3])
            p[0].spouse = p[1]
            try ctx.save()
            p[2].spouse = p[1]  // takes p1 from p0
            p[0].$friends.remove(p[1])
            p[3].$friends.insert(p[3])
            try ctx.save()
            return p.map(\.objectID)
        }
        let store = try container.persistentStoreCoordinator.primaryStore(for: "check")
        #expect(try storedGraphProblems(store, model) == [], "\(kind)")
        let fresh = container.newBackgroundContext()
        let summary = fresh.performAndWait {
            ids.map { id in
                let o = fresh.object(with: id) as! LRPerson
                return "\(o.name):\(o.friends.map(\.name).sorted().joined(separator: ","))/\(o.spouse?.name ?? "-")"
            }
        }
        #expect(summary == ["P0:P2/-", "P1:/P2", "P2:P0,P3/P1", "P3:P2,P3/-"], "\(kind)")
        try ctx.performAndWait {
            ctx.delete(ctx.object(with: ids[2]))
            try ctx.save()
        }
        #expect(try storedGraphProblems(store, model) == [], "\(kind) after delete")
    }

    /// No-action rule on the to-one (owning) end: deleting the child must not leave the
    /// parent's derived set listing it for good. Before the fix the set kept the dead row
    /// and, derived ends being the store's to keep, a save removing it was ignored; now the
    /// deletion takes it out of derived ends whatever the rule (as a list a SQL store
    /// computes from foreign keys), and removing it explicitly saves cleanly too.
    @Test(arguments: ["file", "memory"])
    func aDanglingEntryCanBeRemovedFromTheDerivedEnd(kind: String) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [LRParent.self, LRChild.self])
        let container = try Self.container(kind, model: model, at: folder)
        let ctx = container.newBackgroundContext()
        let (pID, cID) = try ctx.performAndWait {
            let p = LRParent(context: ctx)
            p.name = "P"
            let c = LRChild(context: ctx)
            c.name = "C"
            c.parent = p
            try ctx.save()
            return (p.objectID, c.objectID)
        }
        try ctx.performAndWait {
            ctx.delete(ctx.object(with: cID))
            try ctx.save()
        }
        let store = try container.persistentStoreCoordinator.primaryStore(for: "check")
        let afterDelete = try storedGraphProblems(store, model)
        // Clean up explicitly through the set.
        let ctx2 = container.newBackgroundContext()
        let inMemory: Int = try ctx2.performAndWait {
            let p = ctx2.object(with: pID) as! LRParent
            let stale = p.children
            for c in stale { p.$children.remove(c) }
            p.name = "P2"
            try ctx2.save()
            return p.children.count
        }
        let after = try storedGraphProblems(store, model)
        #expect(after == [], "\(kind): after delete \(afterDelete); after explicit removal \(after); in memory \(inMemory)")
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

    /// A row the store writes besides the transaction's (the derived end of a link made
    /// through a refreshed owner whose target is stale here and already listed it): the
    /// saving context announces it, takes it, and a sibling context merges it.
    @Test func extraRowsAreAnnouncedAndMerged() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let (sID, xID) = try Self.seedShelfHoldingABook(c1)
        let a = c1.newBackgroundContext()
        let sibling = c1.newBackgroundContext()
        sibling.automaticallyMergesChangesFromParent = true
        for ctx in [a, sibling] {
            ctx.performAndWait {
                _ = (ctx.object(with: sID) as! Shelf).books.count
                _ = (ctx.object(with: xID) as! Book).shelf
            }
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            b.object(sameAs: xID, as: Book.self).shelf = nil
            try b.save()
        }
        let updated = TestMutex<[String]>([])
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: a, queue: nil) { n in
            let set = (n.userInfo?[NSUpdatedObjectsKey] as? Set<NSManagedObject>) ?? []
            let names = set.map { $0.entity.name }.sorted()
            updated.withLock { $0 = names }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let (outcome, memory, hasChanges, updatedCount): (String, String, Bool, Int) = a.performAndWait {
            let s = a.object(with: sID) as! Shelf, x = a.object(with: xID) as! Book
            a.refresh(x, mergeChanges: true)
            x.shelf = s
            let outcome: String
            do { try a.save(); outcome = "saved" } catch { outcome = "threw \(error)" }
            return (outcome, "S.books=\(s.books.count) X.shelf=\(x.shelf == nil ? "nil" : "S")", a.hasChanges, a.updatedObjects.count)
        }
        #expect(try storedGraphProblems(c1) == [])
        #expect(outcome == "saved")
        #expect(memory == "S.books=1 X.shelf=S")
        #expect(!hasChanges && updatedCount == 0)
        let announced = updated.withLock { $0 }
        #expect(announced == ["Book", "Shelf"], "did-save updated: \(announced)")
        let siblingView = sibling.performAndWait {
            let s = sibling.object(with: sID) as! Shelf, x = sibling.object(with: xID) as! Book
            return "S.books=\(s.books.count) X.shelf=\(x.shelf == nil ? "nil" : "S") v\(s.snapshot?.version ?? -1)"
        }
        let storedVersion = try c1.persistentStoreCoordinator.primaryStore(for: "v").fetchRow(sID.rowID!)?.version
        #expect(siblingView == "S.books=1 X.shelf=S v\(storedVersion ?? -2)")
    }

    /// A matrix over one-to-one (cover), many-to-many (authors) and one-to-many (books /
    /// shelf): context A and another coordinator both read X and Q (linked or not); the other
    /// coordinator flips the link and saves; A refreshes one end and sets the link again
    /// (either way), through X or Q. After A's save (or its failure) the store has no
    /// one-sided link, and when A saved, A's memory agrees with a fresh context.
    @Test(arguments: ["cover", "authors", "books", "shelf"], ["X", "Q"])
    func staleEndMatrix(kind: String, via: String) throws {
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



    /// An inserted object whose relationship the store changes (here: a primitive set of
    /// the owning end, which like Core Data's keeps no inverse) takes the stored value in
    /// `finishSave` before the objects inserted after it have their permanent IDs: the
    /// decoded value must still name those objects, not new faults for their rows.
    @Test(arguments: ["file", "memory"])
    func anInsertTakingStoredLinksNamesTheLaterInsertsThemselves(kind: String) throws {
        let folder = try TemporaryFolder()
        let container = kind == "file" ? try FSSupport.container(at: folder.storeURL, name: "uniq") : try Fixtures.container()
        let ctx = container.newBackgroundContext()
        let result: String = try ctx.performAndWait {
            let n = Shelf(context: ctx)
            n.name = "N"
            let b = Book(context: ctx)
            b.title = "B"
            b.setPrimitiveValue(n, forKey: "shelf")
            try ctx.save()
            let listed = n.primitiveValue(forKey: "books") as? Set<Book> ?? []
            let same = listed.contains { $0 === b }
            let registered = ctx.registeredObject(for: b.objectID) === b
            return "count=\(listed.count) sameObject=\(same) bRegistered=\(registered) invalidated=\(listed.map { $0.managedObjectContext == nil })"
        }
        #expect(result == "count=1 sameObject=true bRegistered=true invalidated=[false]", "\(kind)")
    }

    /// Two books given the same cover by primitive setters (no inverse upkeep): the store's
    /// derived end can list one of them only, and the other lets go (before the fix it kept
    /// a one-sided link).
    @Test func twoPrimitiveOwnersOfOneCover() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, name: "prim")
        let ctx = container.newBackgroundContext()
        try ctx.performAndWait {
            let c = Cover(context: ctx)
            let b1 = Book(context: ctx), b2 = Book(context: ctx)
            b1.setPrimitiveValue(c, forKey: "cover")
            b2.setPrimitiveValue(c, forKey: "cover")
            try ctx.save()
        }
        #expect(try storedGraphProblems(container) == [])
    }

    /// Saves shelf "S" holding book "X" through `container`; returns their IDs.
    private static func seedShelfHoldingABook(_ container: NSPersistentContainer) throws -> (NSManagedObjectID, NSManagedObjectID) {
        let seed = container.newBackgroundContext()
        return try seed.performAndWait {
            let s = Shelf(context: seed)
            s.name = "S"
            let x = Book(context: seed)
            x.title = "X"
            x.shelf = s
            try seed.save()
            return (s.objectID, x.objectID)
        }
    }

    /// A loaded container for `model`: a file store in `folder` ("file") or an in-memory
    /// store ("memory").
    private static func container(_ kind: String, model: NSManagedObjectModel, at folder: borrowing TemporaryFolder) throws
        -> NSPersistentContainer
    {
        if kind == "file" { return try FSSupport.container(at: folder.storeURL, model: model, name: kind) }
        let container = NSPersistentContainer(name: kind, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let failure = TestMutex<(any Error)?>(nil)
        container.loadPersistentStores { _, error in failure.withLock { $0 = error } }  // synchronous by default
        if let error = failure.withLock({ $0 }) { throw error }
        return container
    }
}
