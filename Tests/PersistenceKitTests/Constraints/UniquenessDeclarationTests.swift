import Foundation
import Testing
@testable import PersistenceKit

final class UCBadlyConstrained: NSManagedObject, UniquenessConstrained {
    static let uniquenessConstraints = [["label", "missing"]]
    @Attribute var label: String = ""
}

@Suite struct UniquenessDeclarationTests {
    private func names(_ entity: NSEntityDescription?) -> [[String]] {
        (entity?.uniquenessConstraints ?? []).map { $0.compactMap { $0 as? String } }
    }

    @Test func uniqueAttributeDeclaresASingleAttributeConstraint() throws {
        let model = try UCSupport.model()
        #expect(names(model.entitiesByName["UCMember"]) == [["email"]])
        model.seal()
        #expect(model.entitiesByName["UCMember"]?.uniqueColumns == [[0]])
    }

    @Test func classDeclaresCompoundConstraints() throws {
        let model = try UCSupport.model()
        #expect(names(model.entitiesByName["UCEdition"]) == [["title", "year"]])
        model.seal()
        #expect(model.entitiesByName["UCEdition"]?.uniqueColumns == [[0, 1]])
    }

    @Test func classConstraintNamingNoAttributeFailsTheModel() {
        let error = #expect(throws: ModelError.self) { _ = try NSManagedObjectModel(managedObjectClasses: [UCBadlyConstrained.self]) }
        #expect(error?.kind == .unknownConstraintProperty("missing"))
        #expect(error?.entity == "UCBadlyConstrained")
    }

    @Test func compoundConstraintAllowsSharingOneOfItsAttributes() throws {
        let container = try UCSupport.memoryContainer()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (title, year) in [("Dune", 1965), ("Dune", 1984), ("Emma", 1965)] {
                let e = UCEdition(context: context)
                e.title = title
                e.year = Int64(year)
            }
            try context.save()
            let again = UCEdition(context: context)
            again.title = "Dune"
            again.year = 1984
            #expect(throws: CoreDataError.self) { try context.save() }
        }
        #expect(try UCSupport.editions(container) == ["Dune|1965|-", "Dune|1984|-", "Emma|1965|-"])
    }
}
