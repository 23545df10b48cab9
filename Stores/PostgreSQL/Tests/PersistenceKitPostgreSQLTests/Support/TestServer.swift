import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// The PostgreSQL server the tests run against: the URL in `PK_POSTGRES_URL` (`.ci/run`
/// starts a throwaway server and sets it). Without it every suite is skipped, with this
/// reason; with it set and the server down, the tests fail with the connection error.
enum TestServer {
    static var url: URL? { configuredURL }
    private static let configuredURL: URL? = ProcessInfo.processInfo.environment["PK_POSTGRES_URL"].flatMap(URL.init(string:))

    static let isConfigured = url != nil

    static let skipReason: Comment =
        "PK_POSTGRES_URL is not set: no PostgreSQL server to test against (set it to postgresql://user@host/db, or run .ci/run)."

    /// A schema name no other test uses.
    static func freshSchema() -> String {
        "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased()
    }

    /// Options for a store in `schema`.
    static func options(schema: String, listens: Bool = true) -> [String: String] {
        [PostgreSQLStore.schemaOptionKey: schema, PostgreSQLStore.listensOptionKey: listens ? "true" : "false"]
    }

    /// A container with a PostgreSQL store in `schema`.
    /// With `applicationName`, the store's connections carry it (`pg_stat_activity`
    /// shows it), so a test can find them.
    static func container(
        model: NSManagedObjectModel, schema: String, name: String = #function, listens: Bool = true,
        applicationName: String? = nil, readOnly: Bool = false
    ) async throws -> NSPersistentContainer {
        PostgreSQLStore.register()
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        var storeURL = url
        if let applicationName, let text = url?.absoluteString {
            storeURL = URL(string: text + (text.contains("?") ? "&" : "?") + "application_name=" + applicationName)
        }
        let description = NSPersistentStoreDescription(url: storeURL, type: NSPostgreSQLStoreType)
        for (k, v) in options(schema: schema, listens: listens) { description.setOption(v, forKey: k) }
        description.isReadOnly = readOnly
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        return container
    }

    /// A store of `model` in `schema`, outside any coordinator.
    static func store(model: NSManagedObjectModel, schema: String, listens: Bool = false) throws -> PostgreSQLStore {
        try PostgreSQLStore(url: url, options: options(schema: schema, listens: listens), model: model)
    }

    /// Deletes the store of `model` in `schema`.
    static func drop(_ schema: String, model: NSManagedObjectModel) {
        try? PostgreSQLStore.destroy(at: url, options: options(schema: schema), model: model)
    }
}
