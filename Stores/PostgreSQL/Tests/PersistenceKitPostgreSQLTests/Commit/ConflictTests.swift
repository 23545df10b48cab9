import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// Two coordinators on one database, each with its own store object and connections, as two
/// processes have: an object both change is a conflict each merge policy resolves as with the
/// file store.
@Suite("PostgreSQL store: conflicts between writers", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct ConflictTests {
    /// The ID that `uri` names in `context`'s coordinator.
    static func id(_ uri: URL, in context: NSManagedObjectContext) throws -> NSManagedObjectID {
        try #require(context.persistentStoreCoordinator?.managedObjectID(forURIRepresentation: uri))
    }

    struct Outcome: Equatable {
        var title: String
        var pages: Int64
    }

    /// Saves a book ("T", 1) in one coordinator; both load it; the first saves title "A"; the
    /// second, under `policy`, saves title "B" and pages 2. Returns the book as stored and the
    /// second save's error.
    func race(_ policy: NSMergePolicy) async throws -> (Outcome, (any Error)?) {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let one = try await TestServer.container(model: model, schema: schema, listens: false)
        let two = try await TestServer.container(model: model, schema: schema, listens: false)
        let a = one.newBackgroundContext()
        let id = try await a.perform {
            let b = Book(context: a)
            b.title = "T"
            b.pages = 1
            try a.save()
            return b.objectID
        }
        let b = two.newBackgroundContext()
        b.mergePolicy = policy
        let uri = id.uriRepresentation()
        try await b.perform {
            let book = try #require(try b.existingObject(with: try Self.id(uri, in: b)) as? Book)
            #expect(book.title == "T")
        }
        try await a.perform {
            let book = try #require(try a.existingObject(with: id) as? Book)
            book.title = "A"
            try a.save()
        }
        let error: (any Error)? = await b.perform {
            do {
                let book = try #require(try b.existingObject(with: try Self.id(uri, in: b)) as? Book)
                book.title = "B"
                book.pages = 2
                try b.save()
                return nil
            } catch {
                return error
            }
        }
        let check = one.newBackgroundContext()
        let stored = try await check.perform {
            let book = try #require(try check.existingObject(with: id) as? Book)
            return Outcome(title: book.title, pages: book.pages)
        }
        return (stored, error)
    }

    @Test("Error policy: the second save fails with a merge conflict and writes nothing")
    func errorPolicy() async throws {
        let (stored, error) = try await race(.error)
        #expect((error as? CoreDataError)?.code == .managedObjectMerge)
        #expect(stored == Outcome(title: "A", pages: 1))
    }

    @Test("Object trump: the second writer's changed properties win, the rest is merged")
    func objectTrump() async throws {
        let (stored, error) = try await race(.mergeByPropertyObjectTrump)
        #expect(error == nil)
        #expect(stored == Outcome(title: "B", pages: 2))
    }

    @Test("Store trump: the stored title wins, the untouched-elsewhere pages take the change")
    func storeTrump() async throws {
        let (stored, error) = try await race(.mergeByPropertyStoreTrump)
        #expect(error == nil)
        #expect(stored == Outcome(title: "A", pages: 2))
    }

    @Test("Overwrite: the second writer's object wins whole")
    func overwrite() async throws {
        let (stored, error) = try await race(.overwrite)
        #expect(error == nil)
        #expect(stored == Outcome(title: "B", pages: 2))
    }

    @Test("Rollback: the stored object wins whole")
    func rollback() async throws {
        let (stored, error) = try await race(.rollback)
        #expect(error == nil)
        #expect(stored == Outcome(title: "A", pages: 1))
    }

    @Test("A uniqueness constraint holds across writers: the second insert of a label is a constraint conflict")
    func uniqueAcrossWriters() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let one = try await TestServer.container(model: model, schema: schema, listens: false)
        let two = try await TestServer.container(model: model, schema: schema, listens: false)
        let a = one.newBackgroundContext()
        try await a.perform {
            let t = Tag(context: a)
            t.label = "swift"
            try a.save()
        }
        let b = two.newBackgroundContext()
        let error: (any Error)? = await b.perform {
            let t = Tag(context: b)
            t.label = "swift"
            do {
                try b.save()
                return nil
            } catch { return error }
        }
        #expect((error as? CoreDataError)?.code == .managedObjectConstraintMerge)
        #expect((error as? CoreDataError)?.constraintConflicts.isEmpty == false)
        // Within one save, two new rows with one label clash too.
        let c = two.newBackgroundContext()
        let inOne: (any Error)? = await c.perform {
            for _ in 0..<2 {
                let t = Tag(context: c)
                t.label = "linux"
            }
            do {
                try c.save()
                return nil
            } catch { return error }
        }
        #expect((inOne as? CoreDataError)?.code == .managedObjectConstraintMerge)
        // Under object trump the new object takes the stored row's place: one row per label.
        let d = two.newBackgroundContext()
        d.mergePolicy = .mergeByPropertyObjectTrump
        try await d.perform {
            let t = Tag(context: d)
            t.label = "swift"
            t.uses = 7
            try d.save()
        }
        let check = one.newBackgroundContext()
        try await check.perform {
            let tags = try check.fetch(NSFetchRequest<Tag>(entityName: "Tag"))
            #expect(tags.map(\.label) == ["swift"])
            #expect(tags.first?.uses == 7)
        }
    }

    @Test("Swapping two unique values in one save is not a conflict (the constraint is checked at commit)")
    func swapUniqueValues() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema, listens: false)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let x = Tag(context: ctx)
            x.label = "x"
            let y = Tag(context: ctx)
            y.label = "y"
            try ctx.save()
            x.label = "y"
            y.label = "x"
            try ctx.save()
            ctx.reset()
            let r = NSFetchRequest<Tag>(entityName: "Tag")
            r.sortKeys = [SortKey("label")]
            #expect(try ctx.fetch(r).count == 2)
        }
    }

    @Test("Objects without relationships: a stale update and a stale delete are conflicts (versioned UPDATE and DELETE)")
    func unlinkedConflicts() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let one = try await TestServer.container(model: model, schema: schema, listens: false)
        let two = try await TestServer.container(model: model, schema: schema, listens: false)
        let a = one.newBackgroundContext()
        let (x, y) = try await a.perform {
            let x = Record(context: a)
            x.text = "x"
            let y = Record(context: a)
            y.text = "y"
            try a.save()
            return (x.objectID.uriRepresentation(), y.objectID.uriRepresentation())
        }
        let b = two.newBackgroundContext()
        try await b.perform {
            _ = try #require(try b.object(at: x, as: Record.self)).text
            _ = try #require(try b.object(at: y, as: Record.self)).text
        }
        try await a.perform {
            try #require(try a.object(at: x, as: Record.self)).large = 1
            try #require(try a.object(at: y, as: Record.self)).large = 1
            try a.save()
        }
        let error: (any Error)? = await b.perform {
            do {
                try #require(try b.object(at: x, as: Record.self)).large = 2
                b.delete(try #require(try b.object(at: y, as: Record.self)))
                try b.save()
                return nil
            } catch { return error }
        }
        let e = try #require(error as? CoreDataError)
        #expect(e.code == .managedObjectMerge)
        #expect(e.conflicts.count == 2)
        let check = one.newBackgroundContext()
        let stored = try await check.perform {
            let r = NSFetchRequest<Record>(entityName: "Record")
            r.sortKeys = [SortKey("text")]
            return try check.fetch(r).map(\.large)
        }
        #expect(stored == [1, 1])
    }
}
