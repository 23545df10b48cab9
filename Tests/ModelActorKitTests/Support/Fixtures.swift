import Foundation
import ModelActorKit
import TestSupport
import Synchronization

final class Item: NSManagedObject {
    @Attribute var timestamp: Date = Date(timeIntervalSince1970: 0)
    @Attribute var title: String = ""
    @Attribute var count: Int64 = 0
}

enum ActorFixtures {
    static func container(name: String = #function) throws -> NSPersistentContainer {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let failure = TestMutex<String?>(nil)
        container.loadPersistentStores { _, error in failure.withLock { $0 = error.map { "\($0)" } } }
        if let message = failure.withLock({ $0 }) { throw FixtureError(message: message) }
        return container
    }
}

struct FixtureError: Error { let message: String }

actor ItemStore: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor

    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }

    func createItem(title: String) throws -> NSManagedObjectID {
        let item = Item(context: modelContext)
        item.title = title
        try modelContext.save()
        return item.objectID
    }

    func title(of id: NSManagedObjectID) -> String? {
        self[id, as: Item.self]?.title
    }

    /// Whether this method runs on the main thread or the main queue (on Linux the main
    /// queue may be drained by a worker thread, so both are checked).
    func isOnMain() -> Bool { Thread.isMainThread || NSManagedObjectContext.isOnMainQueue }

    func touch() {}
}

@MainActor
final class ItemViewModel: NSMainModelActor {
    let modelContainer: NSPersistentContainer
    init(modelContainer: NSPersistentContainer) { self.modelContainer = modelContainer }
}
