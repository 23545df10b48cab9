import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// From a second review of `LinkKeeper` and the save changes that go with it; each test
// failed before its fix: a to-one that is its own inverse (a spouse) taken over or claimed
// twice left the previous partner pointing one-sided; rows the store wrote besides a
// save's own were announced only when registered in the saving context, and got no
// `didSave()`.

@Suite(.serialized) struct LinkReview2Tests {
    /// A store of either kind over the self-inverse `LRPerson` model.
    final class PersonBench {
        let store: any PersistentStore
        let model: NSManagedObjectModel
        let folder: TemporaryFolder

        init(_ kind: String) throws {
            let model = try NSManagedObjectModel(managedObjectClasses: [LRPerson.self])
            model.seal()
            self.model = model
            folder = try TemporaryFolder()
            store = kind == "file" ? try FileStore.open(at: folder.storeURL, model: model) : InMemoryStore(model: model)
        }

        deinit { try? (store as? FileStore)?.close() }

        func id(_ pk: Int64) -> StoreRowID { StoreRowID(entity: model.entitiesByName["LRPerson"]!.index, primaryKey: pk) }

        func row(_ pk: Int64, version: Int64 = 0, spouse: Int64? = nil) -> StoreRow {
            let e = model.entitiesByName["LRPerson"]!
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

    /// Self-inverse one-to-one (`spouse`, both ends owning): P3 takes P2 from P1. The
    /// take-over release added by the first review only runs for a derived to-one, so P1
    /// keeps pointing at P2 while P2 points at P3.
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
        let model = try NSManagedObjectModel(managedObjectClasses: [LRPerson.self])
        let container = try FSSupport.container(at: folder.storeURL, model: model, name: "spouse")
        let ctx = container.newBackgroundContext()
        try ctx.performAndWait {
            let p1 = LRPerson(context: ctx), p2 = LRPerson(context: ctx)
            p1.spouse = p2
            try ctx.save()
            let p3 = LRPerson(context: ctx)
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
        let model = try NSManagedObjectModel(managedObjectClasses: [LR2Shelf.self, LR2Book.self])
        let container = try FSSupport.container(at: folder.storeURL, model: model, name: "hooks")
        let ctx = container.newBackgroundContext()
        let announced = TestMutex<[String]>([])
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: ctx, queue: nil) { n in
            let set = (n.userInfo?[NSUpdatedObjectsKey] as? Set<NSManagedObject>) ?? []
            announced.withLock { $0 = set.map(\.entity.name).sorted() }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let (calls, shelfBooks): ([String], Int) = try ctx.performAndWait {
            let s = LR2Shelf(context: ctx)
            s.name = "S"
            try ctx.save()
            s.calls = []
            let b = LR2Book(context: ctx)
            b.setPrimitiveValue(s, forKey: "shelf")
            try ctx.save()
            return (s.calls, s.books.count)
        }
        #expect(shelfBooks == 1)
        #expect(announced.withLock { $0 } == ["LR2Shelf"])
        #expect(calls.contains("didSave"), "hooks on the announced shelf: \(calls)")
    }
}

final class LR2Shelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf") var books: Set<LR2Book>
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

final class LR2Book: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "books") var shelf: LR2Shelf?
}
