import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// Links into an entity family (animals, dogs and cats): the to-many end of a one-to-many
/// (`POwner.pets`) lists every object of the family with its own entity, a to-one
/// (`POwner.favourite`) names the sub-entity, both ends agree, delete rules follow across
/// the family, and predicates answer as the in-memory store does.
@Suite("PostgreSQL store: links into an entity family", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct FamilyLinkTests {
    /// Ann: Rex (a collie), Tom (a cat), Generic (an animal); Bob: Bit (a dog); Cid: none.
    /// Stray (a cat) has no owner. Favourites: Ann's is Rex, Bob's is Tom, Cid's is Stray.
    /// Toys: Rex, Tom and Generic play with the ball, Bit and Rex with the bone. Ann walks
    /// Tom, Rex and Generic in that order; the vet's agenda lists Rex, then Tom. (Keys are
    /// counted per entity: the first animal, dog and cat all have key 1.)
    static func seed(_ container: NSPersistentContainer) async throws {
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            var owners: [String: POwner] = [:]
            for name in ["Ann", "Bob", "Cid"] {
                let o = POwner(context: ctx)
                o.name = name
                owners[name] = o
            }
            func dog(_ name: String, _ breed: String, _ age: Int64, _ owner: String?) {
                let d = PDog(context: ctx)
                d.name = name
                d.breed = breed
                d.age = age
                d.owner = owner.flatMap { owners[$0] }
            }
            func cat(_ name: String, _ lives: Int16, _ age: Int64, _ owner: String?) {
                let c = PCat(context: ctx)
                c.name = name
                c.lives = lives
                c.age = age
                c.owner = owner.flatMap { owners[$0] }
            }
            dog("Rex", "collie", 5, "Ann")
            cat("Tom", 7, 3, "Ann")
            let generic = PAnimal(context: ctx)
            generic.name = "Generic"
            generic.age = 1
            generic.owner = owners["Ann"]
            dog("Bit", "pug", 2, "Bob")
            cat("Stray", 9, 4, nil)
            try ctx.save()
            let animals = try ctx.fetch(NSFetchRequest<PAnimal>(entityName: "PAnimal"))
            let byName = Dictionary(uniqueKeysWithValues: animals.map { ($0.name, $0) })
            owners["Ann"]?.favourite = byName["Rex"]
            owners["Bob"]?.favourite = byName["Tom"]
            owners["Cid"]?.favourite = byName["Stray"]
            let ball = PToy(context: ctx)
            ball.name = "ball"
            let bone = PToy(context: ctx)
            bone.name = "bone"
            for name in ["Rex", "Tom", "Generic"] { byName[name]?.toys.insert(ball) }
            byName["Bit"]?.toys.insert(bone)
            byName["Rex"]?.toys.insert(bone)
            if let tom = byName["Tom"], let rex = byName["Rex"], let generic = byName["Generic"] {
                owners["Ann"]?.walks = [tom, rex, generic]
                let vet = PAgenda(context: ctx)
                vet.name = "vet"
                vet.items = [rex, tom]
            }
            try ctx.save()
        }
    }

    @Test("Another coordinator reads each pet and favourite as its own entity, with its own attributes, and both ends agree")
    func roundTrip() async throws {
        let model = try FamilyModels.pets()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let writer = try await TestServer.container(model: model, schema: schema, name: "writer", listens: false)
        try await Self.seed(writer)
        let reader = try await TestServer.container(model: model, schema: schema, name: "reader", listens: false)
        let ctx = reader.newBackgroundContext()
        try await ctx.perform {
            let owners = try ctx.fetch(NSFetchRequest<POwner>(entityName: "POwner")).sorted { $0.name < $1.name }
            #expect(owners.map(\.name) == ["Ann", "Bob", "Cid"])
            let ann = owners[0]
            #expect(Set(ann.pets.map(\.name)) == ["Rex", "Tom", "Generic"])
            let byName = Dictionary(uniqueKeysWithValues: ann.pets.map { ($0.name, $0) })
            #expect(byName["Rex"]?.objectID.entity.name == "PDog")
            #expect((byName["Rex"] as? PDog)?.breed == "collie")
            #expect(byName["Tom"]?.objectID.entity.name == "PCat")
            #expect((byName["Tom"] as? PCat)?.lives == 7)
            #expect(byName["Generic"]?.objectID.entity.name == "PAnimal")
            #expect(ann.pets.allSatisfy { $0.owner === ann })
            #expect(owners[1].pets.map(\.name) == ["Bit"])
            #expect(owners[1].pets.first is PDog)
            #expect(owners[2].pets.isEmpty)
            // The to-one into the family names the sub-entity, and its other end agrees.
            #expect(ann.favourite?.objectID.entity.name == "PDog")
            #expect((ann.favourite as? PDog)?.breed == "collie")
            #expect(owners[1].favourite?.objectID.entity.name == "PCat")
            #expect(owners[1].favourite?.name == "Tom")
            #expect((owners[2].favourite as? PCat)?.name == "Stray")
            #expect(byName["Rex"]?.fans.map(\.name) == ["Ann"])
            #expect(byName["Tom"]?.fans.map(\.name) == ["Bob"])
            #expect(byName["Generic"]?.fans.isEmpty == true)
            // The many-to-many: both ends name each row's own entity.
            let toys = try ctx.fetch(NSFetchRequest<PToy>(entityName: "PToy")).sorted { $0.name < $1.name }
            #expect(toys.map(\.name) == ["ball", "bone"])
            let players = Dictionary(uniqueKeysWithValues: toys[0].animals.map { ($0.name, $0.objectID.entity.name) })
            #expect(players == ["Rex": "PDog", "Tom": "PCat", "Generic": "PAnimal"])
            #expect(Set(toys[1].animals.map(\.name)) == ["Bit", "Rex"])
            #expect(Set(byName["Rex"]?.toys.map(\.name) ?? []) == ["ball", "bone"])
            #expect(byName["Tom"]?.toys.map(\.name) == ["ball"])
            #expect(byName["Generic"]?.toys.map(\.name) == ["ball"])
            // Ordered to-manys into the family keep order and entities; their other ends agree.
            #expect(ann.walks.map(\.name) == ["Tom", "Rex", "Generic"])
            #expect(ann.walks.map(\.objectID.entity.name) == ["PCat", "PDog", "PAnimal"])
            #expect(byName["Rex"]?.walker === ann)
            #expect(byName["Bit"]?.walker == nil)
            let agenda = try ctx.fetch(NSFetchRequest<PAgenda>(entityName: "PAgenda")).first
            #expect(agenda?.items.map(\.name) == ["Rex", "Tom"])
            #expect(agenda?.items.first is PDog)
            #expect(byName["Rex"]?.agendas.map(\.name) == ["vet"])
            #expect(byName["Tom"]?.agendas.map(\.name) == ["vet"])
            #expect(byName["Generic"]?.agendas.isEmpty == true)
            // The to-one end agrees from the family's side.
            let animals = try ctx.fetch(NSFetchRequest<PAnimal>(entityName: "PAnimal"))
            #expect(animals.count == 5)
            for a in animals {
                let listed = a.owner.map { $0.pets.contains(a) } ?? !owners.contains { $0.pets.contains(a) }
                #expect(listed, "\(a.name)")
            }
        }
    }

    @Test("Moving, nullifying and cascading across the family keep both ends in agreement")
    func deleteRules() async throws {
        let model = try FamilyModels.pets()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let writer = try await TestServer.container(model: model, schema: schema, name: "writer", listens: false)
        try await Self.seed(writer)
        let ctx = writer.newBackgroundContext()
        try await ctx.perform {
            let owners = try ctx.fetch(NSFetchRequest<POwner>(entityName: "POwner")).sorted { $0.name < $1.name }
            let pets = Dictionary(uniqueKeysWithValues: owners[0].pets.map { ($0.name, $0) })
            // Tom moves to Cid; Rex is deleted (nullified out of Ann's pets and favourite).
            pets["Tom"]?.owner = owners[2]
            if let rex = pets["Rex"] { ctx.delete(rex) }
            try ctx.save()
            // Bob goes, and his dog with him (cascade), out of the bone's players.
            ctx.delete(owners[1])
            try ctx.save()
            // Generic stops playing with the ball.
            if let generic = pets["Generic"], let ball = generic.toys.first { generic.toys.remove(ball) }
            try ctx.save()
        }
        let reader = try await TestServer.container(model: model, schema: schema, name: "reader", listens: false)
        let rc = reader.newBackgroundContext()
        try await rc.perform {
            let owners = try rc.fetch(NSFetchRequest<POwner>(entityName: "POwner")).sorted { $0.name < $1.name }
            #expect(owners.map(\.name) == ["Ann", "Cid"])
            #expect(owners[0].pets.map(\.name) == ["Generic"])
            #expect(owners[1].pets.map(\.name) == ["Tom"])
            #expect(owners[1].pets.first is PCat)
            #expect(owners[0].favourite == nil)
            #expect((owners[1].favourite as? PCat)?.name == "Stray")
            let left = try rc.fetch(NSFetchRequest<PAnimal>(entityName: "PAnimal")).map(\.name).sorted()
            #expect(left == ["Generic", "Stray", "Tom"])
            let toys = try rc.fetch(NSFetchRequest<PToy>(entityName: "PToy")).sorted { $0.name < $1.name }
            #expect(toys[0].animals.map(\.name) == ["Tom"])
            #expect(toys[0].animals.first is PCat)
            #expect(toys[1].animals.isEmpty)
        }
    }

    static let ownerPredicates = [
        "ANY pets.name == 'Rex'", "ANY pets.name == 'Bit'", "ANY pets.age > 4", "pets.@count == 3", "pets.@count >= 1",
        "NONE pets.name == 'Tom'", "ALL pets.age < 4", "SUBQUERY(pets, $p, $p.age >= 2).@count == 2", "pets.@count == 0",
        "favourite.name == 'Rex'", "favourite.name == 'Tom'", "favourite == nil", "favourite.age > 3", "favourite.owner.name == 'Ann'",
        "ANY walks.name == 'Rex'", "walks.@count == 3", "ANY walks.age == 3", "favourite != nil", "NOT (favourite == nil)",
        "favourite == nil OR name == 'Ann'", "favourite.name BEGINSWITH 'R'", "favourite.name IN {'Rex', 'Tom'}",
        "NOT (favourite.name == 'Rex')", "favourite.owner.pets.@count == 3", "favourite.fans.@count == 1",
    ]
    static let animalPredicates = [
        "owner.name == 'Ann'", "owner == nil", "owner.name != 'Ann'", "owner.pets.@count == 1", "ANY fans.name == 'Ann'",
        "fans.@count == 1", "fans.@count == 0", "ANY fans.favourite.name == 'Rex'", "owner.favourite.name == 'Rex'",
        "ANY toys.name == 'ball'", "toys.@count == 2", "NONE toys.name == 'bone'", "ANY toys.animals.name == 'Bit'",
        "walker.name == 'Ann'", "ANY agendas.name == 'vet'", "agendas.@count == 1", "ANY walker.walks.name == 'Tom'",
    ]
    static let toyPredicates = ["ANY animals.name == 'Rex'", "animals.@count == 3", "ANY animals.age > 4", "ALL animals.age < 3"]

    @Test("Predicates over the family's to-many end and to-one end answer as the in-memory store does")
    func predicatesMatchInMemory() async throws {
        let model = try FamilyModels.pets()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let pg = try await TestServer.container(model: model, schema: schema)
        let memory = NSPersistentContainer(name: "memory", managedObjectModel: model)
        memory.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        try await memory.loadPersistentStores()
        try await Self.seed(pg)
        try await Self.seed(memory)
        func names(_ container: NSPersistentContainer, _ entity: String, _ format: String) async throws -> ([String], Int) {
            let ctx = container.newBackgroundContext()
            return try await ctx.perform {
                let r = NSFetchRequest<NSManagedObject>(entityName: entity)
                r.predicate = NSPredicate(format: format)
                let names = try ctx.fetch(r).compactMap { $0.value(forKey: "name") as? String }.sorted()
                return (names, try ctx.count(for: r))
            }
        }
        let cases = [
            ("POwner", Self.ownerPredicates), ("PAnimal", Self.animalPredicates), ("PDog", Self.animalPredicates),
            ("PCat", Self.animalPredicates), ("PToy", Self.toyPredicates),
        ]
        for (entity, formats) in cases {
            for format in formats {
                let a = try await names(pg, entity, format)
                let b = try await names(memory, entity, format)
                #expect(a.0 == b.0, "\(entity): \(format)")
                #expect(a.1 == b.1, "count of \(entity): \(format)")
            }
        }
        #expect(try await names(pg, "POwner", "ANY pets.name == 'Rex'").0 == ["Ann"])
        #expect(try await names(pg, "POwner", "favourite.name == 'Rex'").0 == ["Ann"])
        // By object: the cat Tom, not the animal or dog of the same key.
        let ctx = pg.newBackgroundContext()
        let favouredTom = try await ctx.perform {
            let cats = NSFetchRequest<PCat>(entityName: "PCat")
            cats.predicate = NSPredicate(format: "name == 'Tom'")
            guard let tom = try ctx.fetch(cats).first else { return [[String]]() }
            let r = NSFetchRequest<POwner>(entityName: "POwner")
            r.predicate = NSPredicate(format: "favourite == %@", tom)
            let others = NSFetchRequest<POwner>(entityName: "POwner")
            others.predicate = NSPredicate(format: "favourite != %@", tom)
            let notTom = NSFetchRequest<POwner>(entityName: "POwner")
            notTom.predicate = NSPredicate(format: "NOT (favourite == %@)", tom)
            return [try ctx.fetch(r).map(\.name), try ctx.fetch(others).map(\.name).sorted(), try ctx.fetch(notTom).map(\.name).sorted()]
        }
        #expect(favouredTom == [["Bob"], ["Ann", "Cid"], ["Ann", "Cid"]])
    }

    @Test("Links within a family (parent and children, likes both ways) keep every entity, and a cascade crosses tables")
    func withinAFamily() async throws {
        let model = try FamilyModels.tree()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let writer = try await TestServer.container(model: model, schema: schema, name: "writer", listens: false)
        let ctx = writer.newBackgroundContext()
        try await ctx.perform {
            // Keys are counted per entity: Root, Rex and Tom all have key 1.
            let root = TAnimal(context: ctx)
            root.name = "Root"
            let rex = TDog(context: ctx)
            rex.name = "Rex"
            rex.parent = root
            let tom = TCat(context: ctx)
            tom.name = "Tom"
            tom.parent = rex
            let kit = TCat(context: ctx)
            kit.name = "Kit"
            kit.parent = rex
            rex.likes = [tom, root]
            tom.likes = [rex]
            try ctx.save()
        }
        let reader = try await TestServer.container(model: model, schema: schema, name: "reader", listens: false)
        let rc = reader.newBackgroundContext()
        try await rc.perform {
            let all = try rc.fetch(NSFetchRequest<TAnimal>(entityName: "TAnimal"))
            let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
            #expect(byName["Root"]?.children.map(\.name) == ["Rex"])
            #expect(byName["Root"]?.children.first is TDog)
            #expect(Set(byName["Rex"]?.children.map(\.name) ?? []) == ["Tom", "Kit"])
            #expect(byName["Rex"]?.children.allSatisfy { $0 is TCat } == true)
            #expect(byName["Tom"]?.parent is TDog)
            #expect(byName["Tom"]?.children.isEmpty == true)
            #expect(Set(byName["Rex"]?.likes.map(\.name) ?? []) == ["Tom", "Root"])
            #expect(byName["Rex"]?.likedBy.map(\.name) == ["Tom"])
            #expect(byName["Root"]?.likedBy.map(\.name) == ["Rex"])
            #expect(byName["Root"]?.likes.isEmpty == true)
            let liked = NSFetchRequest<TAnimal>(entityName: "TAnimal")
            liked.predicate = NSPredicate(format: "ANY likedBy.name == 'Rex'")
            #expect(Set(try rc.fetch(liked).map(\.name)) == ["Tom", "Root"])
            // Rex goes, and his kittens with him; Tom's like of Rex goes too.
            if let rex = byName["Rex"] { rc.delete(rex) }
            try rc.save()
        }
        let third = try await TestServer.container(model: model, schema: schema, name: "third", listens: false)
        let tc = third.newBackgroundContext()
        try await tc.perform {
            let all = try tc.fetch(NSFetchRequest<TAnimal>(entityName: "TAnimal"))
            #expect(all.map(\.name) == ["Root"])
            #expect(all.first?.children.isEmpty == true)
            #expect(all.first?.likedBy.isEmpty == true)
        }
        for c in [writer, reader, third] { SchemaMigrationTests.close(c) }
    }

}
