import Foundation
import Testing
@testable import PersistenceKit

// A family sharing a constraint: UFAnimal declares `name` unique; UFDog (with its own
// sub-entity UFPuppy) and UFCat inherit it, so no two animals of any kind share a name.
// UFDog and UFCat each also declare their own `tag` unique, which holds among dogs (puppies
// included) and among cats only.

class UFAnimal: NSManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var age: Int64 = 0
    @Attribute var note: String?
}

class UFDog: UFAnimal {
    @Attribute(.unique) var tag: String?
    @Attribute var breed: String = ""
}

final class UFPuppy: UFDog {
    @Attribute var toy: String?
}

final class UFCat: UFAnimal {
    @Attribute(.unique) var tag: String?
    @Attribute var lives: Int64 = 9
}

@Suite("Uniqueness constraints across an entity family")
struct FamilyUniquenessTests {
    enum StoreKind: String, CaseIterable, CustomStringConvertible {
        case inMemory, file
        var description: String { rawValue }
    }

    static func model() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [UFAnimal.self, UFDog.self, UFPuppy.self, UFCat.self])
    }

    /// A container with a store of `kind` (the file store at `url`).
    static func container(_ kind: StoreKind, at url: URL, name: String = #function) throws -> NSPersistentContainer {
        if kind == .file { return try FSSupport.container(at: url, model: model(), name: name) }
        let container = NSPersistentContainer(name: name, managedObjectModel: try model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// Every saved animal as "entity|name|age|note", sorted, read by a fresh context.
    static func animals(_ container: NSPersistentContainer) throws -> [String] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            try context.fetch(NSFetchRequest<UFAnimal>(entityName: "UFAnimal")).map {
                "\($0.entity.name)|\($0.name)|\($0.age)|\($0.note ?? "-")"
            }.sorted()
        }
    }

    /// Saves, in a context of its own, what `insert` inserts.
    static func save(_ container: NSPersistentContainer, _ insert: (NSManagedObjectContext) -> Void) throws {
        let context = container.newBackgroundContext()
        try context.performAndWait {
            insert(context)
            try context.save()
        }
    }

    @discardableResult
    static func dog(_ context: NSManagedObjectContext, _ name: String, age: Int64 = 0, note: String? = nil, tag: String? = nil) -> UFDog {
        let d = UFDog(context: context)
        d.name = name
        d.age = age
        d.note = note
        d.tag = tag
        d.breed = "collie"
        return d
    }

    @discardableResult
    static func cat(_ context: NSManagedObjectContext, _ name: String, age: Int64 = 0, tag: String? = nil) -> UFCat {
        let c = UFCat(context: context)
        c.name = name
        c.age = age
        c.tag = tag
        c.lives = 7
        return c
    }

    @Test("a dog and a cat with one name in one save conflict, listing both", arguments: StoreKind.allCases)
    func siblingsConflictWithinOneSave(_ kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(kind, at: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let rex = Self.dog(context, "Rex")
            let cat = Self.cat(context, "Rex")
            let e = try #require(throws: CoreDataError.self) { try context.save() }
            #expect(e.code == .managedObjectConstraintMerge)
            let conflict = try #require(e.constraintConflicts.first)
            #expect(e.constraintConflicts.count == 1)
            #expect(conflict.constraint == ["name"])
            #expect(conflict.constraintValues["name"] as? String == "Rex")
            #expect(conflict.databaseObject == nil)
            #expect(conflict.conflictingObjects == [rex.objectID, cat.objectID])
            #expect(conflict.conflictingSnapshots.last?["lives"] as? Int64 == 7)
            #expect(context.hasChanges)
        }
        #expect(try Self.animals(container) == [])
        try FSSupport.close(container)
    }

    @Test("the super-entity's own objects share the key space of its sub-entities", arguments: StoreKind.allCases)
    func superEntityObjectsConflictWithSubEntityObjects(_ kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(kind, at: folder.storeURL)
        try Self.save(container) { context in
            let a = UFAnimal(context: context)
            a.name = "Rex"
        }
        #expect(throws: CoreDataError.self) { try Self.save(container) { Self.cat($0, "Rex") } }
        #expect(throws: CoreDataError.self) {
            try Self.save(container) { context in
                let p = UFPuppy(context: context)
                p.name = "Rex"
            }
        }
        #expect(try Self.animals(container) == ["UFAnimal|Rex|0|-"])
        try FSSupport.close(container)
    }

    @Test("a stored dog holds its name against a cat after the store reopens")
    func storedRowOfASiblingConflictsAfterReopen() throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(.file, at: folder.storeURL)
        try Self.save(container) { Self.dog($0, "Rex", age: 3, note: "old") }
        try Self.save(container) { Self.cat($0, "Tom") }
        try FSSupport.close(container)

        let reopened = try Self.container(.file, at: folder.storeURL)
        let context = reopened.newBackgroundContext()
        try context.performAndWait {
            let cat = Self.cat(context, "Rex", age: 5)
            let e = try #require(throws: CoreDataError.self) { try context.save() }
            let conflict = try #require(e.constraintConflicts.first)
            #expect(e.constraintConflicts.count == 1)
            let stored = try #require(conflict.databaseObject)
            #expect(stored.entity.name == "UFDog", "the stored object keeps its own entity")
            #expect(conflict.databaseSnapshot?["breed"] as? String == "collie")
            #expect(conflict.conflictingObjects == [cat.objectID])
            #expect(conflict.conflictingSnapshots.first?["lives"] as? Int64 == 7)
            context.rollback()

            // A saved cat renamed to the dog's name conflicts too.
            let tom = try #require(try context.fetch(NSFetchRequest<UFCat>(entityName: "UFCat")).first)
            tom.name = "Rex"
            #expect(throws: CoreDataError.self) { try context.save() }
            context.rollback()
        }
        #expect(try Self.animals(reopened) == ["UFCat|Tom|0|-", "UFDog|Rex|3|old"])
        try FSSupport.close(reopened)
    }

    @Test("deleting the dog in the same save frees its name for a cat", arguments: StoreKind.allCases)
    func deletingTheHolderFreesTheKeyAcrossTheFamily(_ kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(kind, at: folder.storeURL)
        try Self.save(container) { Self.dog($0, "Rex") }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let rex = try #require(try context.fetch(NSFetchRequest<UFDog>(entityName: "UFDog")).first)
            context.delete(rex)
            Self.cat(context, "Rex", age: 2)
            try context.save()
        }
        #expect(try Self.animals(container) == ["UFCat|Rex|2|-"])
        // The freed key now belongs to the cat: another dog cannot take it.
        #expect(throws: CoreDataError.self) { try Self.save(container) { Self.dog($0, "Rex") } }
        try FSSupport.close(container)
    }

    /// Under each policy, a cat (5, no note) saved against the stored dog "Rex" (3, "old"):
    /// the stored dog stays a dog; object trump gives it the cat's set values, overwrite
    /// every value the two share, store trump and rollback leave it.
    private static let againstStored: [(NSMergePolicy, [String])] = [
        (.mergeByPropertyObjectTrump, ["UFCat|Bee|1|-", "UFDog|Rex|5|old"]),
        (.overwrite, ["UFCat|Bee|1|-", "UFDog|Rex|5|-"]),
        (.mergeByPropertyStoreTrump, ["UFCat|Bee|1|-", "UFDog|Rex|3|old"]),
        (.rollback, ["UFCat|Bee|1|-", "UFDog|Rex|3|old"]),
    ]

    @Test("each merge policy resolves a cat against a stored dog", arguments: StoreKind.allCases, 0..<4)
    func policiesResolveAgainstAStoredSibling(_ kind: StoreKind, _ i: Int) throws {
        let (policy, expected) = Self.againstStored[i]
        let folder = try TemporaryFolder("policy\(kind)\(i)")
        let container = try Self.container(kind, at: folder.storeURL, name: "policy\(kind)\(i)")
        try Self.save(container) { Self.dog($0, "Rex", age: 3, note: "old") }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.mergePolicy = policy
            Self.cat(context, "Rex", age: 5)
            Self.cat(context, "Bee", age: 1)
            try context.save()
            #expect(!context.hasChanges)
        }
        #expect(try Self.animals(container) == expected, "\(policy)")
        guard kind == .file else { return }
        try FSSupport.close(container)
        let reopened = try Self.container(.file, at: folder.storeURL, name: "policy\(kind)\(i)")
        #expect(try Self.animals(reopened) == expected, "\(policy), reopened")
        #expect(throws: CoreDataError.self) { try Self.save(reopened) { Self.cat($0, "Rex") } }
        try FSSupport.close(reopened)
    }

    /// Under each policy, a dog (1) then a cat (2) named "Rex" in one save: the last keeps
    /// the name under object trump and overwrite, the first under store trump and rollback.
    private static let withinOneSave: [(NSMergePolicy, [String])] = [
        (.mergeByPropertyObjectTrump, ["UFCat|Rex|2|-"]),
        (.overwrite, ["UFCat|Rex|2|-"]),
        (.mergeByPropertyStoreTrump, ["UFDog|Rex|1|-"]),
        (.rollback, ["UFDog|Rex|1|-"]),
    ]

    @Test("each merge policy keeps one of a dog and a cat sharing a name in one save", arguments: StoreKind.allCases, 0..<4)
    func policiesResolveSiblingsWithinOneSave(_ kind: StoreKind, _ i: Int) throws {
        let (policy, expected) = Self.withinOneSave[i]
        let folder = try TemporaryFolder("within\(kind)\(i)")
        let container = try Self.container(kind, at: folder.storeURL, name: "within\(kind)\(i)")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.mergePolicy = policy
            Self.dog(context, "Rex", age: 1)
            Self.cat(context, "Rex", age: 2)
            try context.save()
        }
        #expect(try Self.animals(container) == expected, "\(policy)")
        try FSSupport.close(container)
    }

    @Test("a batch insert of cats cannot take a stored dog's name", arguments: StoreKind.allCases)
    func batchInsertIsCheckedAcrossTheFamily(_ kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(kind, at: folder.storeURL)
        try Self.save(container) { Self.dog($0, "Rex", age: 3) }
        let context = container.newBackgroundContext()
        #expect(throws: (any Error).self) {
            try context.performAndWait {
                _ = try context.execute(NSBatchInsertRequest(entityName: "UFCat", objects: [["name": "Tom"], ["name": "Rex"]]))
            }
        }
        #expect(try Self.animals(container) == ["UFDog|Rex|3|-"], "nothing was written")
        try FSSupport.close(container)
    }

    @Test("a sub-entity's own constraint holds among its objects and its sub-entities' only", arguments: StoreKind.allCases)
    func ownConstraintOfASubEntityStaysWithinIt(_ kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(kind, at: folder.storeURL)
        try Self.save(container) { context in
            Self.dog(context, "Rex", tag: "T-1")
            Self.cat(context, "Tom", tag: "T-1")
        }
        var store = container
        if kind == .file {
            // After reopening, the indexes are built again from the stored rows.
            try FSSupport.close(container)
            store = try Self.container(.file, at: folder.storeURL)
        }
        #expect(try Self.animals(store).count == 2)
        #expect(throws: CoreDataError.self, "another dog") { try Self.save(store) { Self.dog($0, "Max", tag: "T-1") } }
        #expect(throws: CoreDataError.self, "a puppy, below the dog") {
            try Self.save(store) { context in
                let p = UFPuppy(context: context)
                p.name = "Bit"
                p.tag = "T-1"
            }
        }
        #expect(throws: CoreDataError.self, "another cat") { try Self.save(store) { Self.cat($0, "Kit", tag: "T-1") } }
        try Self.save(store) { context in
            Self.dog(context, "Max", tag: "T-2")
            Self.cat(context, "Kit", tag: "T-2")
        }
        #expect(try Self.animals(store).count == 4)
        try FSSupport.close(store)
    }
}
