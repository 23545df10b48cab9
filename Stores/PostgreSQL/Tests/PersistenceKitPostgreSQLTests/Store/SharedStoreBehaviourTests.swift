import PersistenceKit
import PersistenceKitStoreBehaviour
import Testing

/// The PostgreSQL store passes the behaviour checks the file and in-memory stores pass (run
/// in the root package's PersistenceKitTests).
@Suite("Shared store behaviour: PostgreSQL store", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct SharedStoreBehaviourTests {
    /// With and without listening: merges of other coordinators' commits arriving while a
    /// check runs change nothing it expects.
    @Test(
        "The PostgreSQL store keeps the shared behaviour",
        arguments: [false, true].flatMap { listens in
            PostgreSQLStoreUnderTest(listens: listens).supportedChecks.map { (PostgreSQLStoreUnderTest(listens: listens), $0) }
        })
    func postgreSQLStore(_ store: PostgreSQLStoreUnderTest, _ check: StoreBehaviour.Check) async throws {
        try await check.run(on: store)
    }
}
