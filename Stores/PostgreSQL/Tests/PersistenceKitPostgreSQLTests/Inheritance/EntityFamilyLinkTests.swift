import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// A relationship whose destination entity has sub-entities is refused with a typed error
/// naming it, when a store is made or migrated, rather than read back as the wrong entity;
/// a family whose links lead only to entities without sub-entities is kept whole.
@Suite("PostgreSQL store: relationships and entity families", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct EntityFamilyLinkTests {
    /// The store's error in `error`: thrown as is, or the cause of a Core Data error.
    static func storeError(_ error: (any Error)?) -> PostgreSQLStoreError? {
        if let e = error as? PostgreSQLStoreError { return e }
        if let e = error as? CoreDataError { return storeError(e.underlying) }
        return nil
    }

    @Test("A to-one and a to-many into a family are refused at schema creation, each named, and nothing is created")
    func refusedAtCreation() async throws {
        let model = try FamilyModels.owners()
        let kennels = try FamilyModels.kennels()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: kennels) }
        let error = #expect(throws: PostgreSQLStoreError.self) { _ = try TestServer.store(model: model, schema: schema) }
        #expect(error?.kind == .unsupportedModel)
        let message = error?.message ?? ""
        #expect(message.contains("FMOwner.favourite"))
        #expect(message.contains("FMOwner.pets"))
        #expect(message.contains("FMAnimal"))
        #expect(message.contains("not support"))
        // The relationships out of the family (FMAnimal.owner, .fans) lead to an entity
        // without sub-entities: not named.
        #expect(!message.contains("FMAnimal.owner"))
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
            #expect(cause?.message.contains("FMOwner.pets") == true)
        }
    }

    @Test("Migrating to a model whose relationship gains a sub-entity is refused and leaves the store as it was")
    func refusedAtMigration() async throws {
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
        do {
            let c = try await SchemaMigrationTests.load(try models.current(), schema: schema)
            SchemaMigrationTests.close(c)
            Issue.record("the store migrated to a model with a relationship into an entity family")
        } catch {
            let cause = Self.storeError(error)
            #expect(cause?.kind == .unsupportedModel, "got \(error)")
            #expect(cause?.message.contains("Writer.books") == true)
        }
        let again = try await SchemaMigrationTests.load(v1, schema: schema, migrate: false)
        defer { SchemaMigrationTests.close(again) }
        let ctx = again.newBackgroundContext()
        let count = try await ctx.perform { try ctx.count(for: NSFetchRequest<NSManagedObject>(entityName: "Book")) }
        #expect(count == 3)
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
