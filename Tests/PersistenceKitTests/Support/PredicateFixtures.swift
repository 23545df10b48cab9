import Foundation
import Testing
@testable import PersistenceKit

/// A node related to other nodes, with computed properties that read its attribute or a
/// related node's: the store must never filter those as the attribute itself.
final class PredicateNode: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute(.indexed) var rank: Int64 = 0
    @Attribute var link: URL?
    @Relationship(inverse: "children") var parent: PredicateNode?
    @Relationship(inverse: "parent") var children: Set<PredicateNode>
    var lowerName: String { name.lowercased() }
    var displayName: String { name.isEmpty ? "(untitled)" : name }
    var parentName: String { parent!.name }
    var parentOrOwnName: String { parent?.name ?? name }
}

/// Stores and fetches of `PredicateNode`s, for the fetch and predicate tests.
enum PredicateFixtures {
    /// A coordinator with the file store at `url`, or an in-memory store when it is nil.
    static func coordinator(fileAt url: URL?) throws -> NSPersistentStoreCoordinator {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try NSManagedObjectModel(managedObjectClasses: [PredicateNode.self]))
        if let url {
            _ = try coordinator.addPersistentStore(type: NSFileStoreType, at: url, options: [:])
        } else {
            _ = try coordinator.addPersistentStore(type: NSInMemoryStoreType, at: nil, options: [:])
        }
        return coordinator
    }

    static func context(_ coordinator: NSPersistentStoreCoordinator) -> NSManagedObjectContext {
        NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
    }

    static func names(_ context: NSManagedObjectContext, _ predicate: Predicate<PredicateNode>) throws -> [String] {
        let request = PredicateNode.fetchRequest()
        request.predicate = predicate
        return try context.fetch(request).map(\.name).sorted()
    }
}
