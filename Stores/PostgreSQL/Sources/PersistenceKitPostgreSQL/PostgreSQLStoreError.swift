import Foundation

/// Why the PostgreSQL store could not open, read or write: what failed, where (the server,
/// with the password left out) and what to do.
public struct PostgreSQLStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The store URL or connection string is not one the store understands.
        case invalidURL
        /// No connection could be made (server down, wrong host, port, user or database).
        case connectionFailed
        /// The connection dropped while a read ran; nothing was written. Retry.
        case connectionLost
        /// The connection dropped while a save was committing. ``commitOutcome`` says
        /// whether the save is in the database.
        case connectionLostDuringCommit
        /// The server refused a statement (``PostgreSQLStoreError/sqlState`` says why).
        case query
        /// The database holds a store made with another model.
        case modelMismatch(storeHash: String, modelHash: String)
        /// The model uses something the store cannot keep in PostgreSQL.
        case unsupportedModel
        /// The store was closed.
        case closed
        /// A String attribute's value holds U+0000, which PostgreSQL `text` cannot hold;
        /// nothing of the save was written. Keep such values in a Binary Data attribute.
        case textHoldsNUL(entity: String, attribute: String, primaryKey: Int64)
        /// The schema holds a store whose tables are laid out in another way than this
        /// version of the store lays them out (see ``PostgreSQLStore/layoutVersionKey``). Stores
        /// of another layout are not converted.
        case unsupportedLayout(found: String)
    }

    /// Whether a save whose connection dropped while it committed is in the database.
    public enum CommitOutcome: Sendable, Equatable {
        /// The transaction committed: every row of the save is stored; the saving context's
        /// objects are behind the database (refresh them or reset the context).
        case committed
        /// The transaction did not commit: nothing of the save is stored; save again.
        case notCommitted
        /// No connection could be made to ask the server; the save is either wholly in the
        /// database or wholly absent, never in part.
        case unknown
    }

    /// What went wrong.
    public let kind: Kind
    /// The server and database, without the password.
    public let target: String
    /// A sentence saying what went wrong and what to do.
    public let message: String
    /// PostgreSQL's SQLSTATE code, when the server sent one (`23505`: unique violation, …).
    public let sqlState: String?
    /// For ``Kind/connectionLostDuringCommit``: whether the save is in the database.
    public let commitOutcome: CommitOutcome?

    init(_ kind: Kind, target: String, _ message: String, sqlState: String? = nil, commitOutcome: CommitOutcome? = nil) {
        self.kind = kind
        self.target = target
        self.message = message
        self.sqlState = sqlState
        self.commitOutcome = commitOutcome
    }

    /// A readable summary for logs and messages.
    public var description: String { "PostgreSQL store \(target): \(message)" }
}
