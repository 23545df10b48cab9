import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// The to-many end of a one-to-many into an entity family is read across the family's
/// tables; a stored link into a family (a to-one, a many-to-many, a key list) is refused
/// with a typed error naming it, when a store is made or migrated, rather than read back as
/// the wrong entity; links into entities without sub-entities are kept as before.
@Suite("PostgreSQL store: relationships and entity families", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct EntityFamilyLinkTests {
    /// The store's error in `error`: thrown as is, or the cause of a Core Data error.
    static func storeError(_ error: (any Error)?) -> PostgreSQLStoreError? {
        if let e = error as? PostgreSQLStoreError { return e }
        if let e = error as? CoreDataError { return storeError(e.underlying) }
        return nil
    }

    @Test("An end read from a family's ordered lists is refused at schema creation, named, and nothing is created")
    func refusedAtCreation() async throws {
        let model = try FamilyModels.owners()
        let kennels = try FamilyModels.kennels()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: kennels) }
        let error = #expect(throws: PostgreSQLStoreError.self) { _ = try TestServer.store(model: model, schema: schema) }
        #expect(error?.kind == .unsupportedModel)
        let message = error?.message ?? ""
        #expect(message.contains("FMPal.animals"))
        #expect(message.contains("FMAnimal"))
        #expect(message.contains("not support"))
        // The to-many end of a one-to-many is read across the family, and the relationships
        // out of the family lead to entities without sub-entities: none is named.
        #expect(!message.contains("FMOwner.pets"))
        #expect(!message.contains("FMOwner.favourite"))
        #expect(!message.contains("FMAnimal.pals"))
        #expect(!message.contains("FMAnimal.owner"))
        #expect(!message.contains("FMAnimal.toys"))
        // Nothing was made: the schema still takes a store of another model.
        let other = try TestServer.store(model: kennels, schema: schema)
        other.close()
    }

    @Test("A container loading such a model reports the store's typed error")
    func refusedThroughContainer() async throws {
        let model = try FamilyModels.owners()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        do {
            _ = try await TestServer.container(model: model, schema: schema)
            Issue.record("the store opened a model with relationships into an entity family")
        } catch {
            let cause = Self.storeError(error)
            #expect(cause?.kind == .unsupportedModel, "got \(error)")
            #expect(cause?.message.contains("FMPal.animals") == true)
        }
    }

    @Test("Migrating to a model with a sub-entity below a one-to-many's books keeps the links and reads its table too")
    func migratesIntoFamily() async throws {
        let novel = MigrationModels.v1 + """
            <entity name="Novel" parentEntity="Book">
                <attribute name="genre" optional="YES" attributeType="String"/>
            </entity>
            """
        let models = try MigrationModels([("v1", MigrationModels.v1), ("v2", novel)], current: "v2")
        defer { models.remove() }
        let v1 = try models.version("v1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        try await SchemaMigrationTests.seed(v1, schema: schema)
        let migrated = try await SchemaMigrationTests.load(try models.current(), schema: schema)
        let ctx = migrated.newBackgroundContext()
        try await ctx.perform {
            let writers = NSFetchRequest<NSManagedObject>(entityName: "Writer")
            writers.predicate = NSPredicate(format: "name == %@", "Ada")
            guard let ada = try ctx.fetch(writers).first else {
                Issue.record("Ada is gone")
                return
            }
            let story = NSEntityDescription.insertNewObject(forEntityName: "Novel", into: ctx)
            story.setValue("Saga", forKey: "title")
            story.setValue("epic", forKey: "genre")
            story.setValue(ada, forKey: "writer")
            try ctx.save()
        }
        SchemaMigrationTests.close(migrated)
        let reopened = try await SchemaMigrationTests.load(try models.current(), schema: schema)
        defer { SchemaMigrationTests.close(reopened) }
        let rc = reopened.newBackgroundContext()
        try await rc.perform {
            let writers = NSFetchRequest<NSManagedObject>(entityName: "Writer")
            writers.predicate = NSPredicate(format: "name == %@", "Ada")
            let ada = try rc.fetch(writers).first
            let books = ada?.value(forKey: "books") as? Set<NSManagedObject> ?? []
            let titles = books.compactMap { $0.value(forKey: "title") as? String }
            #expect(Set(titles) == ["Notes", "Poems", "Saga"])
            #expect(books.first { $0.value(forKey: "title") as? String == "Saga" }?.objectID.entity.name == "Novel")
            #expect(try rc.count(for: NSFetchRequest<NSManagedObject>(entityName: "Book")) == 4)
        }
    }

    @Test("A store with a to-one into a family records layout version 3, and migrating it is refused with a typed error")
    func familyToOneLayout() async throws {
        let model = try FamilyModels.pets()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let store = try TestServer.store(model: model, schema: schema)
        #expect(store.metadata[PostgreSQLStore.layoutVersionKey] == "3")
        store.close()
        let bookshelf = try Models.bookshelf()
        let plainSchema = TestServer.freshSchema()
        defer { TestServer.drop(plainSchema, model: bookshelf) }
        let plain = try TestServer.store(model: bookshelf, schema: plainSchema)
        #expect(plain.metadata[PostgreSQLStore.layoutVersionKey] == "2")
        plain.close()

        let best = MigrationModels.v1.replacingOccurrences(
            of: "<attribute name=\"nickname\" optional=\"YES\" attributeType=\"String\"/>",
            with: "<attribute name=\"nickname\" optional=\"YES\" attributeType=\"String\"/>"
                + "<relationship name=\"best\" optional=\"YES\" maxCount=\"1\" deletionRule=\"Nullify\" destinationEntity=\"Book\"/>")
            + "<entity name=\"Novel\" parentEntity=\"Book\"><attribute name=\"genre\" optional=\"YES\" attributeType=\"String\"/></entity>"
        let models = try MigrationModels([("v1", MigrationModels.v1), ("v2", best)], current: "v2")
        defer { models.remove() }
        let v1 = try models.version("v1")
        let migrating = TestServer.freshSchema()
        defer { TestServer.drop(migrating, model: v1) }
        try await SchemaMigrationTests.seed(v1, schema: migrating)
        do {
            let c = try await SchemaMigrationTests.load(try models.current(), schema: migrating)
            SchemaMigrationTests.close(c)
            Issue.record("the store migrated to a model with a to-one into an entity family")
        } catch {
            #expect("\(error)".contains("Writer.best"), "got \(error)")
        }
        let again = try await SchemaMigrationTests.load(v1, schema: migrating, migrate: false)
        defer { SchemaMigrationTests.close(again) }
        let ctx = again.newBackgroundContext()
        #expect(try await ctx.perform { try ctx.count(for: NSFetchRequest<NSManagedObject>(entityName: "Book")) } == 3)
    }

    @Test("A layout-2 store of a model with links into a family (made without entity columns) is refused as unsupportedLayout")
    func earlierLayoutRefused() async throws {
        let model = try FamilyModels.pets()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        try TestServer.store(model: model, schema: schema).close()
        let admin = try AdminConnection(url: try #require(TestServer.url))
        // The join table's sides: the animals' with their entities, the toys' key alone.
        let columns = try admin.column(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = '\(schema)' "
                + "AND table_name = '_pk_link_PAnimal_toys' ORDER BY ordinal_position")
        #expect(columns == ["source", "source_entity", "target"])
        try admin.run("UPDATE \"\(schema)\".\"_pk_metadata\" SET value = '2' WHERE key = '\(PostgreSQLStore.layoutVersionKey)'")
        let error = #expect(throws: PostgreSQLStoreError.self) { _ = try TestServer.store(model: model, schema: schema) }
        #expect(error?.kind == .unsupportedLayout(found: "2"))
    }

    @Test("A family whose links lead to a sub-entity without sub-entities keeps entities, links and predicates")
    func leafLinksRoundTrip() async throws {
        let model = try FamilyModels.kennels()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let writer = try await TestServer.container(model: model, schema: schema, name: "writer", listens: false)
        let ctx = writer.newBackgroundContext()
        try await ctx.perform {
            let north = FLKennel(context: ctx)
            north.name = "North"
            let south = FLKennel(context: ctx)
            south.name = "South"
            for (name, kennel) in [("Rex", north), ("Fido", north), ("Bolt", south)] {
                let dog = FLDog(context: ctx)
                dog.name = name
                dog.kennel = kennel
            }
            FLCat(context: ctx).name = "Tom"
            FLAnimal(context: ctx).name = "Generic"
            try ctx.save()
        }
        let reader = try await TestServer.container(model: model, schema: schema, name: "reader", listens: false)
        let rc = reader.newBackgroundContext()
        try await rc.perform {
            let kennels = try rc.fetch(NSFetchRequest<FLKennel>(entityName: "FLKennel")).sorted { $0.name < $1.name }
            #expect(kennels.map(\.name) == ["North", "South"])
            #expect(Set(kennels[0].dogs.map(\.name)) == ["Rex", "Fido"])
            #expect(kennels[0].dogs.allSatisfy { $0.objectID.entity.name == "FLDog" && $0.kennel === kennels[0] })
            let animals = try rc.fetch(NSFetchRequest<FLAnimal>(entityName: "FLAnimal"))
            #expect(animals.count == 5)
            #expect(animals.filter { $0 is FLDog }.count == 3)
            #expect(animals.filter { $0 is FLCat }.map(\.name) == ["Tom"])
            let withRex = NSFetchRequest<FLKennel>(entityName: "FLKennel")
            withRex.predicate = NSPredicate(format: "ANY dogs.name == %@", "Rex")
            #expect(try rc.fetch(withRex).map(\.name) == ["North"])
            let inNorth = NSFetchRequest<FLDog>(entityName: "FLDog")
            inNorth.predicate = NSPredicate(format: "kennel.name == %@", "North")
            #expect(Set(try rc.fetch(inNorth).map(\.name)) == ["Rex", "Fido"])
            // The cascade reaches the dogs, and only them.
            rc.delete(kennels[0])
            try rc.save()
            #expect(try rc.fetch(NSFetchRequest<FLAnimal>(entityName: "FLAnimal")).count == 3)
        }
        for c in [writer, reader] { SchemaMigrationTests.close(c) }
    }
}
