import Foundation
import ModelActorKit
import Synchronization
import Testing

/// `NSModelActor`: an actor whose isolation is a context's queue.
@Suite("Model actors") struct ModelActorTests {
    @Test func createAndReadBack() async throws {
        let container = try ActorFixtures.container()
        let store = ItemStore(container: container)
        let id = try await store.createItem(title: "first")
        #expect(await store.title(of: id) == "first")
        #expect(!id.isTemporaryID)
    }

    @MainActor @Test func methodsNeverRunOnMainThreadEvenWhenCreatedOnMainActor() async throws {
        #expect(NSManagedObjectContext.isOnMainQueue)
        let store = ItemStore(container: try ActorFixtures.container())
        for _ in 0..<100 {
            let onMain = await store.isOnMain()
            #expect(!onMain)
        }
    }

    @Test func withContextRunsInIsolationAndRethrows() async throws {
        let store = ItemStore(container: try ActorFixtures.container())
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await store.withContext { (_: NSManagedObjectContext) throws -> Int in throw Boom() }
        }
        let count = try await store.withContext { context in
            _ = Item(context: context)
            try context.save()
            return try context.count(for: Item.fetchRequest())
        }
        #expect(count == 1)
    }

    /// The two-argument form gets the actor's container, also written as a trailing closure
    /// whose body would compile with a context in `container`'s place. (An async
    /// `withContext(isolated:)` overload used to match such closures, and win, handing the
    /// closure the actor and its context.)
    @Test func twoArgumentWithContextReceivesTheContainer() async throws {
        let container = try ActorFixtures.container()
        let store = ItemStore(container: container)
        let name = await store.withContext { _, container in container.name }
        #expect(name == container.name)
        let coordinator = await store.withContext { _, container in ObjectIdentifier(container.persistentStoreCoordinator) }
        #expect(coordinator == ObjectIdentifier(container.persistentStoreCoordinator))
    }
}
