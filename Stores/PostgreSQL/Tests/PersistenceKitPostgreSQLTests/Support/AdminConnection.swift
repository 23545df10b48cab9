import Foundation
@testable import PersistenceKitPostgreSQL

/// A plain SQL connection for tests to look at and disturb the database.
final class AdminConnection {
    private let connection: PostgreSQLConnection

    init(url: URL) throws {
        connection = try PostgreSQLConnection(conninfo: url.absoluteString, target: "test administration")
    }

    /// Runs `sql`.
    func run(_ sql: String) throws { try connection.execute(sql) }

    /// The first column of the rows `sql` returns, as text.
    func column(_ sql: String) throws -> [String] {
        let r = try connection.execute(sql)
        return (0..<r.count).map { r.text($0, 0) }
    }
}
