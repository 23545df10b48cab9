import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

@Suite("PostgreSQL store: values round-trip", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct ValueRoundTripTests {
    @Test("Every attribute type reads back as saved, extremes included")
    func everyType() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema)
        let ctx = container.newBackgroundContext()
        let when = Date(timeIntervalSinceReferenceDate: 123_456.789_012_345_6)
        let blob = Data((0...255).map { UInt8($0) })
        let uuid = UUID()
        let id = try await ctx.perform {
            let r = Record(context: ctx)
            r.small = .min
            r.medium = .max
            r.large = .min
            r.ratio = 0.1 + 0.2
            r.single = .leastNonzeroMagnitude
            r.amount = Decimal(string: "12345678901234567890.123456789")!
            r.text = "naïve 🐘 \u{301}"
            r.flag = true
            r.when = when
            r.blob = blob
            r.uuid = uuid
            r.link = URL(string: "https://example.com/a?b=c#d")
            try ctx.save()
            return r.objectID
        }
        let reader = container.newBackgroundContext()
        try await reader.perform {
            let r = try #require(try reader.existingObject(with: id) as? Record)
            #expect(r.small == .min)
            #expect(r.medium == .max)
            #expect(r.large == .min)
            #expect(r.ratio == 0.1 + 0.2)
            #expect(r.single == .leastNonzeroMagnitude)
            #expect(r.amount == Decimal(string: "12345678901234567890.123456789")!)
            #expect(r.text == "naïve 🐘 \u{301}")
            #expect(r.flag)
            #expect(r.when == when)
            #expect(r.blob == blob)
            #expect(r.uuid == uuid)
            #expect(r.link == URL(string: "https://example.com/a?b=c#d"))
        }
    }

    @Test("Injection attempts are just data: quotes, SQL keywords, backslashes and binary round-trip and match")
    func injectionAttempts() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema)
        let hostile = [
            "'; DROP TABLE \"Book\"; --", "Robert'); DELETE FROM \"Shelf\" WHERE ('1'='1", "\\\"quoted\\\" $1 $$ $tag$",
            "O'Reilly", "%_*?[]", "{\"a\",\"b\"}", "NULL", "' OR 1=1 --",
        ]
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            for (i, title) in hostile.enumerated() {
                let b = Book(context: ctx)
                b.title = title
                b.pages = Int64(i)
                let r = Record(context: ctx)
                r.text = title
                r.blob = Data(title.utf8) + Data([0xFF, 0x27, 0x5C, 0x00, 0x01])
            }
            try ctx.save()
        }
        try await ctx.perform {
            ctx.reset()
            for title in hostile {
                let byTitle = NSFetchRequest<Book>(entityName: "Book")
                byTitle.predicate = NSPredicate(format: "title == %@", title)
                #expect(try ctx.fetch(byTitle).map(\.title) == [title])
                let containing = NSFetchRequest<Book>(entityName: "Book")
                containing.predicate = NSPredicate(format: "title CONTAINS %@", title)
                #expect(try ctx.fetch(containing).map(\.title).contains(title))
                let records = NSFetchRequest<Record>(entityName: "Record")
                records.predicate = NSPredicate(format: "text IN %@", argumentArray: [[title, "x"]])
                let found = try ctx.fetch(records)
                #expect(found.count == 1)
                #expect(found.first?.blob == Data(title.utf8) + Data([0xFF, 0x27, 0x5C, 0x00, 0x01]))
            }
            #expect(try ctx.count(for: NSFetchRequest<Book>(entityName: "Book")) == hostile.count)
        }
    }
}
