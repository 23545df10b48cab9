import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import PersistenceKitStoreBehaviour

/// The PostgreSQL store for the shared behaviour checks: each location a schema of its own
/// on the test server, dropped at the end. Every container of a location has a store object
/// (and connections) of its own, as two processes on one database would.
struct PostgreSQLStoreUnderTest: StoreUnderTest {
    /// Whether each store listens for the other stores' commits (`PostgreSQLListens`), as
    /// by default; without, a coordinator sees other coordinators' saves only when it reads.
    var listens: Bool

    var description: String { listens ? "PostgreSQL store, listening" : "PostgreSQL store, not listening" }

    func makeLocation(for model: NSManagedObjectModel) async throws -> any StoreLocation {
        Location(schema: TestServer.freshSchema(), model: model, listens: listens)
    }

    func supports(_ check: StoreBehaviour.Check) -> Bool {
        switch check {
        // PostgreSQL's `text` cannot hold NUL: a save of a string with NUL is refused with
        // `textHoldsNUL` (Docs/Scaling.md), where the check expects it to read back.
        case .controlCharacters: false
        default: true
        }
    }

    struct Location: StoreLocation {
        let schema: String
        let model: NSManagedObjectModel
        let listens: Bool

        func open(name: String) async throws -> NSPersistentContainer {
            try await TestServer.container(model: model, schema: schema, name: name, listens: listens)
        }

        func openReadOnly(name: String) async throws -> NSPersistentContainer {
            try await TestServer.container(model: model, schema: schema, name: name, listens: listens, readOnly: true)
        }

        func close(_ container: NSPersistentContainer) throws {
            let coordinator = container.persistentStoreCoordinator
            for store in coordinator.persistentStores {
                try coordinator.remove(store)
                // Its connections go now, not when the last object holding the store does.
                (store as? PostgreSQLStore)?.close()
            }
        }

        func destroy() throws {
            try PostgreSQLStore.destroy(at: TestServer.url, options: TestServer.options(schema: schema), model: model)
        }
    }
}
