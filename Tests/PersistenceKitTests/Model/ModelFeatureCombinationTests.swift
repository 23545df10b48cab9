import Foundation
import Testing
@testable import PersistenceKit

// The Guide's example model: inheritance, an ordered relationship, a Codable value and a
// derived count in one model.

class MFAnimal: NSManagedObject, AbstractEntity {
    @Attribute var name: String = ""
    @Relationship(inverse: "animals") var keeper: MFKeeper?
    @Relationship(inverse: "rota") var rotaOf: MFKeeper?
}

final class MFDog: MFAnimal { @Attribute var breed: String = "" }
final class MFCat: MFAnimal { @Attribute var lives: Int16 = 9 }

struct MFDiet: CodableAttribute, Equatable { var meals: [String] = [] }

final class MFKeeper: NSManagedObject, DerivedAttributes {
    static let derivedAttributes = ["animalCount": NSExpression(forKeyPath: "animals.@count")]
    @Attribute var name: String = ""
    @Relationship(inverse: "keeper") var animals: Set<MFAnimal>
    @Relationship(inverse: "rotaOf") var rota: [MFAnimal]
    @Attribute(storageMethod: .codable) var diet: MFDiet? = nil
    @Attribute var animalCount: Int64 = 0
}

@Suite("Model features together")
struct ModelFeatureCombinationTests {
    @Test func inheritanceOrderCodableValuesAndDerivedCountsWorkTogetherInAFileStore() throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [MFAnimal.self, MFDog.self, MFCat.self, MFKeeper.self])
        var container = try FSSupport.container(at: folder.storeURL, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let keeper = MFKeeper(context: context)
            keeper.name = "Kim"
            keeper.diet = MFDiet(meals: ["fish"])
            let rex = MFDog(context: context)
            rex.name = "Rex"
            let tom = MFCat(context: context)
            tom.name = "Tom"
            keeper.animals = [rex, tom]
            keeper.rota = [tom, rex]
            keeper.$rota.move(fromOffsets: IndexSet([1]), toOffset: 0)
            try context.save()
            #expect(keeper.animalCount == 2)
        }
        try FSSupport.close(container)
        container = try FSSupport.container(at: folder.storeURL, model: model)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let keeper = try #require(try reader.fetch(MFKeeper.fetchRequest()).first)
            #expect(keeper.rota.map(\.name) == ["Rex", "Tom"])
            #expect(keeper.rota.first is MFDog)
            #expect(keeper.diet == MFDiet(meals: ["fish"]))
            #expect(keeper.animalCount == 2)
            let cats = MFAnimal.fetchRequest()
            cats.predicate = #Predicate<MFAnimal> { $0.name == "Tom" }
            #expect(try reader.fetch(cats).first is MFCat)
        }
    }
}
