import Testing
import ModelActorKit

@Test func modelActorKitReexportsPersistenceKit() throws {
    let model = NSManagedObjectModel()
    #expect(model.entities.isEmpty)
}
