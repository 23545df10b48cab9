import Foundation
import Testing
@testable import PersistenceKit

// A zoo of entities with inheritance: Animal (abstract) ← Dog ← Puppy, Animal ← Cat; a
// Keeper looks after animals of any kind.

class INAnimal: NSManagedObject, AbstractEntity {
    @Attribute var name: String = ""
    @Attribute(.indexed) var age: Int64 = 0
    @Relationship(inverse: "animals") var keeper: INKeeper2?
    @Relationship(inverse: "animals") var badges: Set<INBadge>
}

/// Many-to-many with the family. Its name sorts between INAnimal's and INCat's: both ends of
/// the link must still agree on which owns it for every entity of the family.
final class INBadge: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "badges") var animals: Set<INAnimal>
}

class INDog: INAnimal {
    @Attribute var breed: String = ""
}

final class INPuppy: INDog {
    @Attribute var toy: String?
}

final class INCat: INAnimal {
    @Attribute var lives: Int16 = 9
}

/// A base class that is no entity: its properties are declared again by each listed subclass.
class INNamed: NSManagedObject {
    @Attribute var title: String = ""
}

final class INLabel: INNamed {
    @Attribute var color: String = ""
}

@Suite("Entity inheritance")
struct InheritanceTests {
    static let classes: [NSManagedObject.Type] = [INAnimal.self, INDog.self, INPuppy.self, INCat.self, INKeeper2.self, INBadge.self]

    static func model() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: classes)
    }

    enum StoreKind: String, CaseIterable, CustomStringConvertible {
        case inMemory, file
        var description: String { rawValue }
    }

    /// A container with a store of `kind` (the file store in `folder`).
    static func container(_ kind: StoreKind, in folder: URL, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try model())
        container.persistentStoreDescriptions = [
            kind == .file
                ? NSPersistentStoreDescription(url: folder.appendingPathComponent("zoo.pkstore"))
                : NSPersistentStoreDescription(type: NSInMemoryStoreType)
        ]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// Saves Rex (dog, 5), Bit (puppy, 1), Tom (cat, 3) and a keeper holding all three.
    static func seed(_ context: NSManagedObjectContext) throws {
        try context.performAndWait {
            let keeper = INKeeper2(context: context)
            keeper.name = "Kim"
            let rex = INDog(context: context)
            rex.name = "Rex"
            rex.age = 5
            rex.breed = "collie"
            let bit = INPuppy(context: context)
            bit.name = "Bit"
            bit.age = 1
            bit.breed = "pug"
            bit.toy = "ball"
            let tom = INCat(context: context)
            tom.name = "Tom"
            tom.age = 3
            for animal in [rex, bit, tom] as [INAnimal] { animal.keeper = keeper }
            try context.save()
        }
    }

    @Test func subclassesBecomeSubEntitiesThatInheritProperties() throws {
        let model = try Self.model()
        let animal = try #require(model.entitiesByName["INAnimal"])
        let dog = try #require(model.entitiesByName["INDog"])
        let puppy = try #require(model.entitiesByName["INPuppy"])
        let cat = try #require(model.entitiesByName["INCat"])
        #expect(animal.isAbstract)
        #expect(!dog.isAbstract && !puppy.isAbstract && !cat.isAbstract)
        #expect(Set(animal.subentities.map(\.name)) == ["INDog", "INCat"])
        #expect(puppy.superentity === dog)
        #expect(dog.superentity === animal)
        #expect(puppy.properties.map(\.name) == ["name", "age", "keeper", "badges", "breed", "toy"])
        #expect(cat.properties.map(\.name) == ["name", "age", "keeper", "badges", "lives"])
        #expect(puppy.propertiesByName["keeper"] === animal.propertiesByName["keeper"])
        #expect(puppy.isKindOf(entity: animal))
    }

    @Test func theClassBuiltModelEqualsTheSameModelBuiltByHand() throws {
        func attr(_ name: String, _ type: NSAttributeType, indexed: Bool = false, default value: Any? = nil, optional: Bool = false)
            -> NSAttributeDescription
        {
            let a = NSAttributeDescription(name: name, type: type)
            a.isIndexed = indexed
            a.defaultValue = value
            a.isOptional = optional
            return a
        }
        let animal = NSEntityDescription(
            name: "INAnimal", properties: [attr("name", .stringAttributeType, default: ""), attr("age", .integer64AttributeType, indexed: true, default: 0)])
        animal.isAbstract = true
        let dog = NSEntityDescription(name: "INDog", properties: [attr("breed", .stringAttributeType, default: "")])
        let puppy = NSEntityDescription(name: "INPuppy", properties: [attr("toy", .stringAttributeType, optional: true)])
        let cat = NSEntityDescription(name: "INCat", properties: [attr("lives", .integer16AttributeType, default: 9)])
        let keeper = NSEntityDescription(name: "INKeeper2", properties: [attr("name", .stringAttributeType, default: "")])
        let toKeeper = NSRelationshipDescription(name: "keeper")
        toKeeper.destinationEntity = keeper
        let animals = NSRelationshipDescription(name: "animals")
        animals.destinationEntity = animal
        animals.maxCount = 0
        toKeeper.inverseRelationship = animals
        animals.inverseRelationship = toKeeper
        animal.properties.append(toKeeper)
        keeper.properties.append(animals)
        let badge = NSEntityDescription(name: "INBadge", properties: [attr("title", .stringAttributeType, default: "")])
        let badges = NSRelationshipDescription(name: "badges")
        badges.destinationEntity = badge
        badges.maxCount = 0
        let badgeAnimals = NSRelationshipDescription(name: "animals")
        badgeAnimals.destinationEntity = animal
        badgeAnimals.maxCount = 0
        badges.inverseRelationship = badgeAnimals
        badgeAnimals.inverseRelationship = badges
        animal.properties.append(badges)
        badge.properties.append(badgeAnimals)
        animal.subentities = [dog, cat]
        dog.subentities = [puppy]
        let byHand = NSManagedObjectModel(entities: [animal, dog, puppy, cat, keeper, badge])
        try byHand.validate()
        #expect(byHand == (try Self.model()))
    }

    @Test(arguments: StoreKind.allCases)
    func aFetchOfTheParentReturnsSubEntityObjects(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(kind, in: folder.url)
        let context = container.newBackgroundContext()
        try Self.seed(context)
        try context.performAndWait {
            let all = INAnimal.fetchRequest()
            all.sortDescriptors = [NSSortDescriptor(keyPath: \INAnimal.age, ascending: true)]
            let animals = try context.fetch(all)
            #expect(animals.map(\.name) == ["Bit", "Tom", "Rex"])
            #expect(animals[0] is INPuppy)
            #expect(animals[1] is INCat)
            #expect(try context.count(for: all) == 3)

            let dogs = try context.fetch(INDog.fetchRequest())
            #expect(Set(dogs.map(\.name)) == ["Rex", "Bit"])
            let onlyDogs = INDog.fetchRequest()
            onlyDogs.includesSubentities = false
            #expect(try context.fetch(onlyDogs).map(\.name) == ["Rex"])
            #expect(try context.count(for: onlyDogs) == 1)

            let abstractOnly = INAnimal.fetchRequest()
            abstractOnly.includesSubentities = false
            #expect(try context.fetch(abstractOnly).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func predicatesSortsAndWindowsSpanTheFamily(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(kind, in: folder.url)
        let context = container.newBackgroundContext()
        try Self.seed(context)
        try context.performAndWait { () throws in
            // An unsaved puppy counts too (pending changes are included by default).
            let pip = INPuppy(context: context)
            pip.name = "Pip"
            pip.age = 2
            let request = INAnimal.fetchRequest()
            request.predicate = #Predicate<INAnimal> { $0.age >= 2 }
            request.sortDescriptors = [NSSortDescriptor(keyPath: \INAnimal.age, ascending: false)]
            #expect(try context.fetch(request).map(\.name) == ["Rex", "Tom", "Pip"])
            request.fetchOffset = 1
            request.fetchLimit = 1
            #expect(try context.fetch(request).map(\.name) == ["Tom"])
            #expect(try context.count(for: request) == 1)
            let ids = NSFetchRequest<NSManagedObjectID>(entityName: "INAnimal")
            ids.resultType = .managedObjectIDResultType
            #expect(try context.fetch(ids).count == 4)
            let format = NSFetchRequest<NSManagedObject>(entityName: "INDog")
            format.predicate = NSPredicate(format: "name BEGINSWITH %@", "P")
            #expect(try context.fetch(format).compactMap { $0.value(forKey: "name") as? String } == ["Pip"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRelationshipToTheParentHoldsSubEntityObjectsAcrossReopen(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        do {
            let container = try Self.container(kind, in: folder.url)
            let context = container.newBackgroundContext()
            try Self.seed(context)
            if kind == .inMemory {
                try context.performAndWait {
                    let keeper = try #require(try context.fetch(INKeeper2.fetchRequest()).first)
                    context.refresh(keeper, mergeChanges: false)
                    #expect(Set(keeper.animals.map(\.name)) == ["Rex", "Bit", "Tom"])
                }
                return
            }
            try FSSupport.close(container)
        }
        let container = try Self.container(kind, in: folder.url)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let keeper = try #require(try context.fetch(INKeeper2.fetchRequest()).first)
            let animals = keeper.animals
            #expect(Set(animals.map(\.name)) == ["Rex", "Bit", "Tom"])
            let bit = try #require(animals.first { $0.name == "Bit" } as? INPuppy)
            #expect(bit.breed == "pug")
            #expect(bit.toy == "ball")
            #expect(bit.keeper === keeper)
            let tom = try #require(animals.first { $0.name == "Tom" } as? INCat)
            #expect(tom.lives == 9)
            // Moving an animal to another keeper updates both ends.
            let other = INKeeper2(context: context)
            other.name = "Lee"
            tom.keeper = other
            try context.save()
            #expect(keeper.animals.count == 2)
            #expect(other.animals.map(\.name) == ["Tom"])
        }
    }

    @Test func savingAnObjectOfAnAbstractEntityThrowsATypedError() throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(.inMemory, in: folder.url)
        let context = container.newBackgroundContext()
        context.performAndWait {
            let animal = INAnimal(context: context)
            animal.name = "Nobody"
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.objectID == animal.objectID)
            #expect(error?.message.contains("abstract entity 'INAnimal'") == true)
            // Nothing was written: the context keeps the insert, and a concrete object saves.
            context.delete(animal)
            let dog = INDog(context: context)
            dog.name = "Fido"
            #expect(throws: Never.self) { try context.save() }
        }
    }

    @Test func aParentOutsideTheClassListIsFlattenedIntoEachSubclass() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [INLabel.self])
        let label = try #require(model.entitiesByName["INLabel"])
        #expect(label.superentity == nil)
        #expect(label.properties.map(\.name) == ["title", "color"])
        #expect(label.properties.allSatisfy { $0.entity === label })
    }

    @Test(arguments: StoreKind.allCases)
    func aManyToManyWithTheFamilyKeepsBothEndsForEverySubEntity(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        var container = try Self.container(kind, in: folder.url)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let brave = INBadge(context: context)
            brave.title = "brave"
            let cat = INCat(context: context)
            cat.name = "Tom"
            let dog = INDog(context: context)
            dog.name = "Rex"
            cat.badges = [brave]
            brave.$animals.insert(dog)
            try context.save()
        }
        if kind == .file {
            try FSSupport.close(container)
            container = try Self.container(kind, in: folder.url)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let badge = try #require(try reader.fetch(INBadge.fetchRequest()).first)
            #expect(Set(badge.animals.map(\.name)) == ["Tom", "Rex"])
            let cat = try #require(try reader.fetch(INCat.fetchRequest()).first)
            #expect(cat.badges.map(\.title) == ["brave"])
            let dog = try #require(try reader.fetch(INDog.fetchRequest()).first)
            #expect(dog.badges.map(\.title) == ["brave"])
            // Through the badges, with the store's join over the family.
            let request = INAnimal.fetchRequest()
            request.predicate = NSPredicate(format: "ANY badges.title == %@", "brave")
            #expect(try reader.count(for: request) == 2)
        }
    }
}

/// The keeper of `InheritanceTests`' zoo (its own class, so that other suites' models of the
/// zoo classes do not share its entity).
final class INKeeper2: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "keeper") var animals: Set<INAnimal>
}
