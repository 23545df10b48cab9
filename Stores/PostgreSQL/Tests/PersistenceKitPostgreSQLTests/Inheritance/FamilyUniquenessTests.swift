import Foundation
import PersistenceKit
import Testing

@testable import PersistenceKitPostgreSQL

/// A uniqueness constraint an entity family shares is kept in a key table across the
/// family's tables (the shared store checks cover saves); these tests cover what only the
/// PostgreSQL store has: migrating such a schema, and a schema made when the constraint was
/// held per table.
@Suite("PostgreSQL store: uniqueness constraints across an entity family", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct FamilyUniquenessTests {
    typealias M = MigrationModels

    /// Version 1: vehicles with a plate unique across cars and trucks.
    static let v1 = """
        <entity name="Vehicle">
            <attribute name="plate" attributeType="String" defaultValueString=""/>
            <uniquenessConstraints><uniquenessConstraint><constraint value="plate"/></uniquenessConstraint></uniquenessConstraints>
        </entity>
        <entity name="Car" parentEntity="Vehicle">
            <attribute name="doors" optional="YES" attributeType="Integer 16"/>
        </entity>
        <entity name="Truck" parentEntity="Vehicle"/>
        """

    /// Version 2: `plate` renamed `registration`, and a new sub-entity `Bus`.
    static let v2 = """
        <entity name="Vehicle">
            <attribute name="registration" attributeType="String" defaultValueString="" elementID="plate"/>
            <uniquenessConstraints><uniquenessConstraint><constraint value="registration"/></uniquenessConstraint></uniquenessConstraints>
        </entity>
        <entity name="Car" parentEntity="Vehicle">
            <attribute name="doors" optional="YES" attributeType="Integer 16"/>
        </entity>
        <entity name="Truck" parentEntity="Vehicle"/>
        <entity name="Bus" parentEntity="Vehicle"/>
        """

    /// Saves one object of `entity` with `key` set to `value`; the save's error, or nil.
    static func insert(_ entity: String, _ key: String, _ value: String, in container: NSPersistentContainer) async throws -> CoreDataError? {
        let ctx = container.newBackgroundContext()
        return try await ctx.perform {
            let description = try #require(container.managedObjectModel.entitiesByName[entity])
            NSManagedObject(entity: description, insertInto: ctx).setValue(value, forKey: key)
            do {
                try ctx.save()
                return nil
            } catch let error as CoreDataError {
                return error
            }
        }
    }

    /// Every stored vehicle as "entity:value of key", sorted.
    static func vehicles(_ key: String, in container: NSPersistentContainer) async throws -> [String] {
        let ctx = container.newBackgroundContext()
        return try await ctx.perform {
            try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Vehicle")).map {
                "\($0.entity.name):\($0.value(forKey: key) as? String ?? "-")"
            }.sorted()
        }
    }

    @Test("A migration that renames the constrained attribute and adds a sub-entity keeps the constraint across the family")
    func migrationKeepsFamilyConstraint() async throws {
        let models = try M([("V1", Self.v1), ("V2", Self.v2)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        let old = try await SchemaMigrationTests.load(v1, schema: schema)
        #expect(try await Self.insert("Car", "plate", "P1", in: old) == nil)
        #expect(try await Self.insert("Truck", "plate", "P2", in: old) == nil)
        SchemaMigrationTests.close(old)

        let new = try await SchemaMigrationTests.load(try models.current(), schema: schema)
        defer { SchemaMigrationTests.close(new) }
        #expect(try await Self.vehicles("registration", in: new) == ["Car:P1", "Truck:P2"])
        // The new sub-entity is a member, and the renamed column is the one checked.
        #expect(try await Self.insert("Bus", "registration", "P1", in: new)?.code == .managedObjectConstraintMerge)
        #expect(try await Self.insert("Car", "registration", "P2", in: new)?.code == .managedObjectConstraintMerge)
        #expect(try await Self.insert("Bus", "registration", "P3", in: new) == nil)
        #expect(try await Self.vehicles("registration", in: new) == ["Bus:P3", "Car:P1", "Truck:P2"])
    }

    /// Drops the schema's family key tables and their triggers, as a store made when such
    /// constraints were held per table has none.
    static func dropFamilyKeys(_ schema: String) throws {
        let admin = try AdminConnection(url: try #require(TestServer.url))
        let functions = try admin.column(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '\(schema)' "
                + "AND p.proname LIKE 'pk_uqf_%'")
        #expect(functions.count == 1, "\(functions)")
        for f in functions { try admin.run("DROP FUNCTION \"\(schema)\".\"\(f)\"() CASCADE") }
        let tables = try admin.column(
            "SELECT tablename FROM pg_tables WHERE schemaname = '\(schema)' AND tablename LIKE '\\_pk\\_unique\\_%'")
        #expect(tables.count == 1, "\(tables)")
        for t in tables { try admin.run("DROP TABLE \"\(schema)\".\"\(t)\"") }
    }

    /// Runs `body` with the version-1 model, a fresh schema and a container on it that saved
    /// the car `P1` (`body` closes it); removes the model files and the schema afterwards.
    static func withCarP1(_ body: (NSManagedObjectModel, String, NSPersistentContainer) async throws -> Void) async throws {
        let models = try M([("V1", Self.v1)], current: "V1")
        defer { models.remove() }
        let model = try models.current()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let first = try await SchemaMigrationTests.load(model, schema: schema)
        #expect(try await Self.insert("Car", "plate", "P1", in: first) == nil)
        try await body(model, schema, first)
    }

    @Test("A schema without the family's key table gets it on open, filled from the stored rows")
    func keyTableMadeOnOpen() async throws {
        try await Self.withCarP1 { model, schema, first in
            SchemaMigrationTests.close(first)
            try Self.dropFamilyKeys(schema)
            let reopened = try await SchemaMigrationTests.load(model, schema: schema)
            defer { SchemaMigrationTests.close(reopened) }
            #expect(try await Self.insert("Truck", "plate", "P1", in: reopened)?.code == .managedObjectConstraintMerge)
            #expect(try await Self.vehicles("plate", in: reopened) == ["Car:P1"])
        }
    }

    @Test("A schema whose stored rows break the family constraint is refused on open with a typed error naming them")
    func clashingRowsRefused() async throws {
        try await Self.withCarP1 { model, schema, first in
            try Self.dropFamilyKeys(schema)
            // With no key table, only each table's rows are checked.
            #expect(try await Self.insert("Truck", "plate", "P1", in: first) == nil)
            SchemaMigrationTests.close(first)
            let error = await #expect(throws: (any Error).self) { _ = try await SchemaMigrationTests.load(model, schema: schema) }
            let cause = (error as? CoreDataError)?.underlying as? PostgreSQLStoreError ?? error as? PostgreSQLStoreError
            #expect(cause?.sqlState == "23505", "\(String(describing: error))")
            #expect(cause?.message.contains("Car, Truck, Vehicle") == true, "\(String(describing: cause))")
            #expect(cause?.message.contains("plate") == true)
        }
    }

    /// Gauges with a reading unique across dials and meters.
    static let gauges = """
        <entity name="Gauge">
            <attribute name="reading" optional="YES" attributeType="Double"/>
            <uniquenessConstraints><uniquenessConstraint><constraint value="reading"/></uniquenessConstraint></uniquenessConstraints>
        </entity>
        <entity name="Dial" parentEntity="Gauge"/>
        <entity name="Meter" parentEntity="Gauge"/>
        """

    @Test("NaN in a family-wide unique number is distinct from every other value, as in the built-in stores")
    func nanIsDistinct() async throws {
        let models = try M([("V1", Self.gauges)], current: "V1")
        defer { models.remove() }
        let model = try models.current()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await SchemaMigrationTests.load(model, schema: schema)
        defer { SchemaMigrationTests.close(container) }
        func save(_ entity: String, _ reading: Double) async throws -> CoreDataError? {
            let ctx = container.newBackgroundContext()
            return try await ctx.perform {
                NSManagedObject(entity: try #require(model.entitiesByName[entity]), insertInto: ctx).setValue(reading, forKey: "reading")
                do {
                    try ctx.save()
                    return nil
                } catch let error as CoreDataError {
                    return error
                }
            }
        }
        #expect(try await save("Dial", .nan) == nil)
        #expect(try await save("Meter", .nan) == nil)
        #expect(try await save("Dial", 1.5) == nil)
        #expect(try await save("Meter", 1.5)?.code == .managedObjectConstraintMerge)
    }
}
