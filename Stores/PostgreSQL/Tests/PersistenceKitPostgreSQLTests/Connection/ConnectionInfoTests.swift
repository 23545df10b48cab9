import Foundation
import PersistenceKit
import Testing

@testable import PersistenceKitPostgreSQL

/// The connection string a store opens with: the URL (or libpq keyword string) as given,
/// with the description's timeout as libpq's `connect_timeout` unless it names one.
@Suite("PostgreSQL store: connection strings")
struct ConnectionInfoTests {
    @Test("A timeout becomes connect_timeout, rounded up to whole seconds; one the connection names wins")
    func timeoutBecomesConnectTimeout() throws {
        let url = try #require(URL(string: "postgresql://app:secret@db.example/shop"))
        let timed = try PostgreSQLStore.connectionInfo(url: url, options: [NSPersistentStoreTimeoutOption: "2.5"])
        #expect(timed.conninfo == "postgresql://app:secret@db.example/shop?connect_timeout=3")
        #expect(!timed.target.contains("secret"))
        let withQuery = try #require(URL(string: "postgresql://db.example/shop?sslmode=require"))
        #expect(
            try PostgreSQLStore.connectionInfo(url: withQuery, options: [NSPersistentStoreTimeoutOption: "5"]).conninfo
                == "postgresql://db.example/shop?sslmode=require&connect_timeout=5")
        let named = try #require(URL(string: "postgresql://db.example/shop?connect_timeout=9"))
        #expect(try PostgreSQLStore.connectionInfo(url: named, options: [NSPersistentStoreTimeoutOption: "5"]).conninfo == named.absoluteString)
        let keywords = try PostgreSQLStore.connectionInfo(
            url: nil, options: [PostgreSQLStore.connectionStringOptionKey: "host=db dbname=shop", NSPersistentStoreTimeoutOption: "1"])
        #expect(keywords.conninfo == "host=db dbname=shop connect_timeout=1")
        #expect(try PostgreSQLStore.connectionInfo(url: url, options: [:]).conninfo == url.absoluteString)
    }
}
