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
}
