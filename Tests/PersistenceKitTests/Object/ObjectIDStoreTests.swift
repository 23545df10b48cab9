import Foundation
import Testing
@testable import PersistenceKit

/// `NSManagedObjectID.persistentStore`: the store a coordinator of this process added that
/// holds the object, while that store exists.
@Suite("NSManagedObjectID.persistentStore")
struct ObjectIDStoreTests {
    @Test("A saved object's ID names its store; a temporary ID none")
    func storeOfAnID() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (temporary, saved) = try context.performAndWait {
            let shelf = Shelf(context: context)
            let temporary = shelf.objectID
            try context.save()
            return (temporary, shelf.objectID)
        }
        let store = try #require(container.persistentStoreCoordinator.persistentStores.first)
        #expect(temporary.persistentStore == nil)
        #expect(saved.persistentStore === store)
    }

    @Test("An ID does not keep its store alive: once nothing holds the store, it names none")
    func storeGone() throws {
        let model = try Fixtures.model()
        func savedID() throws -> NSManagedObjectID {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(InMemoryStore(model: model))
            let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
            let id = try context.performAndWait {
                let shelf = Shelf(context: context)
                try context.save()
                return shelf.objectID
            }
            #expect(id.persistentStore != nil)
            return id
        }
        let id = try savedID()
        #expect(id.persistentStore == nil)
    }
}
