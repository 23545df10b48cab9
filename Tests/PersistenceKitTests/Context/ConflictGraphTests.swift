import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// Two coordinators on one file store, conflicts under every merge policy, and merges into
// objects deleted here: the stored object graph must stay whole (every reference names a
// row, and its inverse lists the source back).

/// Store-level check of the object graph: every reference names an existing row, and the
/// inverse of every reference lists the source back. Returns problems as strings.
func storedGraphProblems(_ container: NSPersistentContainer) throws -> [String] {
    let coordinator = container.persistentStoreCoordinator
    return try storedGraphProblems(coordinator.primaryStore(for: "check"), coordinator.managedObjectModel)
}

/// The same check on `store`'s rows, read through the store alone.
func storedGraphProblems(_ store: any PersistentStore, _ model: NSManagedObjectModel) throws -> [String] {
    let rows = try FSSupport.allRows(store, model)
    func refs(_ v: StoreValue) -> [StoreRowID] {
        switch v {
        case let .reference(r): [r]
        case let .references(rs): rs
        default: []
        }
    }
    var problems: [String] = []
    for (id, row) in rows {
        guard let e = model.entity(at: id.entity) else { continue }
        for case let rel as NSRelationshipDescription in e.properties {
            guard let inv = rel.inverseRelationship else { continue }
            for t in refs(row.value(at: rel.index)) {
                guard let target = rows[t] else {
                    problems.append("\(e.name)#\(id.primaryKey).\(rel.name) -> missing \(t)")
                    continue
                }
                if !refs(target.value(at: inv.index)).contains(id) {
                    problems.append("\(e.name)#\(id.primaryKey).\(rel.name) -> \(t), whose \(inv.name) does not list it back")
                }
            }
        }
    }
    return problems.sorted()
}

/// Saves `context` (on its queue), then refreshes every object with merging and saves
/// again: "saved, saved", or "threw <code>, saved" when the first save met a conflict.
func saveRefreshingOnConflict(_ context: NSManagedObjectContext) -> String {
    var outcome = ""
    do { try context.save(); outcome = "saved" } catch { outcome = "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
    context.refreshAllObjects()
    do { try context.save(); outcome += ", saved" } catch { outcome += ", threw again: \(error)" }
    return outcome
}

/// The merge policies by number: error, object trump, store trump, overwrite, rollback.
func policyNumbered(_ i: Int) -> NSMergePolicy {
    [NSErrorMergePolicy, NSMergeByPropertyObjectTrumpMergePolicy, NSMergeByPropertyStoreTrumpMergePolicy, NSOverwriteMergePolicy, NSRollbackMergePolicy][i]
}

/// Two containers — two coordinators — on one new file store in `folder`, as the conflict
/// tests use them: each side saves what the other has not merged.
func twoCoordinators(on folder: borrowing TemporaryFolder) throws -> (NSPersistentContainer, NSPersistentContainer) {
    let model = try Fixtures.model()
    return (
        try FSSupport.container(at: folder.storeURL, model: model, name: "c1"),
        try FSSupport.container(at: folder.storeURL, model: model, name: "c2")
    )
}

extension NSManagedObjectContext {
    /// The object that `id`, made by another coordinator of the same store, names in this
    /// context (through its URI). Traps with the ID when it does not resolve or is not a `T`.
    func object<T: NSManagedObject>(sameAs id: NSManagedObjectID, as _: T.Type) -> T {
        guard let mine = persistentStoreCoordinator?.managedObjectID(forURIRepresentation: id.uriRepresentation()),
            let object = self.object(with: mine) as? T
        else { preconditionFailure("\(id) does not name a \(T.self) in context \(self)") }
        return object
    }
}

@Suite("Conflicts between two coordinators keep the graph whole", .serialized) struct ConflictGraphTests {
    /// A deletes a book (nullify); B, on another coordinator, meanwhile adds an author to the
    /// same book and saves. A saves with a merge policy: the delete wins over the book's row,
    /// so the author must not keep listing a deleted book.
    @Test(arguments: ["objectTrump", "storeTrump", "overwrite"])
    func deleteConflictWithAddedManyToManyLink(policy: String) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let bookID = try seed.performAndWait {
            let b = Book(context: seed)
            b.title = "X"
            try seed.save()
            return b.objectID
        }
        let a = c1.newBackgroundContext()
        let b = c2.newBackgroundContext()
        a.performAndWait {
            a.mergePolicy = switch policy {
            case "objectTrump": NSMergeByPropertyObjectTrumpMergePolicy
            case "storeTrump": NSMergeByPropertyStoreTrumpMergePolicy
            default: NSOverwriteMergePolicy
            }
            let book = a.object(with: bookID) as! Book
            _ = book.title
            a.delete(book)
            a.processPendingChanges()
        }
        try b.performAndWait {
            let book = b.object(with: bookID) as! Book
            let z = Author(context: b)
            z.name = "Z"
            book.$authors.insert(z)
            try b.save()
        }
        try a.performAndWait { try a.save() }
        let fresh = c1.newBackgroundContext()
        let (books, authorBooks) = try fresh.performAndWait {
            (try fresh.count(for: Book.fetchRequest()), try fresh.fetch(Author.fetchRequest()).map { $0.$books.count })
        }
        #expect(books == 0)
        #expect(authorBooks == [0])
        #expect(try storedGraphProblems(c1) == [])
    }

    /// A has shelves s1, s2, s3 and the book (in s1) loaded. B moves the book to s2 and
    /// saves. A moves it to s3 and saves with object trump (A's value wins): s2 must no
    /// longer list the book.
    @Test(arguments: ["objectTrump", "merge", "remoteOrdered"])
    func toOneMoveAgainstLoadedStaleShelf(mode: String) throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let c1 = try FSSupport.container(at: folder.storeURL, model: model, name: "c1")
        let seed = c1.newBackgroundContext()
        let (bookID, s1, s2, s3) = try seed.performAndWait {
            let shelves = ["s1", "s2", "s3"].map { n in
                let s = Shelf(context: seed)
                s.name = n
                return s
            }
            let b = Book(context: seed)
            b.title = "B"
            b.shelf = shelves[0]
            try seed.save()
            return (b.objectID, shelves[0].objectID, shelves[1].objectID, shelves[2].objectID)
        }
        let a = c1.newBackgroundContext()
        let b = c1.newBackgroundContext()
        a.performAndWait {
            a.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
            for id in [s1, s2, s3] { _ = (a.object(with: id) as! Shelf).books.count }
            _ = (a.object(with: bookID) as! Book).shelf
        }
        let saved = TestMutex<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: b, queue: nil) { n in
            saved.withLock { $0 = n }
        }
        try b.performAndWait {
            (b.object(with: bookID) as! Book).shelf = (b.object(with: s2) as! Shelf)
            try b.save()
        }
        NotificationCenter.default.removeObserver(token)
        a.performAndWait {
            (a.object(with: bookID) as! Book).shelf = (a.object(with: s3) as! Shelf)
            if mode == "merge" { a.mergeChanges(fromContextDidSave: saved.withLock { $0 }!) }
        }
        if mode == "remoteOrdered" {
            NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSUpdatedObjectIDsKey: [bookID, s1, s2] as [Any]], into: [a])
        }
        try a.performAndWait {
            try a.save()
        }
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let lists = try fresh.performAndWait {
            try fresh.fetch(Shelf.fetchRequest()).map { "\($0.name):\($0.books.count)" }.sorted()
        }
        #expect(lists == ["s1:0", "s2:0", "s3:1"])
    }
}

@Suite("Conflict resolution touching a deleted fault", .serialized) struct ConflictStaleFaultTests {
    /// Book B has cover C. Context `mine` loads B (C stays an unfired fault). Another context,
    /// on a second coordinator of the same store, deletes C and saves (B.cover becomes nil).
    /// `mine` retitles B and saves with a merge policy: the save must not trap on C.
    @Test(arguments: [1, 2, 3, 4])
    func conflictResolutionTouchesDeletedFault(policyIndex: Int) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (bookID, coverID) = try seed.performAndWait {
            let b = Book(context: seed)
            b.title = "B"
            let c = Cover(context: seed)
            c.book = b
            try seed.save()
            return (b.objectID, c.objectID)
        }
        let mine = c1.newBackgroundContext()
        let other = c2.newBackgroundContext()
        mine.performAndWait {
            mine.mergePolicy = policyNumbered(policyIndex)
            _ = (mine.object(with: bookID) as! Book).cover  // C: an unfired fault
        }
        try other.performAndWait {
            other.delete(other.object(with: coverID))
            try other.save()
        }
        let outcome: String = mine.performAndWait {
            (mine.object(with: bookID) as! Book).title = "B2"
            do { try mine.save(); return "saved" } catch { return "threw \(error)" }
        }
        print("policy \(policyIndex): \(outcome)")
        #expect(try storedGraphProblems(c1) == [])
    }
}

@Suite("Moving out of a stale shelf", .serialized) struct ConflictStaleInverseTests {
    /// Context A loaded shelf s1 while it was empty. B (another coordinator on the same file
    /// store) puts a new book in s1 and saves. A fetches the book (shelf s1) and moves it to
    /// s2, then saves with the default error policy. The store must not end up with s1
    /// listing a book whose shelf is s2 (either A's save fixes s1, or it reports a conflict).
    @Test func movingABookOutOfAStaleShelfLeavesItListed() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (s1, s2) = try seed.performAndWait {
            let a = Shelf(context: seed)
            a.name = "s1"
            let b = Shelf(context: seed)
            b.name = "s2"
            try seed.save()
            return (a.objectID, b.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait { _ = (a.object(with: s1) as! Shelf).books }  // s1 loaded: no books
        let b = c2.newBackgroundContext()
        let bookURI = try b.performAndWait {
            let book = Book(context: b)
            book.title = "new"
            book.shelf = b.object(sameAs: s1, as: Shelf.self)
            try b.save()
            return book.objectID.uriRepresentation()
        }
        let outcome: String = a.performAndWait {
            let book = try! a.existingObject(with: c1.persistentStoreCoordinator.managedObjectID(forURIRepresentation: bookURI)!) as! Book
            #expect(book.shelf?.objectID == s1)
            book.shelf = (a.object(with: s2) as! Shelf)
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        print("outcome: \(outcome)")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let lists = try fresh.performAndWait {
            try fresh.fetch(Shelf.fetchRequest()).map { "\($0.name):\($0.books.map(\.title).sorted())" }.sorted()
        }
        #expect(lists == ["s1:[]", "s2:[\"new\"]"] || lists == ["s1:[\"new\"]", "s2:[]"])
    }
}

@Suite("Delete conflicts against a moved to-one", .serialized) struct ConflictDeleteTests {
    /// Book p is in s1. A deletes p (nullify). B, on another coordinator, moves p to s2 and
    /// saves. A saves with a merge policy that keeps its deletion: no shelf may list p.
    @Test(arguments: [1, 2, 3])
    func deleteConflictWithMovedToOne(policyIndex: Int) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (bookID, s2) = try seed.performAndWait {
            let a = Shelf(context: seed)
            a.name = "s1"
            let b = Shelf(context: seed)
            b.name = "s2"
            let p = Book(context: seed)
            p.title = "p"
            p.shelf = a
            try seed.save()
            return (p.objectID, b.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            a.mergePolicy = policyNumbered(policyIndex)
            a.delete(a.object(with: bookID))
            a.processPendingChanges()
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            (b.object(with: bookID) as! Book).shelf = (b.object(with: s2) as! Shelf)
            try b.save()
        }
        let outcome: String = a.performAndWait {
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        print("policy \(policyIndex) outcome: \(outcome)")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let (books, listed) = try fresh.performAndWait {
            (try fresh.count(for: Book.fetchRequest()), try fresh.fetch(Shelf.fetchRequest()).map { $0.$books.count }.reduce(0, +))
        }
        #expect(books == 0)
        #expect(listed == 0)
    }
}

@Suite("Conflicts with a pending deletion", .serialized) struct ConflictPendingDeleteTests {
    /// A deletes shelf S (cascade to its books; it has none yet). B, on another coordinator,
    /// puts a new book in S and saves. A merges B's save (by object IDs), then saves: the
    /// store must not keep a book whose shelf row is gone.
    @Test func mergeIntoPendingDeletionThenSave() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let shelfID = try seed.performAndWait {
            let s = Shelf(context: seed)
            s.name = "S"
            try seed.save()
            return s.objectID
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            a.delete(a.object(with: shelfID))
            a.processPendingChanges()
        }
        let b = c2.newBackgroundContext()
        let (inserted, updated) = try b.performAndWait {
            let book = Book(context: b)
            book.title = "late"
            let shelf = b.object(with: shelfID) as! Shelf
            book.shelf = shelf
            try b.save()
            return ([book.objectID], [shelf.objectID])
        }
        NSManagedObjectContext.mergeChanges(
            fromRemoteContextSave: [NSInsertedObjectIDsKey: inserted, NSUpdatedObjectIDsKey: updated], into: [a])
        let outcome: String = a.performAndWait {
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        print("outcome: \(outcome)")
        #expect(try storedGraphProblems(c1) == [])
    }

    /// A deletes book b2 of shelf S (nullify: S loses it). B renames S and saves. A saves with
    /// NSRollbackMergePolicy: S's conflict is resolved with the store's values, but b2's
    /// deletion (not in conflict) is saved: S must not list the deleted b2.
    @Test func rollbackPolicyKeepsDeletedBookListed() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (shelfID, b2) = try seed.performAndWait {
            let s = Shelf(context: seed)
            s.name = "S"
            let x = Book(context: seed)
            x.title = "b1"
            x.shelf = s
            let y = Book(context: seed)
            y.title = "b2"
            y.shelf = s
            try seed.save()
            return (s.objectID, y.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            a.mergePolicy = NSRollbackMergePolicy
            a.delete(a.object(with: b2))
            a.processPendingChanges()
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            (b.object(with: shelfID) as! Shelf).name = "renamed"
            try b.save()
        }
        let outcome: String = a.performAndWait {
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        print("outcome: \(outcome)")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let (count, listed) = try fresh.performAndWait {
            (try fresh.count(for: Book.fetchRequest()), (try fresh.existingObject(with: shelfID) as! Shelf).$books.count)
        }
        #expect(count == 1)
        #expect(listed == 1)
    }
}

/// The two ends of a link read at different versions of their rows (one loaded before
/// another coordinator changed the link, the other after): a change made here must reach
/// both rows. The first two need no conflict at all (default error policy).
@Suite("Links edited on a stale end", .serialized) struct ConflictStaleLinkTests {
    /// Found by the randomized conflict run (seeds 177, 239). Context A loads book X (no
    /// authors). B, on another coordinator, inserts author Q with X and saves. A fetches Q
    /// (which lists X), adds Q to X and takes it out again, and saves: X's row lists Q (B's
    /// save) and must let go of it as Q's row does.
    @Test func addThenRemoveOnAStaleSourceWritesBothEnds() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let bookID = try seed.performAndWait {
            let b = Book(context: seed)
            b.title = "X"
            try seed.save()
            return b.objectID
        }
        let a = c1.newBackgroundContext()
        a.performAndWait { _ = (a.object(with: bookID) as! Book).authors.count }  // X loaded: no authors
        let b = c2.newBackgroundContext()
        let authorURI = try b.performAndWait {
            let q = Author(context: b)
            q.name = "Q"
            q.$books.insert(b.object(sameAs: bookID, as: Book.self))
            try b.save()
            return q.objectID.uriRepresentation()
        }
        let outcome: String = a.performAndWait {
            let q = try! a.existingObject(with: c1.persistentStoreCoordinator.managedObjectID(forURIRepresentation: authorURI)!) as! Author
            let x = a.object(with: bookID) as! Book
            x.$authors.insert(q)
            x.$authors.remove(q)
            // Edited after B's save changed its row: a conflict under the default policy, as
            // in Core Data; refreshed with merging (A's removal on top), it saves.
            return saveRefreshingOnConflict(a)
        }
        #expect(outcome == "threw 133020, saved")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let (authors, books) = try fresh.performAndWait {
            (try fresh.fetch(Book.fetchRequest())[0].authors.count, try fresh.fetch(Author.fetchRequest())[0].books.count)
        }
        #expect(authors == 0 && books == 0)
    }

    /// Found by the randomized conflict run (seed 211). Book X and author Q are linked.
    /// Context A loads Q's books (X). B, on another coordinator, unlinks them and saves. A
    /// fetches X (no authors now), adds Q to it and saves: Q's row must list X again.
    @Test func linkToAStaleTargetThatStillListsTheSource() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (bookID, authorID) = try seed.performAndWait {
            let x = Book(context: seed)
            x.title = "X"
            let q = Author(context: seed)
            q.name = "Q"
            q.$books.insert(x)
            try seed.save()
            return (x.objectID, q.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait { _ = (a.object(with: authorID) as! Author).books.count }  // Q loaded: lists X
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            let x = b.object(sameAs: bookID, as: Book.self)
            x.$authors.removeAll()
            try b.save()
        }
        let outcome: String = a.performAndWait {
            let x = try! a.fetch(Book.fetchRequest())[0]
            #expect(x.authors.isEmpty)
            x.$authors.insert(a.object(with: authorID) as! Author)
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        #expect(outcome == "saved")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let (authors, books) = try fresh.performAndWait {
            (try fresh.fetch(Book.fetchRequest())[0].authors.count, try fresh.fetch(Author.fetchRequest())[0].books.count)
        }
        #expect(authors == 1 && books == 1)
    }

    /// Found by the randomized conflict run (seed 181). Book B is on shelf S2. Context A loads
    /// B. Another coordinator takes B off S2; A then loads S2 (without B) and moves B to a new
    /// shelf S12 (through B's shelf, or through S12's books). The other coordinator puts B
    /// back on S2. A saves with a merge policy: whichever shelf B's conflict gives it, the
    /// other shelf's row must not list B.
    @Test(arguments: [1, 2, 3], ["book.shelf", "shelf.books"])
    func moveOfAStaleBookAgainstAShelfItLeftAndRejoined(policyIndex: Int, via: String) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (bookID, shelfID) = try seed.performAndWait {
            let s = Shelf(context: seed)
            s.name = "S2"
            let b = Book(context: seed)
            b.title = "B"
            b.shelf = s
            try seed.save()
            return (b.objectID, s.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            a.mergePolicy = policyNumbered(policyIndex)
            _ = (a.object(with: bookID) as! Book).title  // B loaded: shelf S2
        }
        let b = c2.newBackgroundContext()
        func otherSetsShelf(_ on: Bool) throws {
            try b.performAndWait {
                let book = b.object(sameAs: bookID, as: Book.self)
                book.shelf = on ? b.object(sameAs: shelfID, as: Shelf.self) : nil
                try b.save()
            }
        }
        try otherSetsShelf(false)
        a.performAndWait {
            #expect((a.object(with: shelfID) as! Shelf).books.isEmpty)  // S2 loaded now: without B
            let s12 = Shelf(context: a)
            s12.name = "S12"
            let book = a.object(with: bookID) as! Book
            if via == "book.shelf" { book.shelf = s12 } else { s12.$books.insert(book) }
        }
        try otherSetsShelf(true)
        let outcome: String = a.performAndWait {
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        #expect(outcome == "saved")
        #expect(try storedGraphProblems(c1) == [])
        // Store trump: the store put B back on S2 since A last read it; the others keep S12.
        let fresh = c1.newBackgroundContext()
        let lists = try fresh.performAndWait {
            try fresh.fetch(Shelf.fetchRequest()).map { "\($0.name):\($0.books.count)" }.sorted()
        }
        #expect(lists == (policyIndex == 2 ? ["S12:0", "S2:1"] : ["S12:1", "S2:0"]))
    }

    /// The same with a many-to-many link: author Q lists book X. Context A loads Q. Another
    /// coordinator unlinks X and Q; A takes X out of Q's books (X no longer lists Q) and
    /// renames Q. The other coordinator links them again. A saves with a merge policy: the
    /// store must not end up with X listing Q and Q not listing X.
    @Test(arguments: [1, 2, 3])
    func removalFromAStaleSetAgainstALinkRemadeElsewhere(policyIndex: Int) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (bookID, authorID) = try seed.performAndWait {
            let x = Book(context: seed)
            x.title = "X"
            let q = Author(context: seed)
            q.name = "Q"
            q.$books.insert(x)
            try seed.save()
            return (x.objectID, q.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            a.mergePolicy = policyNumbered(policyIndex)
            _ = (a.object(with: authorID) as! Author).books.count  // Q loaded: lists X
        }
        let b = c2.newBackgroundContext()
        func otherLinks(_ on: Bool) throws {
            try b.performAndWait {
                let x = b.object(sameAs: bookID, as: Book.self)
                let q = b.object(sameAs: authorID, as: Author.self)
                if on { x.$authors.insert(q) } else { x.$authors.remove(q) }
                try b.save()
            }
        }
        try otherLinks(false)
        a.performAndWait {
            let q = a.object(with: authorID) as! Author
            q.$books.remove(a.object(with: bookID) as! Book)
            q.name = "Q2"
        }
        try otherLinks(true)
        let outcome: String = a.performAndWait {
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        #expect(outcome == "saved")
        #expect(try storedGraphProblems(c1) == [])
        // A's removal met a link already gone (A's Q moved onto that row then, and the removal
        // changed nothing): the relink saved after it stands under every policy, overwrite
        // included, since overwrite writes this context's changes to a to-many, not its whole
        // set (MergePolicyTests), so the relink is not dropped.
        let fresh = c1.newBackgroundContext()
        let (authors, books) = try fresh.performAndWait {
            (try fresh.fetch(Book.fetchRequest())[0].authors.count, try fresh.fetch(Author.fetchRequest())[0].books.count)
        }
        #expect(authors == books && books == 1)
    }
}

/// Delete rules that meet the other coordinator's deletions and saves: a rule's target may be
/// a fault whose row is gone, or a changed object read at an older version of its row.
@Suite("Delete rules meeting the other coordinator", .serialized) struct ConflictDeleteRuleTests {
    /// Found by the randomized conflict run (seeds 736, 1669, 1683, 2833). Context A holds
    /// book B loaded, its related object X an unfired fault; another coordinator deletes X's
    /// row. A delete rule of B's deletion in A then reaches X:
    /// - "cascade": X is B's cover; A deletes B (cascade to the cover).
    /// - "nullify": X is B's shelf; the other coordinator first took B off it, so A's B is
    ///   stale; A deletes B (nullify on the shelf).
    /// - "rerun": X is B's cover, and B is a book the other coordinator put on shelf S after
    ///   A deleted S; A merged that save (S's cascade runs again at the save) and read B.
    /// The rule must skip X (its row has nothing left to delete or unlink) instead of
    /// trapping on "could not fulfill the fault", and the save must store a whole graph.
    @Test(arguments: ["cascade", "nullify", "rerun"])
    func deleteRuleReachesARowDeletedElsewhere(path: String) throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (bookID, shelfID, coverID) = try seed.performAndWait {
            let s = Shelf(context: seed)
            s.name = "S"
            let b = Book(context: seed)
            b.title = "B"
            let c = Cover(context: seed)
            c.book = b
            if path == "nullify" { b.shelf = s }
            try seed.save()
            return (b.objectID, s.objectID, c.objectID)
        }
        let a = c1.newBackgroundContext()
        let other = c2.newBackgroundContext()
        if path == "rerun" {
            a.performAndWait {
                a.delete(a.object(with: shelfID))
                a.processPendingChanges()  // S has no books yet
            }
            let info = try other.performAndWait {
                let book = other.object(sameAs: bookID, as: Book.self)
                let shelf = other.object(sameAs: shelfID, as: Shelf.self)
                book.shelf = shelf
                try other.save()
                return [NSUpdatedObjectIDsKey: [book.objectID, shelf.objectID]]
            }
            NSManagedObjectContext.mergeChanges(fromRemoteContextSave: info, into: [a])
        }
        a.performAndWait { _ = (a.object(with: bookID) as! Book).title }  // B loaded; its cover and shelf unfired faults
        try other.performAndWait {
            if path == "nullify" {
                other.object(sameAs: bookID, as: Book.self).shelf = nil
                try other.save()
                other.delete(other.object(sameAs: shelfID, as: Shelf.self))
            } else {
                other.delete(other.object(sameAs: coverID, as: Cover.self))
            }
            try other.save()
        }
        let outcome: String = a.performAndWait {
            a.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy  // B's row changed since A read it ("nullify")
            if path != "rerun" { a.delete(a.object(with: bookID)) }
            do { try a.save(); return "saved" } catch { return "threw \((error as? CoreDataError)?.code.rawValue ?? -1)" }
        }
        #expect(outcome == "saved")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let (books, covers, shelves) = try fresh.performAndWait {
            (try fresh.count(for: Book.fetchRequest()), try fresh.count(for: Cover.fetchRequest()), try fresh.count(for: Shelf.fetchRequest()))
        }
        #expect(books == 0 && covers == 0)
        #expect(shelves == (path == "cascade" ? 1 : 0))  // "cascade" never deletes S
    }

    /// Found by the randomized conflict run (seed 2221). Context A links book X and author Q;
    /// another coordinator makes the same link and saves. A refreshes X (now at the newest
    /// version) but not Q, whose value matches the store while its snapshot predates the
    /// link. A deletes X: the nullify rule takes X out of Q, which then equalled its old
    /// snapshot and was not saved, so Q's row kept listing the deleted X. Q must be saved
    /// without X.
    @Test func nullifyOnAChangedTargetReadBeforeTheSameChangeWasSavedElsewhere() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let seed = c1.newBackgroundContext()
        let (bookID, authorID) = try seed.performAndWait {
            let x = Book(context: seed)
            x.title = "X"
            let q = Author(context: seed)
            q.name = "Q"
            try seed.save()
            return (x.objectID, q.objectID)
        }
        let a = c1.newBackgroundContext()
        a.performAndWait {
            let q = a.object(with: authorID) as! Author
            (a.object(with: bookID) as! Book).$authors.insert(q)
        }
        let b = c2.newBackgroundContext()
        try b.performAndWait {
            let x = b.object(sameAs: bookID, as: Book.self)
            let q = b.object(sameAs: authorID, as: Author.self)
            x.$authors.insert(q)
            try b.save()
        }
        let outcome: String = a.performAndWait {
            let x = a.object(with: bookID) as! Book
            a.refresh(x, mergeChanges: true)  // X at its newest version; Q still at its first
            a.delete(x)
            // Q, edited here, was changed by B's save: a conflict under the default policy, as
            // in Core Data; refreshed with merging, the deletion saves.
            return saveRefreshingOnConflict(a)
        }
        #expect(outcome == "threw 133020, saved")
        #expect(try storedGraphProblems(c1) == [])
        let fresh = c1.newBackgroundContext()
        let (books, listed) = try fresh.performAndWait {
            (try fresh.count(for: Book.fetchRequest()), try fresh.fetch(Author.fetchRequest()).map { $0.$books.count })
        }
        #expect(books == 0)
        #expect(listed == [0])
    }
}
