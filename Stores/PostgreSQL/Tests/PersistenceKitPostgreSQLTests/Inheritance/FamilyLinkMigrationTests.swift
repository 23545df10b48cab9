import Foundation
import PersistenceKit
import Testing

@testable import PersistenceKitPostgreSQL

/// Migrating a store whose links into entity families are kept with their entities: entity
/// numbers move when entities come, go or are renamed, and every link keeps naming the
/// same row; a to-one whose destination gains sub-entities gains its entities; a change of
/// how a family link is kept is refused with a typed error that leaves the store as it was.
@Suite("PostgreSQL store: migrating links into entity families", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct FamilyLinkMigrationTests {
    typealias M = MigrationModels
    typealias S = SchemaMigrationTests

    /// Version 1: owners with pets (a one-to-many into the animal family), a favourite (a
    /// to-one into it) and walks (an ordered list into it); toys many animals play with (a
    /// join table with a family side); shelves each on a box (a plain to-one).
    static let v1 = """
        <entity name="Animal">
            <attribute name="name" attributeType="String" defaultValueString=""/>
            <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Owner" inverseName="pets" inverseEntity="Owner"/>
            <relationship name="fans" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Owner" inverseName="favourite" inverseEntity="Owner"/>
            <relationship name="walker" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Owner" inverseName="walks" inverseEntity="Owner"/>
            <relationship name="toys" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Toy" inverseName="animals" inverseEntity="Toy"/>
        </entity>
        <entity name="Dog" parentEntity="Animal">
            <attribute name="breed" optional="YES" attributeType="String"/>
        </entity>
        <entity name="Cat" parentEntity="Animal"/>
        <entity name="Owner">
            <attribute name="name" attributeType="String" defaultValueString=""/>
            <relationship name="pets" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Animal" inverseName="owner" inverseEntity="Animal"/>
            <relationship name="favourite" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Animal" inverseName="fans" inverseEntity="Animal"/>
            <relationship name="walks" optional="YES" toMany="YES" ordered="YES" deletionRule="Nullify" destinationEntity="Animal" inverseName="walker" inverseEntity="Animal"/>
        </entity>
        <entity name="Toy">
            <attribute name="name" attributeType="String" defaultValueString=""/>
            <relationship name="animals" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Animal" inverseName="toys" inverseEntity="Animal"/>
        </entity>
        <entity name="Shelf">
            <attribute name="name" attributeType="String" defaultValueString=""/>
            <relationship name="box" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Box" inverseName="shelves" inverseEntity="Box"/>
        </entity>
        <entity name="Box">
            <attribute name="label" attributeType="String" defaultValueString=""/>
            <relationship name="shelves" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Shelf" inverseName="box" inverseEntity="Shelf"/>
        </entity>
        """

    /// Version 2: `Owner` renamed `Keeper`, `favourite` renamed `darling`, `toys` renamed
    /// `playthings`; `Cat` removed; new sub-entities `Bird` (of `Animal`) and `Crate` (of
    /// `Box`, so shelves' to-one into boxes gains entities). Every entity number moves.
    static let v2 = v1
        .replacingOccurrences(of: "<entity name=\"Cat\" parentEntity=\"Animal\"/>", with: "<entity name=\"Bird\" parentEntity=\"Animal\"/>")
        .replacingOccurrences(of: "\"Owner\"", with: "\"Keeper\"")
        .replacingOccurrences(of: "<entity name=\"Keeper\">", with: "<entity name=\"Keeper\" elementID=\"Owner\">")
        .replacingOccurrences(
            of: "<relationship name=\"favourite\" optional=\"YES\" maxCount=\"1\"",
            with: "<relationship name=\"darling\" elementID=\"favourite\" optional=\"YES\" maxCount=\"1\"")
        .replacingOccurrences(of: "inverseName=\"favourite\"", with: "inverseName=\"darling\"")
        .replacingOccurrences(
            of: "<relationship name=\"toys\" optional=\"YES\"", with: "<relationship name=\"playthings\" elementID=\"toys\" optional=\"YES\"")
        .replacingOccurrences(of: "inverseName=\"toys\"", with: "inverseName=\"playthings\"")
        + "<entity name=\"Crate\" parentEntity=\"Box\"/>"

    /// Makes objects of `model` in one save: `build` gets a maker (entity, values).
    static func save(
        _ container: NSPersistentContainer, _ build: @escaping @Sendable (_ make: (String, [String: Any]) throws -> NSManagedObject) throws -> Void
    ) async throws {
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            try build { entity, values in
                let o = NSManagedObject(entity: try #require(container.managedObjectModel.entitiesByName[entity]), insertInto: ctx)
                for (k, v) in values { o.setValue(v, forKey: k) }
                return o
            }
            try ctx.save()
        }
    }

    /// `object`'s name (or label) with its entity, e.g. `Dog Rex`; `-` for nil.
    static func named(_ object: NSManagedObject?) -> String {
        guard let object else { return "-" }
        return "\(object.entity.name) \(object.value(forKey: object.entity.propertiesByName["label"] == nil ? "name" : "label") as? String ?? "")"
    }

    /// Every object of `entity` with the links `keys` name, one line each, sorted.
    static func lines(_ container: NSPersistentContainer, _ entity: String, _ keys: [String]) async throws -> [String] {
        let ctx = container.newBackgroundContext()
        return try await ctx.perform {
            try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: entity)).map { o in
                ([named(o)] + keys.map { key -> String in
                    switch o.value(forKey: key) {
                    case let set as Set<NSManagedObject>: "\(key)=[\(set.map(named).sorted().joined(separator: ", "))]"
                    case let list as NSOrderedSet: "\(key)=[\(list.array.map { named($0 as? NSManagedObject) }.joined(separator: ", "))]"
                    case let one as NSManagedObject: "\(key)=\(named(one))"
                    default: "\(key)=-"
                    }
                }).joined(separator: " ")
            }.sorted()
        }
    }

    @Test("Renamed, removed and new entities renumber every family link; a to-one gains entities; links agree after reopening")
    func renumbersFamilyLinks() async throws {
        let models = try M([("V1", Self.v1), ("V2", Self.v2)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        let old = try await S.load(v1, schema: schema)
        try await Self.save(old) { make in
            let rex = try make("Dog", ["name": "Rex", "breed": "collie"])
            let tom = try make("Cat", ["name": "Tom"])
            let gen = try make("Animal", ["name": "Gen"])
            let ann = try make("Owner", ["name": "Ann", "favourite": rex])
            ann.setValue(Set([rex, tom, gen]), forKey: "pets")
            ann.setValue([tom, rex, gen], forKey: "walks")
            _ = try make("Owner", ["name": "Bo", "favourite": tom])
            _ = try make("Toy", ["name": "Ball", "animals": Set([rex, tom])])
            _ = try make("Toy", ["name": "Rope", "animals": Set([gen])])
            _ = try make("Shelf", ["name": "S1", "box": try make("Box", ["label": "B1"])])
        }
        S.close(old)

        let new = try await S.load(try models.current(), schema: schema)
        let keepers = try await Self.lines(new, "Keeper", ["pets", "darling", "walks"])
        #expect(
            keepers == [
                "Keeper Ann pets=[Animal Gen, Dog Rex] darling=Dog Rex walks=[Dog Rex, Animal Gen]",
                "Keeper Bo pets=[] darling=- walks=[]",
            ], "\(keepers)")
        #expect(try await Self.lines(new, "Toy", ["animals"]) == ["Toy Ball animals=[Dog Rex]", "Toy Rope animals=[Animal Gen]"])
        #expect(try await Self.lines(new, "Animal", ["playthings", "fans", "walker"]) == [
            "Animal Gen playthings=[Toy Rope] fans=[] walker=Keeper Ann",
            "Dog Rex playthings=[Toy Ball] fans=[Keeper Ann] walker=Keeper Ann",
        ])
        #expect(try await Self.lines(new, "Shelf", ["box"]) == ["Shelf S1 box=Box B1"])
        // New objects of the new entities link as any other.
        let ctx = new.newBackgroundContext()
        try await ctx.perform {
            let keepers = try ctx.fetch(NSFetchRequest<NSManagedObject>(entityName: "Keeper"))
            let bo = try #require(keepers.first { $0.value(forKey: "name") as? String == "Bo" })
            let bird = NSEntityDescription.insertNewObject(forEntityName: "Bird", into: ctx)
            bird.setValue("Kiwi", forKey: "name")
            bo.setValue(bird, forKey: "darling")
            let crate = NSEntityDescription.insertNewObject(forEntityName: "Crate", into: ctx)
            crate.setValue("C1", forKey: "label")
            let shelf = NSEntityDescription.insertNewObject(forEntityName: "Shelf", into: ctx)
            shelf.setValue("S2", forKey: "name")
            shelf.setValue(crate, forKey: "box")
            try ctx.save()
        }
        S.close(new)
        let reopened = try await S.load(try models.current(), schema: schema)
        defer { S.close(reopened) }
        #expect(try await Self.lines(reopened, "Keeper", ["darling"]) == ["Keeper Ann darling=Dog Rex", "Keeper Bo darling=Bird Kiwi"])
        #expect(try await Self.lines(reopened, "Box", ["shelves"]) == ["Box B1 shelves=[Shelf S1]", "Crate C1 shelves=[Shelf S2]"])
        let store = try #require(reopened.persistentStoreCoordinator.persistentStores.first)
        #expect(store.metadata[PostgreSQLStore.layoutVersionKey] == "3")
    }

    @Test("A family to-one that becomes a many-to-many is refused with a typed error naming it; the store is unchanged")
    func changeOfKindRefused() async throws {
        let manyFans = Self.v1
            .replacingOccurrences(
                of: "<relationship name=\"favourite\" optional=\"YES\" maxCount=\"1\"",
                with: "<relationship name=\"favourite\" optional=\"YES\" toMany=\"YES\"")
        let models = try M([("V1", Self.v1), ("V2", manyFans)], current: "V2")
        defer { models.remove() }
        let v1 = try models.version("V1")
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: v1) }
        let old = try await S.load(v1, schema: schema)
        try await Self.save(old) { make in
            _ = try make("Owner", ["name": "Ann", "favourite": try make("Dog", ["name": "Rex"])])
        }
        S.close(old)
        let before = try S.shape(of: schema)

        let error = await #expect(throws: (any Error).self) { _ = try await S.load(try models.current(), schema: schema) }
        let cause = (error as? CoreDataError)?.underlying as? MigrationError
        #expect(cause?.kind == .store, "\(String(describing: error))")
        // The link names either end: the to-one, or its inverse, which would need a join table.
        let message = cause?.underlyingDescription ?? ""
        #expect(message.contains("links into an entity family"), "\(String(describing: cause))")
        #expect(message.contains("Owner.favourite") || message.contains("Animal.fans"), "\(message)")
        #expect(try S.shape(of: schema) == before)
        let again = try await S.load(v1, schema: schema, migrate: false)
        defer { S.close(again) }
        #expect(try await Self.lines(again, "Owner", ["favourite"]) == ["Owner Ann favourite=Dog Rex"])
    }
}
