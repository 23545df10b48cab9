import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

@Suite(
    "PostgreSQL store: migrating links between key columns and join tables", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct LinkMigrationTests {
    typealias M = MigrationModels

    /// Version 3 with the writer's `books` renamed `works` (renaming identifier `books`):
    /// the many-to-many's join table takes the new name, links kept.
    static let v4 = M.v3.replacingOccurrences(
        of: "<relationship name=\"books\" optional=\"YES\" toMany=\"YES\"",
        with: "<relationship name=\"works\" elementID=\"books\" optional=\"YES\" toMany=\"YES\""
    ).replacingOccurrences(of: "inverseName=\"books\" inverseEntity=\"Author\"", with: "inverseName=\"works\" inverseEntity=\"Author\"")

    /// Version 4 with a book's `authors` back to a to-one `author` (renaming identifier
    /// `authors`): one-to-many again, the links moved from the join table to the books' key
    /// column.
    static let v5 = v4.replacingOccurrences(
        of: "<relationship name=\"authors\" optional=\"YES\" toMany=\"YES\"",
        with: "<relationship name=\"author\" optional=\"YES\" maxCount=\"1\""
    ).replacingOccurrences(of: "inverseName=\"authors\" inverseEntity=\"Book\"", with: "inverseName=\"author\" inverseEntity=\"Book\""
    ).replacingOccurrences(of: "inverseEntity=\"Author\" elementID=\"writer\"", with: "inverseEntity=\"Author\" elementID=\"authors\"")

    /// Version 5 without the relationship.
    static let v6 = v5.split(separator: "\n").filter { !$0.contains("<relationship") }.joined(separator: "\n")

    /// Loads the store in `schema` with version `current` of `versions` (migrating it), and
    /// checks its shape against a new store of that version.
    private static func migrate(_ versions: [(String, String)], to current: String, schema: String) async throws -> NSPersistentContainer {
        let models = try M(versions, current: current)
        defer { models.remove() }
        let model = try models.current()
        let container = try await SchemaMigrationTests.load(model, schema: schema)
        let fresh = TestServer.freshSchema()
        defer { TestServer.drop(fresh, model: model) }
        try TestServer.store(model: model, schema: fresh).close()
        let (migrated, created) = try (SchemaMigrationTests.shape(of: schema), SchemaMigrationTests.shape(of: fresh))
        #expect(migrated == created, "\(current) differs: \(Set(migrated).symmetricDifference(created).sorted())")
        return container
    }

    /// Each book's writers' names, read from the books (`toBooks`: the writers' key) and from
    /// the writers.
    private static func links(_ container: NSPersistentContainer, bookEnd: String, writerEnd: String) async throws
        -> (fromBooks: [String: Set<String>], fromWriters: [String: Set<String>])
    {
        let ctx = container.newBackgroundContext()
        return try await ctx.perform {
            var fromBooks: [String: Set<String>] = [:]
            var fromWriters: [String: Set<String>] = [:]
            for b in try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Book")) {
                let title = b.value(forKey: "title") as? String ?? ""
                let value = b.value(forKey: bookEnd)
                let writers = (value as? Set<NSManagedObject>).map(Array.init) ?? (value as? NSManagedObject).map { [$0] } ?? []
                fromBooks[title] = Set(writers.compactMap { $0.value(forKey: "fullName") as? String })
            }
            for w in try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")) {
                for b in w.value(forKey: writerEnd) as? Set<NSManagedObject> ?? [] {
                    fromWriters[b.value(forKey: "title") as? String ?? "", default: []].insert(w.value(forKey: "fullName") as? String ?? "")
                }
            }
            return (fromBooks, fromWriters)
        }
    }

    @Test("A one-to-many becomes a join table, is renamed, becomes a key column again and is removed: links kept at each step")
    func keyColumnToJoinTableAndBack() async throws {
        var versions = [("V1", M.v1), ("V2", M.v2), ("V3", M.v3)]
        let v1 = try M(versions, current: "V1").version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        try await SchemaMigrationTests.seed(v1, schema: schema)
        let expected: [String: Set<String>] = ["Notes": ["Ada"], "Poems": ["Ada"], "Tales": ["Bob"]]

        var container = try await Self.migrate(versions, to: "V3", schema: schema)
        var read = try await Self.links(container, bookEnd: "authors", writerEnd: "books")
        #expect(read.fromBooks == expected && read.fromWriters == expected, "V3: \(read)")
        SchemaMigrationTests.close(container)

        versions.append(("V4", Self.v4))
        container = try await Self.migrate(versions, to: "V4", schema: schema)
        read = try await Self.links(container, bookEnd: "authors", writerEnd: "works")
        #expect(read.fromBooks == expected && read.fromWriters == expected, "V4: \(read)")
        SchemaMigrationTests.close(container)

        versions.append(("V5", Self.v5))
        container = try await Self.migrate(versions, to: "V5", schema: schema)
        read = try await Self.links(container, bookEnd: "author", writerEnd: "works")
        #expect(read.fromBooks == expected && read.fromWriters == expected, "V5: \(read)")
        SchemaMigrationTests.close(container)

        versions.append(("V6", Self.v6))
        container = try await Self.migrate(versions, to: "V6", schema: schema)
        let ctx = container.newBackgroundContext()
        let books = try await ctx.perform { try ctx.count(for: NSFetchRequest<NSManagedObject>(entityName: "Book")) }
        #expect(books == 3)
        SchemaMigrationTests.close(container)
    }

    @Test("A many-to-many whose book has two writers cannot become one-to-many: typed, nothing changed")
    func joinTableHoldingSeveral() async throws {
        var versions = [("V1", M.v1), ("V2", M.v2), ("V3", M.v3), ("V4", Self.v4)]
        let v1 = try M(versions, current: "V1").version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        try await SchemaMigrationTests.seed(v1, schema: schema)
        let container = try await Self.migrate(versions, to: "V4", schema: schema)
        let ctx = container.newBackgroundContext()
        let notesKey = try await ctx.perform {
            let writers = try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author"))
            let request = NSFetchRequest<NSManagedObject>(entityName: "Book")
            request.predicate = NSPredicate(format: "title == %@", "Notes")
            let notes = try #require(try ctx.fetch(request).first)
            notes.setValue(Set(writers), forKey: "authors")
            try ctx.save()
            return Int64(notes.objectID.uriRepresentation().lastPathComponent.dropFirst())
        }
        SchemaMigrationTests.close(container)
        let before = try SchemaMigrationTests.shape(of: schema)

        versions.append(("V5", Self.v5))
        let models = try M(versions, current: "V5")
        defer { models.remove() }
        let error = await #expect(throws: CoreDataError.self) {
            _ = try await SchemaMigrationTests.load(try models.current(), schema: schema)
        }
        let key = try #require(notesKey)
        #expect((error?.underlying as? MigrationError)?.kind == .toManyHoldsSeveral(primaryKey: key), "\(String(describing: error))")
        #expect(try SchemaMigrationTests.shape(of: schema) == before)
    }
}
