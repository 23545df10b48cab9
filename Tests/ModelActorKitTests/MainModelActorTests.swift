import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

/// `NSMainModelActor`: a main-actor type whose context is the container's view context.
@Suite("Main model actors") struct MainModelActorTests {
    @MainActor @Test func mainModelActorUsesViewContext() async throws {
        let container = try ActorFixtures.container()
        let viewModel = ItemViewModel(modelContainer: container)
        #expect(viewModel.modelContext === container.viewContext)
        let id = try viewModel.withContext { context -> NSManagedObjectID in
            let item = Item(context: context)
            item.title = "main"
            try context.save()
            return item.objectID
        }
        #expect(viewModel[id, as: Item.self]?.title == "main")
    }
}
