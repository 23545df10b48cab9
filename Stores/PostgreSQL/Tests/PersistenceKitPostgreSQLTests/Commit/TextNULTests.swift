import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

@Suite("PostgreSQL store: strings holding U+0000", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct TextNULTests {
    /// The store's error under `error`, whether the save threw it as is or wrapped it.
    private func storeError(_ error: (any Error)?) -> PostgreSQLStoreError? {
        if let e = error as? PostgreSQLStoreError { return e }
        return (error as? CoreDataError)?.underlying as? PostgreSQLStoreError
    }

    @Test("A save with a NUL in a String attribute fails, typed, naming the object, and writes nothing")
    func nulRefused() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema)
        let ctx = container.newBackgroundContext()
        let (error, key) = await ctx.perform { () -> ((any Error)?, Int64) in
            let fine = Record(context: ctx)
            fine.text = "whole"
            let bad = Record(context: ctx)
            bad.text = "before\u{0}after"
            do {
                try ctx.obtainPermanentIDs(for: [bad])
                try ctx.save()
                return (nil, 0)
            } catch {
                let key = Int64(bad.objectID.uriRepresentation().lastPathComponent.dropFirst()) ?? -1
                return (error, key)
            }
        }
        let e = try #require(storeError(error), "\(String(describing: error))")
        #expect(e.kind == .textHoldsNUL(entity: "Record", attribute: "text", primaryKey: key), "\(e)")
        #expect(e.message.contains("U+0000") && e.message.contains("Binary Data"), "\(e.message)")
        let reader = container.newBackgroundContext()
        let stored = try await reader.perform { try reader.count(for: NSFetchRequest<Record>(entityName: "Record")) }
        #expect(stored == 0, "nothing of the save was written")
    }

    @Test("Binary Data keeps the NUL bytes a string cannot")
    func nulInData() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema)
        let ctx = container.newBackgroundContext()
        let bytes = Data("before\u{0}after".utf8)
        let id = try await ctx.perform {
            let r = Record(context: ctx)
            r.blob = bytes
            try ctx.save()
            return r.objectID
        }
        let reader = container.newBackgroundContext()
        try await reader.perform {
            let r = try #require(try reader.existingObject(with: id) as? Record)
            #expect(r.blob == bytes)
        }
    }
}
