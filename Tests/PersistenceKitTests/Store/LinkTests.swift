import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

final class HookedLinkShelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf") var books: Set<HookedLinkBook>
    var calls: [String] = []
    override func willSave() {
        super.willSave()
        calls.append("willSave")
    }
    override func didSave() {
        super.didSave()
        calls.append("didSave")
    }
}

final class HookedLinkBook: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "books") var shelf: HookedLinkShelf?
}

final class LinkPerson: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "friends") var friends: Set<LinkPerson>
    @Relationship(inverse: "spouse") var spouse: LinkPerson?
}

final class LinkParent: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "parent") var children: Set<LinkChild>
}

final class LinkChild: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "children", deleteRule: .noActionDeleteRule) var parent: LinkParent?
}

/// A link is stored on both ends. The store derives one end from the other within a
/// transaction and in rows outside it; these tests write rows directly, as no context would,
/// and through contexts, to show that no transaction can leave a link on one side.
@Suite("Both ends of every link kept by the store", .serialized) struct StoreLinkTests {
    /// A store of either kind over the self-inverse `LinkPerson` model.
    final class PersonBench {
        let store: any PersistentStore
        let model: NSManagedObjectModel
        let folder: TemporaryFolder

        init(_ kind: String) throws {
            let model = try NSManagedObjectModel(managedObjectClasses: [LinkPerson.self])
            model.seal()
            self.model = model
            folder = try TemporaryFolder()
            store = kind == "file" ? try FileStore.open(at: folder.storeURL, model: model) : InMemoryStore(model: model)
        }

        deinit { try? (store as? FileStore)?.close() }

        func id(_ pk: Int64) -> StoreRowID { StoreRowID(entity: model.entitiesByName["LinkPerson"]!.index, primaryKey: pk) }

        func row(_ pk: Int64, version: Int64 = 0, spouse: Int64? = nil) -> StoreRow {
            let e = model.entitiesByName["LinkPerson"]!
            var all = [StoreValue](repeating: .null, count: e.properties.count)
            all[e.indexByName["name"]!] = .string("P\(pk)")
            all[e.indexByName["friends"]!] = .references([])
            if let spouse { all[e.indexByName["spouse"]!] = .reference(id(spouse)) }
            return StoreRow(id: id(pk), version: version, values: all)
        }

        func commit(inserts: [StoreRow] = [], updates: [StoreRow] = []) throws {
            var t = StoreTransaction()
            t.inserts = inserts
            t.updates = updates
            guard case .committed = try store.commit(t) else {
                Issue.record("unexpected conflict")
                return
            }
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

    /// A store of either kind with the fixtures' model, and a way to build rows by name.
    final class Bench {
        let store: any PersistentStore
        let model: NSManagedObjectModel
        let folder: TemporaryFolder  // unused by the in-memory store

        init(_ kind: String) throws {
            let model = try Fixtures.model()
            model.seal()
            self.model = model
            folder = try TemporaryFolder()
            store = kind == "file" ? try FileStore.open(at: folder.storeURL, model: model) : InMemoryStore(model: model)
        }

        deinit { try? (store as? FileStore)?.close() }

        func id(_ entity: String, _ pk: Int64) -> StoreRowID {
            StoreRowID(entity: model.entitiesByName[entity]!.index, primaryKey: pk)
        }

        /// A row of `entity` with `values` by property name, `.null` elsewhere.
        func row(_ entity: String, _ pk: Int64, version: Int64 = 0, _ values: [String: StoreValue]) -> StoreRow {
            let e = model.entitiesByName[entity]!
            var all = [StoreValue](repeating: .null, count: e.properties.count)
            for (name, v) in values { all[e.indexByName[name]!] = v }
            return StoreRow(id: id(entity, pk), version: version, values: all)
        }

        func value(_ entity: String, _ pk: Int64, _ name: String) throws -> StoreValue? {
            let e = model.entitiesByName[entity]!
            return try store.fetchRow(id(entity, pk))?.value(at: e.indexByName[name]!)
        }

        func version(_ entity: String, _ pk: Int64) throws -> Int64? { try store.fetchRow(id(entity, pk))?.version }

        @discardableResult
        func commit(inserts: [StoreRow] = [], updates: [StoreRow] = [], deletes: [(StoreRowID, Int64)] = []) throws -> [StoreRow] {
            var t = StoreTransaction()
            t.inserts = inserts
            t.updates = updates
            t.deletes = deletes.map { (id: $0.0, expectedVersion: $0.1) }
            guard case let .committed(rows) = try store.commit(t) else {
                Issue.record("unexpected conflict")
                return []
            }
            return rows
        }
    }

    /// Self-inverse one-to-one (`spouse`, both ends owning): P3 takes P2 from P1. P1 must let
    /// go of P2 (a take-over release limited to a derived to-one would leave P1 pointing at
    /// P2 while P2 points at P3).
    @Test(arguments: ["file", "memory"])
    func selfInverseOneToOneTakeOverReleasesThePreviousSpouse(kind: String) throws {
        let b = try PersonBench(kind)
        try b.commit(inserts: [b.row(1, spouse: 2), b.row(2, spouse: 1), b.row(3)])
        #expect(try storedGraphProblems(b.store, b.model) == [])
        try b.commit(updates: [b.row(3, version: 1, spouse: 2)])
        #expect(try storedGraphProblems(b.store, b.model) == [], "\(kind)")
    }

    /// Self-inverse one-to-one claimed by two rows in one transaction.
    @Test(arguments: ["file", "memory"])
    func twoClaimsOnASelfInverseOneToOne(kind: String) throws {
        let b = try PersonBench(kind)
        try b.commit(inserts: [b.row(1, spouse: 3), b.row(2, spouse: 3), b.row(3)])
        #expect(try storedGraphProblems(b.store, b.model) == [], "\(kind)")
    }

    /// Same through a context (primitive setters, which keep no inverse, as in Core Data).
    @Test func primitiveSpouseTakeOverThroughAContext() throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [LinkPerson.self])
        let container = try FSSupport.container(at: folder.storeURL, model: model, name: "spouse")
        let ctx = container.newBackgroundContext()
        try ctx.performAndWait {
            let p1 = LinkPerson(context: ctx), p2 = LinkPerson(context: ctx)
            p1.spouse = p2
            try ctx.save()
            let p3 = LinkPerson(context: ctx)
            p3.setPrimitiveValue(p2, forKey: "spouse")
            try ctx.save()
        }
        #expect(try storedGraphProblems(container) == [])
    }

    /// A row the store writes besides the transaction's, for an object not registered in
    /// the saving context (a book that loses its cover to another book, set through the
    /// owning end by a primitive setter): the did-save notification's NSUpdatedObjectsKey
    /// leaves it out, while the object-IDs notification lists it. A context that merges
    /// the did-save notification (the usual way) keeps the old row: it still shows the
    /// cover, and its next edit of that book fails with a merge conflict.
    @Test func extraRowsOfUnregisteredObjectsAreAnnouncedToo() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, name: "extra")
        let seed = container.newBackgroundContext()
        let (b1ID, cID) = try seed.performAndWait {
            let b1 = Book(context: seed)
            b1.title = "B1"
            let c = Cover(context: seed)
            b1.cover = c
            try seed.save()
            return (b1.objectID, c.objectID)
        }
        let reader = container.newBackgroundContext()
        reader.performAndWait {
            let b1 = reader.object(with: b1ID) as! Book
            _ = b1.title
            _ = b1.cover?.color
        }
        let writer = container.newBackgroundContext()
        let saved = TestMutex<Notification?>(nil)
        let idsSaved = TestMutex<Set<NSManagedObjectID>>([])
        let t1 = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: writer, queue: nil) { n in
            saved.withLock { $0 = n }
        }
        let t2 = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didSaveObjectIDsNotification, object: writer, queue: nil
        ) { n in
            let ids = (n.userInfo?[NSUpdatedObjectIDsKey] as? Set<NSManagedObjectID>) ?? []
            idsSaved.withLock { $0 = ids }
        }
        defer {
            NotificationCenter.default.removeObserver(t1)
            NotificationCenter.default.removeObserver(t2)
        }
        try writer.performAndWait {
            let b2 = Book(context: writer)
            b2.title = "B2"
            b2.setPrimitiveValue(writer.object(with: cID), forKey: "cover")
            try writer.save()
        }
        #expect(try storedGraphProblems(container) == [])
        let note = saved.withLock { $0 }!
        let objectsUpdated = Set(((note.userInfo?[NSUpdatedObjectsKey] as? Set<NSManagedObject>) ?? []).map(\.objectID))
        let idsUpdated = idsSaved.withLock { $0 }
        #expect(objectsUpdated == idsUpdated, "did-save objects \(objectsUpdated.count) vs IDs \(idsUpdated.count)")
        let (view, outcome): (String, String) = reader.performAndWait {
            reader.mergeChanges(fromContextDidSave: note)
            let b1 = reader.object(with: b1ID) as! Book
            let view = "B1.cover=\(b1.cover == nil ? "nil" : "C")"
            b1.title = "B1 again"
            do { try reader.save(); return (view, "saved") } catch { return (view, "threw \(error)") }
        }
        #expect(view == "B1.cover=nil")
        #expect(outcome == "saved")
    }

    /// An object the save announces as updated (a row the store wrote besides the
    /// transaction's: a shelf whose derived `books` gained a book set through its owning end
    /// by a primitive setter) gets no didSave(), though every other object in the did-save
    /// notification's sets does, as in Core Data.
    @Test func objectsAnnouncedAsUpdatedGetDidSave() throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [HookedLinkShelf.self, HookedLinkBook.self])
        let container = try FSSupport.container(at: folder.storeURL, model: model, name: "hooks")
        let ctx = container.newBackgroundContext()
        let announced = TestMutex<[String]>([])
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: ctx, queue: nil) { n in
            let set = (n.userInfo?[NSUpdatedObjectsKey] as? Set<NSManagedObject>) ?? []
            announced.withLock { $0 = set.map(\.entity.name).sorted() }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let (calls, shelfBooks): ([String], Int) = try ctx.performAndWait {
            let s = HookedLinkShelf(context: ctx)
            s.name = "S"
            try ctx.save()
            s.calls = []
            let b = HookedLinkBook(context: ctx)
            b.setPrimitiveValue(s, forKey: "shelf")
            try ctx.save()
            return (s.calls, s.books.count)
        }
        #expect(shelfBooks == 1)
        #expect(announced.withLock { $0 } == ["HookedLinkShelf"])
        #expect(calls.contains("didSave"), "hooks on the announced shelf: \(calls)")
    }

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
    /// end takes one (the larger row) and the other owner lets go, rather than keep pointing
    /// at the target one-sided.
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

    /// A row linked to a row the same transaction deletes: the link is dropped, not stored
    /// pointing at the missing row.
    @Test(arguments: ["file", "memory"])
    func linkToARowDeletedInTheSameTransaction(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")]), b.row("Book", 1, ["title": .string("B")])])
        try b.commit(
            updates: [b.row("Book", 1, version: 1, ["title": .string("B"), "shelf": .reference(b.id("Shelf", 1))])],
            deletes: [(b.id("Shelf", 1), 1)])
        #expect(try storedGraphProblems(b.store, b.model) == [], "\(kind)")
    }

    /// Self-inverse many-to-many and one-to-one (a relationship that is its own inverse).
    @Test(arguments: ["file", "memory"])
    func selfInverseRelationshipsKeepBothEnds(kind: String) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [LinkPerson.self])
        let container = try Self.container(kind, model: model, at: folder)
        let ctx = container.newBackgroundContext()
        let ids = try ctx.performAndWait {
            let p = (0..<4).map { i -> LinkPerson in
                let o = LinkPerson(context: ctx)
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
                let o = fresh.object(with: id) as! LinkPerson
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
    /// parent's derived set listing it for good (derived ends being the store's to keep, a
    /// save removing it would be ignored): the deletion takes it out of derived ends whatever
    /// the rule (as a list a SQL store computes from foreign keys), and removing it explicitly
    /// saves cleanly too.
    @Test(arguments: ["file", "memory"])
    func aDanglingEntryCanBeRemovedFromTheDerivedEnd(kind: String) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [LinkParent.self, LinkChild.self])
        let container = try Self.container(kind, model: model, at: folder)
        let ctx = container.newBackgroundContext()
        let (pID, cID) = try ctx.performAndWait {
            let p = LinkParent(context: ctx)
            p.name = "P"
            let c = LinkChild(context: ctx)
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
            let p = ctx2.object(with: pID) as! LinkParent
            let stale = p.children
            for c in stale { p.$children.remove(c) }
            p.name = "P2"
            try ctx2.save()
            return p.children.count
        }
        let after = try storedGraphProblems(store, model)
        #expect(after == [], "\(kind): after delete \(afterDelete); after explicit removal \(after); in memory \(inMemory)")
    }

    /// A row the store writes besides the transaction's (the derived end of a link made
    /// through a refreshed owner whose target is stale here and already listed it): the
    /// saving context announces it, takes it, and a sibling context merges it.
    @Test func extraRowsAreAnnouncedAndMerged() throws {
        let folder = try TemporaryFolder()
        let (c1, c2) = try twoCoordinators(on: folder)
        let (sID, xID) = try Fixtures.seedShelfHoldingABook(c1)
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
    /// derived end can list one of them only, and the other lets go rather than keep a
    /// one-sided link.
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

    /// Committed rows carry version 1 for inserts and `expected + 1` for updates, whatever
    /// version the transaction's inserts came with: the file store hands back the
    /// transaction's own array only when its inserts are already at version 1 and nothing
    /// else was written.
    @Test(arguments: ["file", "memory"])
    func insertsCommitAtVersionOneWhateverTheyCarry(kind: String) throws {
        let b = try Bench(kind)
        let atZero = try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("A")]), b.row("Shelf", 2, ["name": .string("B")])])
        #expect(atZero.map(\.version) == [1, 1])
        #expect(atZero.map(\.id) == [b.id("Shelf", 1), b.id("Shelf", 2)])
        let sent = [b.row("Shelf", 3, version: 1, ["name": .string("C")]), b.row("Shelf", 4, version: 7, ["name": .string("D")])]
        let mixed = try b.commit(inserts: sent)
        #expect(mixed.map(\.version) == [1, 1])
        let name = b.model.entitiesByName["Shelf"]!.indexByName["name"]!
        #expect(mixed.map { $0.value(at: name) } == [.string("C"), .string("D")])
        // A shelf's list of books is a derived end, stored as what the books say: sent as
        // that list, the row is committed exactly as sent.
        let asSent = [b.row("Shelf", 5, version: 1, ["name": .string("E"), "books": .references([])])]
        #expect(try b.commit(inserts: asSent) == asSent)
        let withUpdate = try b.commit(
            inserts: [b.row("Shelf", 6, version: 1, ["name": .string("F")])],
            updates: [b.row("Shelf", 5, version: 1, ["name": .string("E2")])])
        #expect(withUpdate.map(\.id) == [b.id("Shelf", 6), b.id("Shelf", 5)])
        #expect(withUpdate.map(\.version) == [1, 2])
        #expect(try b.version("Shelf", 4) == 1)
        #expect(try b.version("Shelf", 5) == 2)
        #expect(try b.value("Shelf", 5, "name") == .string("E2"))
    }

    /// A book written with a shelf, the shelf not written: the shelf's row lists the book
    /// afterwards (written by the store at its next version), and the commit returns it
    /// after the transaction's own rows. Unlinking through the book takes it off again.
    @Test(arguments: ["file", "memory"])
    func theOwningEndAloneMakesTheLink(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")]), b.row("Book", 1, ["title": .string("B")])])
        #expect(try b.version("Shelf", 1) == 1)
        let rows = try b.commit(updates: [b.row("Book", 1, version: 1, ["title": .string("B"), "shelf": .reference(b.id("Shelf", 1))])])
        #expect(rows.map(\.id) == [b.id("Book", 1), b.id("Shelf", 1)])
        #expect(try b.value("Shelf", 1, "books") == .references([b.id("Book", 1)]))
        #expect(try b.version("Shelf", 1) == 2)
        try b.commit(updates: [b.row("Book", 1, version: 2, ["title": .string("B")])])
        #expect(try b.value("Shelf", 1, "books") == .references([]))
    }

    /// A shelf written as listing a book whose own row names no shelf: the shelf's row
    /// keeps what the owning end says (no book), in the row the commit returns too.
    @Test(arguments: ["file", "memory"])
    func aDerivedEndCannotMakeALinkAlone(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")]), b.row("Book", 1, ["title": .string("B")])])
        let rows = try b.commit(updates: [b.row("Shelf", 1, version: 1, ["name": .string("T"), "books": .references([b.id("Book", 1)])])])
        #expect(rows.count == 1)
        #expect(rows.first?.value(at: b.model.entitiesByName["Shelf"]!.indexByName["books"]!) == .references([]))
        #expect(try b.value("Shelf", 1, "books") == .references([]))
        #expect(try b.value("Shelf", 1, "name") == .string("T"))
        #expect(try b.value("Book", 1, "shelf") == .null)
    }

    /// Many-to-many: the owning end is `Author.books` ("Author" sorts before "Book"). A book
    /// written alone with an author gets no link; the author written alone with the book
    /// makes it, on both rows.
    @Test(arguments: ["file", "memory"])
    func manyToManyFollowsItsOwningEnd(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [b.row("Author", 1, ["name": .string("A")]), b.row("Book", 1, ["title": .string("B")])])
        try b.commit(updates: [b.row("Book", 1, version: 1, ["title": .string("B"), "authors": .references([b.id("Author", 1)])])])
        #expect(try b.value("Book", 1, "authors") == .references([]))
        try b.commit(updates: [b.row("Author", 1, version: 1, ["name": .string("A"), "books": .references([b.id("Book", 1)])])])
        #expect(try b.value("Book", 1, "authors") == .references([b.id("Author", 1)]))
        #expect(try b.value("Author", 1, "books") == .references([b.id("Book", 1)]))
    }

    /// Many links changed in one commit (merged through sorted lists) and a few (placed by
    /// binary search) leave the derived list exactly the owning ends' books, sorted.
    @Test(arguments: ["file", "memory"], [3, 40])
    func manyOrFewChangesLeaveTheExactSortedList(kind: String, changes: Int) throws {
        let b = try Bench(kind)
        let shelf = b.id("Shelf", 1)
        func book(_ pk: Int64, version: Int64 = 0, on: Bool) -> StoreRow {
            b.row("Book", pk, version: version, ["title": .string("b\(pk)"), "shelf": on ? .reference(shelf) : .null])
        }
        try b.commit(inserts: [b.row("Shelf", 1, ["name": .string("S")])] + (1...100).map { book(Int64($0), on: $0 % 2 == 0) })
        var expected = Set((1...100).filter { $0 % 2 == 0 }.map { Int64($0) })
        #expect(try b.value("Shelf", 1, "books") == .references(expected.sorted().map { b.id("Book", $0) }))
        // Take `changes` even books off, put `changes` odd books on, in one commit.
        let off = (1...100).filter { $0 % 2 == 0 }.prefix(changes).map { Int64($0) }
        let on = (1...100).filter { $0 % 2 == 1 }.suffix(changes).map { Int64($0) }
        try b.commit(updates: off.map { book($0, version: 1, on: false) } + on.map { book($0, version: 1, on: true) })
        expected.subtract(off)
        expected.formUnion(on)
        #expect(try b.value("Shelf", 1, "books") == .references(expected.sorted().map { b.id("Book", $0) }))
    }

    /// Deleting a row takes it out of the rows that link to it (the nullify rule, applied
    /// by the store when the transaction does not carry those rows); a row that is deleted
    /// too is not written.
    @Test(arguments: ["file", "memory"])
    func deletingARowLetsTheOtherEndsGo(kind: String) throws {
        let b = try Bench(kind)
        try b.commit(inserts: [
            b.row("Shelf", 1, ["name": .string("S"), "books": .references([b.id("Book", 1), b.id("Book", 2)])]),
            b.row("Book", 1, ["title": .string("B1"), "shelf": .reference(b.id("Shelf", 1))]),
            b.row("Book", 2, ["title": .string("B2"), "shelf": .reference(b.id("Shelf", 1))]),
        ])
        #expect(try b.value("Shelf", 1, "books") == .references([b.id("Book", 1), b.id("Book", 2)]))
        try b.commit(deletes: [(b.id("Shelf", 1), 1), (b.id("Book", 2), 1)])
        #expect(try b.value("Book", 1, "shelf") == .null)
        #expect(try b.version("Book", 1) == 2)
        #expect(try b.version("Book", 2) == nil)
    }

    /// An in-memory store made before any coordinator sealed its model keeps links too: a
    /// batch delete (which writes only the deletion) takes the book off its shelf's books.
    @Test func inMemoryStoreMadeBeforeACoordinatorKeepsLinks() throws {
        let model = try Fixtures.model()
        let store = InMemoryStore(model: model)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(store)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        let (kept, shelfID) = try context.performAndWait {
            let shelf = Shelf(context: context)
            for title in ["kept", "gone"] {
                let book = Book(context: context)
                book.title = title
                book.shelf = shelf
            }
            try context.save()
            let gone = NSFetchRequest<Book>(entityName: "Book")
            gone.predicate = NSPredicate(format: "title == 'gone'")
            _ = try context.execute(NSBatchDeleteRequest(fetchRequest: gone))
            return (try #require(shelf.books.first { $0.title == "kept" }?.objectID.rowID), try #require(shelf.objectID.rowID))
        }
        #expect(try store.fetchRow(shelfID)?.values.contains(.references([kept])) == true)
    }
}
