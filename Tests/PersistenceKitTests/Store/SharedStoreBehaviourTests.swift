import PersistenceKit
import PersistenceKitStoreBehaviour
import Testing

/// The file store and the in-memory store pass the behaviour checks every store shares (the
/// PostgreSQL store runs the same checks in its own package).
@Suite("Shared store behaviour: file and in-memory stores")
struct SharedStoreBehaviourTests {
    @Test("The file store keeps the shared behaviour", arguments: FileStoreUnderTest().supportedChecks)
    func fileStore(_ check: StoreBehaviour.Check) async throws {
        try await check.run(on: FileStoreUnderTest())
    }

    @Test("The in-memory store keeps the shared behaviour", arguments: InMemoryStoreUnderTest().supportedChecks)
    func inMemoryStore(_ check: StoreBehaviour.Check) async throws {
        try await check.run(on: InMemoryStoreUnderTest())
    }

    /// Without this, a check that compared nothing (an empty fetch against an empty
    /// expectation) would pass for every store alike.
    @Test("Every check fails for a store whose coordinators each see an empty store", arguments: StoreBehaviour.Check.allCases)
    func forgetfulStoreFails(_ check: StoreBehaviour.Check) async {
        await withKnownIssue {
            try await check.run(on: ForgetfulStore())
        }
    }
}

/// A store that keeps nothing from one coordinator to the next: each open is a new, empty
/// in-memory store.
private struct ForgetfulStore: StoreUnderTest {
    var description: String { "store that keeps nothing" }

    func makeLocation(for model: NSManagedObjectModel) async throws -> any StoreLocation { Location(model: model) }

    struct Location: StoreLocation {
        let model: NSManagedObjectModel

        func open(name: String) async throws -> NSPersistentContainer { try await open(name: name, readOnly: false) }

        func openReadOnly(name: String) async throws -> NSPersistentContainer { try await open(name: name, readOnly: true) }

        private func open(name: String, readOnly: Bool) async throws -> NSPersistentContainer {
            let container = NSPersistentContainer(name: name, managedObjectModel: model)
            let description = NSPersistentStoreDescription(type: NSInMemoryStoreType)
            description.isReadOnly = readOnly
            container.persistentStoreDescriptions = [description]
            try await container.loadPersistentStores()
            return container
        }

        func destroy() throws {}
    }
}
