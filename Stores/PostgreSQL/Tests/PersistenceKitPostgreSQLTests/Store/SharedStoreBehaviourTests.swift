import PersistenceKit
import PersistenceKitStoreBehaviour
import Testing

/// The PostgreSQL store passes the behaviour checks the file and in-memory stores pass (run
/// in the root package's PersistenceKitTests).
@Suite("Shared store behaviour: PostgreSQL store", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct SharedStoreBehaviourTests {
    @Test("The PostgreSQL store keeps the shared behaviour", arguments: PostgreSQLStoreUnderTest().supportedChecks)
    func postgreSQLStore(_ check: StoreBehaviour.Check) async throws {
        try await check.run(on: PostgreSQLStoreUnderTest())
    }
}
