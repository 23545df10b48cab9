import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// Ends read across an entity family's tables, the layout version of stores with links kept
/// with entities, and migrations: what is migrated, and what is refused with a typed error
/// that leaves the store as it was; links into entities without sub-entities are kept as
/// before.
@Suite("PostgreSQL store: relationships and entity families", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct EntityFamilyLinkTests {
    @Test("An unordered end read from the ordered lists each table of a family holds lists every animal with its entity")
    func listsHeldByAFamily() async throws {
        let model = try FamilyModels.owners()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let writer = try await TestServer.container(model: model, schema: schema, name: "writer", listens: false)
        let ctx = writer.newBackgroundContext()
        try await ctx.perform {
            let ann = FMPal(context: ctx)
            ann.name = "Ann"
            let bob = FMPal(context: ctx)
            bob.name = "Bob"
            // Keys are counted per entity: the animal, the dog and the cat all have key 1.
            let generic = FMAnimal(context: ctx)
            generic.name = "Generic"
            let rex = FMDog(context: ctx)
            rex.name = "Rex"
            let tom = FMCat(context: ctx)
            tom.name = "Tom"
            rex.pals = [bob, ann]
            tom.pals = [ann]
            try ctx.save()
        }
        let reader = try await TestServer.container(model: model, schema: schema, name: "reader", listens: false)
        let rc = reader.newBackgroundContext()
        try await rc.perform {
            let pals = try rc.fetch(NSFetchRequest<FMPal>(entityName: "FMPal")).sorted { $0.name < $1.name }
            let ann = Dictionary(uniqueKeysWithValues: pals[0].animals.map { ($0.name, $0.objectID.entity.name) })
            #expect(ann == ["Rex": "FMDog", "Tom": "FMCat"])
            #expect(pals[1].animals.map(\.name) == ["Rex"])
            let dogs = try rc.fetch(NSFetchRequest<FMDog>(entityName: "FMDog"))
            #expect(dogs.first?.pals.map(\.name) == ["Bob", "Ann"])
            let withTom = NSFetchRequest<FMPal>(entityName: "FMPal")
            withTom.predicate = NSPredicate(format: "ANY animals.name == 'Tom'")
            #expect(try rc.fetch(withTom).map(\.name) == ["Ann"])
            let two = NSFetchRequest<FMPal>(entityName: "FMPal")
            two.predicate = NSPredicate(format: "animals.@count == 2")
            #expect(try rc.fetch(two).map(\.name) == ["Ann"])
            #expect(try rc.count(for: two) == 1)
        }
        for c in [writer, reader] { SchemaMigrationTests.close(c) }
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

    @Test("A store with a to-one into a family records layout version 3; one without, 2")
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
