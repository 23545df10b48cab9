import Foundation
import PersistenceKit
import Testing

@testable import PersistenceKitPostgreSQL

/// Loading a PostgreSQL store written with an older model version migrates its schema in
/// one transaction, with the mapping a file store's lightweight migration infers; a change
/// that cannot be inferred is the same typed error and leaves the schema as it was.
@Suite("PostgreSQL store: lightweight migration of the schema", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct SchemaMigrationTests {
    typealias M = MigrationModels

    /// A container on `schema` with `model`; `migrate: false` turns automatic migration off.
    static func load(
        _ model: NSManagedObjectModel, schema: String, migrate: Bool = true, staged: NSStagedMigrationManager? = nil
    ) async throws -> NSPersistentContainer {
        PostgreSQLStore.register()
        let container = NSPersistentContainer(name: "Library", managedObjectModel: model)
        let description = NSPersistentStoreDescription(url: TestServer.url, type: NSPostgreSQLStoreType)
        for (k, v) in TestServer.options(schema: schema, listens: false) { description.setOption(v, forKey: k) }
        description.shouldMigrateStoreAutomatically = migrate
        description.stagedMigrationManager = staged
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        return container
    }

    static func close(_ container: NSPersistentContainer) {
        for store in container.persistentStoreCoordinator.persistentStores { (store as? PostgreSQLStore)?.close() }
    }

    /// Writers Ada (36, three books of which two hers) and Bob (no age, one book), saved with
    /// version 1. Returns the objects' URIs by name or title.
    @discardableResult
    static func seed(_ model: NSManagedObjectModel, schema: String) async throws -> [String: URL] {
        let container = try await load(model, schema: schema)
        defer { close(container) }
        let ctx = container.newBackgroundContext()
        return try await ctx.perform {
            func make(_ entity: String, _ values: [String: Any]) throws -> NSManagedObject {
                let o = NSManagedObject(entity: try #require(model.entitiesByName[entity]), insertInto: ctx)
                for (k, v) in values { o.setValue(v, forKey: k) }
                return o
            }
            let ada = try make("Writer", ["name": "Ada", "age": Int16(36), "nickname": "countess"])
            let bob = try make("Writer", ["name": "Bob"])
            let notes = try make("Book", ["title": "Notes", "pages": Int16(120), "writer": ada])
            let poems = try make("Book", ["title": "Poems", "writer": ada])
            let tales = try make("Book", ["title": "Tales", "pages": Int16(300), "writer": bob])
            try ctx.save()
            var uris: [String: URL] = [:]
            for (k, o) in [("Ada", ada), ("Bob", bob), ("Notes", notes), ("Poems", poems), ("Tales", tales)] {
                uris[k] = o.objectID.uriRepresentation()
            }
            return uris
        }
    }

    /// Each table's columns with their types, and the store's indexes and constraints, with
    /// the schema's name left out: what two stores of one model share however they came about.
    static func shape(of schema: String) throws -> [String] {
        let admin = try AdminConnection(url: try #require(TestServer.url))
        let columns = try admin.column(
            "SELECT table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns "
                + "WHERE table_schema = '\(schema)' ORDER BY 1")
        let indexes = try admin.column(
            "SELECT replace(indexdef, '\(schema)', 'S') FROM pg_indexes WHERE schemaname = '\(schema)' ORDER BY 1")
        let constraints = try admin.column(
            "SELECT conname || ' ' || pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
                + "WHERE n.nspname = '\(schema)' ORDER BY 1")
        return columns + indexes + constraints
    }

    static func metadataHash(_ schema: String) throws -> String? {
        let admin = try AdminConnection(url: try #require(TestServer.url))
        return try admin.column("SELECT value FROM \"\(schema)\".\"_pk_metadata\" WHERE key = '\(PersistenceKitModelLayoutHashKey)'").first
    }

    @Test("A populated schema migrates across versions: renames, widenings, new and removed properties, a new entity")
    func migratesPopulatedSchema() async throws {
        let models = try M([("V1", M.v1), ("V2", M.v2)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        let uris = try await Self.seed(v1, schema: schema)

        let v2 = try models.current()
        let container = try await Self.load(v2, schema: schema)
        defer { Self.close(container) }
        #expect(SchemaMigration.committed.withLock { $0[schema] } == 1)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let authors = try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author"))
                .sorted { ($0.value(forKey: "fullName") as? String ?? "") < ($1.value(forKey: "fullName") as? String ?? "") }
            #expect(authors.map { $0.value(forKey: "fullName") as? String } == ["Ada", "Bob"], "entity and attribute renamed")
            #expect(authors[0].value(forKey: "age") as? Int64 == 36, "Integer 16 widened to Integer 64")
            #expect(authors[1].value(forKey: "age") == nil)
            #expect(authors[0].value(forKey: "email") == nil, "a new optional attribute starts empty")
            #expect(authors.map { $0.value(forKey: "rank") as? Int32 } == [7, 7], "a new required attribute starts at its default")
            let ada = authors[0]
            #expect(ada.objectID.uriRepresentation().lastPathComponent == uris["Ada"]?.lastPathComponent, "primary keys kept")
            #expect(ada.objectID.uriRepresentation().host == uris["Ada"]?.host, "the store keeps its identifier")
            let adaBooks = (ada.value(forKey: "books") as? Set<NSManagedObject> ?? []).compactMap { $0.value(forKey: "title") as? String }
            #expect(adaBooks.sorted() == ["Notes", "Poems"], "the to-many kept")
            let books = try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Book"))
            for b in books {
                let author = b.value(forKey: "author") as? NSManagedObject
                let expected = b.value(forKey: "title") as? String == "Tales" ? "Bob" : "Ada"
                #expect(author?.value(forKey: "fullName") as? String == expected, "the renamed to-one kept, both ends agree")
            }
            #expect(books.first { $0.value(forKey: "title") as? String == "Tales" }?.value(forKey: "pages") as? Int64 == 300)

            // Usable: new objects of the new and old entities, linked, and an edit.
            let shelf = NSManagedObject(entity: try #require(v2.entitiesByName["Shelf"]), insertInto: ctx)
            #expect(shelf.value(forKey: "label") as? String == "new")
            let book = NSManagedObject(entity: try #require(v2.entitiesByName["Book"]), insertInto: ctx)
            book.setValue("Letters", forKey: "title")
            book.setValue(Int64(1) << 40, forKey: "pages")
            book.setValue(authors[1], forKey: "author")
            authors[1].setValue("bob@example.com", forKey: "email")
            try ctx.save()
        }
        let check = container.newBackgroundContext()
        try await check.perform {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Author")
            request.predicate = NSPredicate(format: "email == %@", "bob@example.com")
            let bob = try #require(try check.fetch(request).first)
            #expect((bob.value(forKey: "books") as? Set<NSManagedObject>)?.count == 2)
            #expect(try check.count(for: NSFetchRequest<NSManagedObject>(entityName: "Shelf")) == 1)
        }

        // The migrated schema is the one a new store of version 2 gets.
        let fresh = TestServer.freshSchema()
        defer { TestServer.drop(fresh, model: v2) }
        try TestServer.store(model: v2, schema: fresh).close()
        let (migrated, created) = try (Self.shape(of: schema), Self.shape(of: fresh))
        #expect(migrated == created, "differences: \(Set(migrated).symmetricDifference(created).sorted())")
        // It opens again without migrating.
        let again = try await Self.load(try models.current(), schema: schema)
        Self.close(again)
        #expect(SchemaMigration.committed.withLock { $0[schema] } == 1)
    }

    @Test("A change lightweight migration cannot infer is the file store's typed error; the schema is unchanged")
    func refusedChangeLeavesSchema() async throws {
        let models = try M([("V1", M.v1), ("V2", M.ageAsText)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        try await Self.seed(v1, schema: schema)
        let before = try Self.shape(of: schema)
        let hash = try Self.metadataHash(schema)

        let error = await #expect(throws: CoreDataError.self) { _ = try await Self.load(try models.current(), schema: schema) }
        #expect(error?.code == .migration)
        let cause = error?.underlying as? MigrationError
        #expect(cause?.kind == .incompatibleType(from: .integer16AttributeType, to: .stringAttributeType), "\(String(describing: error))")
        #expect(cause?.entity == "Writer" && cause?.property == "age")
        #expect(try Self.shape(of: schema) == before)
        #expect(try Self.metadataHash(schema) == hash)
        try await Self.expectVersion1Intact(v1, schema: schema)
    }

    @Test("A stored value that stands in the way rolls back the statements already run")
    func storedValueRollsBack() async throws {
        let models = try M([("V1", M.v1), ("V2", M.ageRequired)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        let uris = try await Self.seed(v1, schema: schema)
        let before = try Self.shape(of: schema)
        let hash = try Self.metadataHash(schema)

        let error = await #expect(throws: CoreDataError.self) { _ = try await Self.load(try models.current(), schema: schema) }
        #expect(error?.code == .migration)
        let cause = error?.underlying as? MigrationError
        let bobKey = try #require(uris["Bob"].flatMap { Int64($0.lastPathComponent.dropFirst()) })
        #expect(cause?.kind == .requiredWithoutDefault(primaryKey: bobKey), "\(String(describing: error))")
        #expect(cause?.entity == "Author" && cause?.property == "age")
        // The table rename and column changes that ran before the check are undone.
        #expect(try Self.shape(of: schema) == before)
        #expect(try Self.metadataHash(schema) == hash)
        #expect(SchemaMigration.committed.withLock { $0[schema] } == nil)
        try await Self.expectVersion1Intact(v1, schema: schema)
    }

    @Test("A to-one becomes to-many in the same transaction as the renames; links kept, both ends agree")
    func toOneBecomesToMany() async throws {
        let models = try M([("V1", M.v1), ("V2", M.v2), ("V3", M.v3)], current: "V3")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        try await Self.seed(v1, schema: schema)

        let v3 = try models.current()
        let container = try await Self.load(v3, schema: schema)
        defer { Self.close(container) }
        #expect(SchemaMigration.committed.withLock { $0[schema] } == 1)
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            for b in try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Book")) {
                let authors = (b.value(forKey: "authors") as? Set<NSManagedObject> ?? []).compactMap { $0.value(forKey: "fullName") as? String }
                #expect(authors == [b.value(forKey: "title") as? String == "Tales" ? "Bob" : "Ada"])
            }
            // Many to many now: Bob joins Ada's "Notes"; both ends agree.
            let request = NSFetchRequest<NSManagedObject>(entityName: "Author")
            request.predicate = NSPredicate(format: "fullName == %@", "Bob")
            let bob = try #require(try ctx.fetch(request).first)
            let notesRequest = NSFetchRequest<NSManagedObject>(entityName: "Book")
            notesRequest.predicate = NSPredicate(format: "title == %@", "Notes")
            let notes = try #require(try ctx.fetch(notesRequest).first)
            notes.mutableSetValue(forKey: "authors").insert(bob)
            try ctx.save()
            #expect((bob.value(forKey: "books") as? Set<NSManagedObject>)?.count == 2)
        }
        let fresh = TestServer.freshSchema()
        defer { TestServer.drop(fresh, model: v3) }
        try TestServer.store(model: v3, schema: fresh).close()
        let (migrated, created) = try (Self.shape(of: schema), Self.shape(of: fresh))
        #expect(migrated == created, "differences: \(Set(migrated).symmetricDifference(created).sorted())")
    }

    @Test("A to-many holding several objects cannot become to-one: typed, nothing changed")
    func toManyHoldingSeveral() async throws {
        let models = try M([("V1", M.v1), ("V2", M.booksToOne)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        let uris = try await Self.seed(v1, schema: schema)
        let before = try Self.shape(of: schema)

        let error = await #expect(throws: CoreDataError.self) { _ = try await Self.load(try models.current(), schema: schema) }
        let adaKey = try #require(uris["Ada"].flatMap { Int64($0.lastPathComponent.dropFirst()) })
        #expect((error?.underlying as? MigrationError)?.kind == .toManyHoldsSeveral(primaryKey: adaKey), "\(String(describing: error))")
        #expect(try Self.shape(of: schema) == before)
        try await Self.expectVersion1Intact(v1, schema: schema)
    }

    @Test("A staged migration of lightweight stages runs in place, in one transaction")
    func stagedMigration() async throws {
        let models = try M([("V1", M.v1), ("V2", M.v2)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        try await Self.seed(v1, schema: schema)
        let v2 = try models.current()

        let stages = NSStagedMigrationManager([NSLightweightMigrationStage([v1.versionChecksum, v2.versionChecksum])])
        let container = try await Self.load(v2, schema: schema, migrate: false, staged: stages)
        defer { Self.close(container) }
        let ctx = container.newBackgroundContext()
        let authors = try await ctx.perform { try ctx.count(for: NSFetchRequest<NSManagedObject>(entityName: "Author")) }
        #expect(authors == 2)
        #expect(SchemaMigration.committed.withLock { $0[schema] } == 1)
    }

    /// The seeded objects read back with version 1, links and all.
    static func expectVersion1Intact(_ v1: NSManagedObjectModel, schema: String) async throws {
        let container = try await load(v1, schema: schema)
        defer { close(container) }
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let writers = try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Writer"))
            let byName = Dictionary(uniqueKeysWithValues: writers.map { ($0.value(forKey: "name") as? String ?? "", $0) })
            #expect(byName["Ada"]?.value(forKey: "nickname") as? String == "countess")
            #expect(byName["Ada"]?.value(forKey: "age") as? Int16 == 36)
            #expect((byName["Ada"]?.value(forKey: "books") as? Set<NSManagedObject>)?.count == 2)
            #expect((byName["Bob"]?.value(forKey: "books") as? Set<NSManagedObject>)?.count == 1)
            #expect(try ctx.count(for: NSFetchRequest<NSManagedObject>(entityName: "Book")) == 3)
        }
    }

    @Test("Two containers opening the new version at once: one migrates, both work")
    func concurrentOpens() async throws {
        let models = try M([("V1", M.v1), ("V2", M.v2)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        try await Self.seed(v1, schema: schema)

        let (a, b) = try (models.current(), models.current())
        async let first = Self.load(a, schema: schema)
        async let second = Self.load(b, schema: schema)
        let containers = try await [first, second]
        defer { containers.forEach(Self.close) }
        #expect(SchemaMigration.committed.withLock { $0[schema] } == 1)
        for (i, container) in containers.enumerated() {
            let ctx = container.newBackgroundContext()
            try await ctx.perform {
                #expect(try ctx.count(for: NSFetchRequest<NSManagedObject>(entityName: "Author")) == 2 + i)
                let author = NSManagedObject(entity: try #require(container.managedObjectModel.entitiesByName["Author"]), insertInto: ctx)
                author.setValue("Writer \(i)", forKey: "fullName")
                try ctx.save()
            }
        }
    }
}
