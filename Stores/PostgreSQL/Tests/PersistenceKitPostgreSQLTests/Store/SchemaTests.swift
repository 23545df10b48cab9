import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

@Suite("PostgreSQL store: schema, metadata and opening", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct SchemaTests {
    @Test("A new schema gets the tables; a second open shares the store's identifier")
    func createsAndReopens() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let first = try TestServer.store(model: model, schema: schema)
        let second = try TestServer.store(model: model, schema: schema)
        #expect(first.identifier == second.identifier)
        #expect(first.metadata[NSStoreTypeKey] == NSPostgreSQLStoreType)
        #expect(first.metadata[PersistenceKitModelLayoutHashKey] != nil)
        first.close()
        second.close()
    }

    @Test("Opening with another model, migration off, is the file store's mismatch error (134100)")
    func mismatchedModel() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        _ = try await TestServer.container(model: model, schema: schema)
        let other = try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self])
        let error = await #expect(throws: CoreDataError.self) {
            _ = try await SchemaMigrationTests.load(other, schema: schema, migrate: false)
        }
        #expect(error?.code == .persistentStoreIncompatibleVersionHash)
        let cause = error?.underlying as? PostgreSQLStoreError
        guard case .modelMismatch? = cause?.kind else {
            Issue.record("expected a modelMismatch cause, got \(String(describing: error?.underlying))")
            return
        }
    }

    @Test("Opening with another model whose old version is unknown, migration on, is the missing source model error")
    func mismatchedModelWithoutVersions() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        _ = try await TestServer.container(model: model, schema: schema)
        let other = try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self])
        let error = await #expect(throws: CoreDataError.self) {
            _ = try await TestServer.container(model: other, schema: schema)
        }
        #expect(error?.code == .migrationMissingSourceModel)
        guard case .missingSourceModel? = (error?.underlying as? MigrationError)?.kind else {
            Issue.record("expected a missingSourceModel cause, got \(String(describing: error?.underlying))")
            return
        }
    }

    @Test("A URL that is not postgresql:// is a typed error")
    func badURL() throws {
        let model = try Models.bookshelf()
        let error = #expect(throws: PostgreSQLStoreError.self) {
            _ = try PostgreSQLStore(url: URL(fileURLWithPath: "/tmp/x.store"), model: model)
        }
        #expect(error?.kind == .invalidURL)
    }

    @Test("An unreachable server is a typed connection error")
    func unreachable() throws {
        let model = try Models.bookshelf()
        let error = #expect(throws: PostgreSQLStoreError.self) {
            _ = try PostgreSQLStore(
                url: URL(string: "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"), model: model)
        }
        #expect(error?.kind == .connectionFailed)
    }

    @Test("libpq keyword strings open the store too")
    func keywordString() throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let url = try #require(TestServer.url)
        // The URL's parts as keywords (host may be a socket folder in ?host=).
        var keywords: [String] = []
        let parts = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        if let host = parts.queryItems?.first(where: { $0.name == "host" })?.value ?? parts.host, !host.isEmpty {
            keywords.append("host=\(host)")
        }
        if let port = parts.port { keywords.append("port=\(port)") }
        if let user = parts.user { keywords.append("user=\(user)") }
        let db = parts.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if !db.isEmpty { keywords.append("dbname=\(db)") }
        var options = TestServer.options(schema: schema, listens: false)
        options[PostgreSQLStore.connectionStringOptionKey] = keywords.joined(separator: " ")
        let store = try PostgreSQLStore(url: nil, options: options, model: model)
        #expect(try store.countRows(entity: 0, filter: nil) == 0)
        store.close()
    }
}
