import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    /// The only store of `container`.
    static func onlyStore(_ container: NSPersistentContainer) throws -> any PersistentStore {
        try #require(container.persistentStoreCoordinator.persistentStores.first)
    }

    static func metadata(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.tags) { checked in
            let first = try await checked.open("A")
            let coordinator = first.persistentStoreCoordinator
            let stored = try onlyStore(first)
            let identifier = stored.identifier
            // What `metadata(for:)` returned, with entries added: the store's own keys go
            // back unchanged, as Core Data code passes them.
            var metadata = coordinator.metadata(for: stored)
            metadata["importedThrough"] = "2026-11-01"
            metadata["schemaNote"] = "tags, v1"
            metadata[NSStoreUUIDKey] = "not the store's identifier"
            try coordinator.setMetadata(metadata, for: stored)
            #expect(stored.metadata["importedThrough"] == "2026-11-01")
            #expect(stored.metadata[NSStoreUUIDKey] == identifier)
            // A value of another type than String is refused, and changes nothing.
            let refused = #expect(throws: CoreDataError.self) { try coordinator.setMetadata(["count": 3], for: stored) }
            #expect(refused?.code == .persistentStoreOperation)

            let reopened = try onlyStore(try await checked.reopen())
            #expect(reopened.metadata["importedThrough"] == "2026-11-01")
            #expect(reopened.metadata["schemaNote"] == "tags, v1")
            #expect(reopened.metadata[NSStoreUUIDKey] == identifier)

            // Entries left out are removed.
            let again = try await checked.open("B")
            try again.persistentStoreCoordinator.setMetadata(["schemaNote": "tags, v2"], for: try onlyStore(again))
            let last = try onlyStore(try await checked.reopen())
            #expect(last.metadata["importedThrough"] == nil)
            #expect(last.metadata["schemaNote"] == "tags, v2")
            #expect(last.metadata[NSStoreUUIDKey] == identifier)
        }
    }
}
