import Foundation
import ModelActorKit
import Synchronization
import Testing

@Suite struct ModelActorTests {
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
}
