import Testing
import ModelActorKit

@Suite("ModelActorKit re-exports PersistenceKit") struct ReexportTests {
    @Test("import ModelActorKit is enough to use PersistenceKit's types")
    func modelActorKitReexportsPersistenceKit() throws {
        let model = NSManagedObjectModel()
        #expect(model.entities.isEmpty)
    }
}
