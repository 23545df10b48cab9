import Foundation
import PersistenceKit

// Entity families for the inheritance tests: animals (dogs and cats are animals) kept by
// owners, and kennels of dogs (an entity without sub-entities).

class FMAnimal: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "pets", deleteRule: .nullifyDeleteRule) var owner: FMOwner?
    @Relationship(inverse: "favourite", deleteRule: .nullifyDeleteRule) var fans: Set<FMOwner>
    @Relationship(inverse: "animals", deleteRule: .nullifyDeleteRule) var pals: [FMPal]
}

/// A pal of animals, who list their pals in order: `FMPal.animals` is read from the
/// ordered `pals` each table of the family holds.
final class FMPal: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "pals", deleteRule: .nullifyDeleteRule) var animals: Set<FMAnimal>
}

final class FMDog: FMAnimal {
    @Attribute var breed: String = ""
}

final class FMCat: FMAnimal {
    @Attribute var lives: Int16 = 9
}

/// An owner: pets and a favourite of the animal family.
final class FMOwner: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "owner", deleteRule: .cascadeDeleteRule) var pets: Set<FMAnimal>
    @Relationship(inverse: "fans", deleteRule: .nullifyDeleteRule) var favourite: FMAnimal?
}

/// Animals (dogs and cats among them) each with at most one owner and owners' favourites:
/// a one-to-many whose to-many end leads into the family, a to-one, a many-to-many and
/// ordered to-manys (an owner's walks, an agenda's items).
class PAnimal: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int64 = 0
    @Relationship(inverse: "pets", deleteRule: .nullifyDeleteRule) var owner: POwner?
    @Relationship(inverse: "favourite", deleteRule: .nullifyDeleteRule) var fans: Set<POwner>
    @Relationship(inverse: "animals", deleteRule: .nullifyDeleteRule) var toys: Set<PToy>
    @Relationship(inverse: "walks", deleteRule: .nullifyDeleteRule) var walker: POwner?
    @Relationship(inverse: "items", deleteRule: .nullifyDeleteRule) var agendas: Set<PAgenda>
}

/// A list of animals in order that owns its links (its entity sorts before `PAnimal`):
/// the animals' `agendas` are read from it.
final class PAgenda: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "agendas", deleteRule: .nullifyDeleteRule) var items: [PAnimal]
}

/// A toy many animals play with: a many-to-many into the family.
final class PToy: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "toys", deleteRule: .nullifyDeleteRule) var animals: Set<PAnimal>
}

final class PDog: PAnimal {
    @Attribute var breed: String = ""
}

final class PCat: PAnimal {
    @Attribute var lives: Int16 = 9
}

final class POwner: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "owner", deleteRule: .cascadeDeleteRule) var pets: Set<PAnimal>
    @Relationship(inverse: "fans", deleteRule: .nullifyDeleteRule) var favourite: PAnimal?
    @Relationship(inverse: "walker", deleteRule: .nullifyDeleteRule) var walks: [PAnimal]
}

/// An animal family whose only link leads into a sub-entity without sub-entities (dogs).
class FLAnimal: NSManagedObject {
    @Attribute var name: String = ""
}

final class FLDog: FLAnimal {
    @Relationship(inverse: "dogs", deleteRule: .nullifyDeleteRule) var kennel: FLKennel?
}

final class FLCat: FLAnimal {
    @Attribute var lives: Int16 = 9
}

final class FLKennel: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "kennel", deleteRule: .cascadeDeleteRule) var dogs: Set<FLDog>
}

enum FamilyModels {
    /// Owners with pets and a favourite among animals, dogs and cats, which list pals.
    static func owners() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [FMAnimal.self, FMDog.self, FMCat.self, FMOwner.self, FMPal.self])
    }

    /// Owners with pets and a favourite among animals, dogs and cats, which play with toys.
    static func pets() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [PAnimal.self, PDog.self, PCat.self, POwner.self, PToy.self, PAgenda.self])
    }

    /// Animals, dogs in kennels: no relationship leads to an entity with sub-entities.
    static func kennels() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [FLAnimal.self, FLDog.self, FLCat.self, FLKennel.self])
    }
}

/// A family linked within itself: a parent with children (to-one and its to-many end) and
/// likes between animals (a many-to-many, both sides in the family).
class TAnimal: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "children", deleteRule: .nullifyDeleteRule) var parent: TAnimal?
    @Relationship(inverse: "parent", deleteRule: .cascadeDeleteRule) var children: Set<TAnimal>
    @Relationship(inverse: "likedBy", deleteRule: .nullifyDeleteRule) var likes: Set<TAnimal>
    @Relationship(inverse: "likes", deleteRule: .nullifyDeleteRule) var likedBy: Set<TAnimal>
}

final class TDog: TAnimal {
    @Attribute var breed: String = ""
}

final class TCat: TAnimal {
    @Attribute var lives: Int16 = 9
}

extension FamilyModels {
    /// Animals, dogs and cats linked among themselves.
    static func tree() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [TAnimal.self, TDog.self, TCat.self])
    }
}
