import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// Batch requests reach the PostgreSQL store through its commit and fetches, as any store's.
@Suite("PostgreSQL store: batch requests", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct BatchRequestTests {
    @Test("Batch insert, update and delete change the stored rows; links stay in agreement")
    func insertUpdateDelete() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema, listens: false)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let insert = NSBatchInsertRequest(
                entityName: "Book", objects: (0..<200).map { ["title": "b\($0)", "pages": Int64($0)] })
            insert.resultType = .count
            #expect((try ctx.execute(insert) as? NSBatchInsertResult)?.result as? Int == 200)

            let update = NSBatchUpdateRequest(entityName: "Book")
            update.predicate = NSPredicate(format: "pages < 50")
            update.propertiesToUpdate = ["title": "short"]
            update.resultType = .updatedObjectsCountResultType
            #expect((try ctx.execute(update) as? NSBatchUpdateResult)?.result as? Int == 50)

            let shelf = Shelf(context: ctx)
            shelf.name = "s"
            let r = NSFetchRequest<Book>(entityName: "Book")
            r.predicate = NSPredicate(format: "pages >= 150")
            for b in try ctx.fetch(r) { b.shelf = shelf }
            try ctx.save()

            let fetch = NSFetchRequest<Book>(entityName: "Book")
            fetch.predicate = NSPredicate(format: "pages >= 180")
            let delete = NSBatchDeleteRequest(fetchRequest: fetch)
            delete.resultType = .resultTypeCount
            #expect((try ctx.execute(delete) as? NSBatchDeleteResult)?.result as? Int == 20)

            ctx.reset()
            let titled = NSFetchRequest<Book>(entityName: "Book")
            titled.predicate = NSPredicate(format: "title == 'short'")
            #expect(try ctx.count(for: titled) == 50)
            #expect(try ctx.count(for: NSFetchRequest<Book>(entityName: "Book")) == 180)
            let shelves = try ctx.fetch(NSFetchRequest<Shelf>(entityName: "Shelf"))
            #expect(shelves.first?.books.count == 30)
        }
    }
}
