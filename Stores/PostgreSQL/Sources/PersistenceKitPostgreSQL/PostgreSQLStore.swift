import Foundation
import PersistenceKit
import Synchronization

/// The type string of ``PostgreSQLStore`` (register it with ``PostgreSQLStore/register()``).
public let NSPostgreSQLStoreType = "PostgreSQL"

/// A store that keeps its rows in a PostgreSQL database, so that any number of processes
/// and machines share one object graph.
///
/// Open it with a `postgresql://user@host:port/database` URL in a store description (or a
/// libpq keyword string under ``connectionStringOptionKey``), after calling
/// ``register()`` once. The store creates its tables from the model on first open: a table
/// per entity (named after it) with a column per stored property, `_pk` and `_version`. Each
/// link is kept at its owning end only: to-one relationships as `bigint` key columns; the
/// to-many end of a one-to-many has no column and is read from the destination's key column;
/// an unordered many-to-many is a join table (`_pk_link_<Entity>_<relationship>`: `source`,
/// `target`); an ordered to-many a `bigint[]` in its order. An index per indexed attribute
/// and to-one; a deferred unique constraint per uniqueness constraint; `_pk_metadata` (the
/// store's identifier, the model's layout hash and the layout version, see
/// ``layoutVersionKey``) and `_pk_keys` (the next primary key of each entity). Loaded by a
/// coordinator that allows migration, a store made with an older model version is migrated
/// in place, in one transaction (see Docs/Migration.md).
///
/// A String value holding U+0000 cannot be stored (PostgreSQL `text` cannot hold it): such a
/// save fails with ``PostgreSQLStoreError/Kind/textHoldsNUL(entity:attribute:primaryKey:)``.
///
/// Every save is one transaction: rows it updates or deletes are locked (`FOR UPDATE`) and
/// their `_version` compared with the version the context read, so an object another process
/// changed meanwhile is a merge conflict for the context's merge policy, as with the file
/// store. Each commit then sends `NOTIFY` with the rows it changed; every store `LISTEN`s on a
/// connection of its own and hands other processes' changes to its coordinators' merging
/// contexts (``RemoteChangeReporting``).
///
/// # Thread safety
/// Every method may be called from any thread. Reads and commits each borrow a connection of
/// a small pool (``poolSizeOptionKey``), so a read never waits behind another thread's save;
/// the remote-change handlers are guarded by a lock.
public final class PostgreSQLStore: PersistentStore, RemoteChangeReporting {
    /// The option naming the database schema the store's tables live in (default `public`).
    /// Stores in different schemas of one database are separate stores.
    public static let schemaOptionKey = "PostgreSQLSchema"
    /// The option holding a libpq keyword connection string (`host=/run/postgresql
    /// dbname=app`), used instead of the description's URL.
    public static let connectionStringOptionKey = "PostgreSQLConnectionString"
    /// The option giving the most connections the store opens for reads and saves (default 4).
    public static let poolSizeOptionKey = "PostgreSQLPoolSize"
    /// The option that turns off listening for other processes' saves (`"false"`).
    public static let listensOptionKey = "PostgreSQLListens"
    /// The metadata key (in ``metadata`` and the `_pk_metadata` table) of the version of
    /// the store's table layout: `2`, or `3` for a store whose model has a to-one, a
    /// many-to-many or an ordered to-many into an entity with sub-entities (kept with the
    /// linked row's entity). A store of another layout version is refused on open with
    /// ``PostgreSQLStoreError/Kind/unsupportedLayout(found:)``.
    public static let layoutVersionKey = "PostgreSQLLayoutVersion"

    /// See ``PersistentStore``. The identifier recorded in the database when the store was
    /// created, so every process names objects alike.
    public let identifier: String
    /// See ``PersistentStore``.
    public var type: String { NSPostgreSQLStoreType }
    /// See ``PersistentStore``.
    public let url: URL?
    /// Whether the store was opened with ``PersistenceKit/NSReadOnlyPersistentStoreOption``:
    /// it creates no schema, its commits are refused (the coordinator refuses saves before
    /// they reach it), and on a hot standby it does not listen (see Docs/Scaling.md).
    public let isReadOnly: Bool
    /// See ``PersistentStore``: the store's own keys, and the application's entries as this
    /// process last read or set them (another process's changes show on the next open).
    public var metadata: [String: String] {
        baseMetadata.merging(userMetadata.withLock { $0 }) { base, _ in base }
    }
    /// The metadata the store sets itself.
    let baseMetadata: [String: String]
    /// The application's metadata entries (rows of `_pk_metadata`).
    let userMetadata: Mutex<[String: String]>
    /// Held through each `setMetadata` (see there).
    let metadataWrites = Mutex<Void>(())

    let pool: ConnectionPool
    let schema: String
    let layouts: [TableLayout]
    /// The per-row statements of each table, by entity index.
    let statements: [TableStatements]
    let support: StoreCommitSupport
    /// The channel commits notify on (one per schema).
    let channel: String
    /// Identifies this store object in the notifications it sends, so that it skips its own.
    let origin = UUID().uuidString
    let handlers = Mutex<[@Sendable (StoreRemoteChanges) -> Bool]>([])
    private let listener = Mutex<RemoteChangeListener?>(nil)

    /// Registers the store type, so that descriptions with type ``NSPostgreSQLStoreType``
    /// open a PostgreSQL store. Safe to call more than once.
    public static func register() {
        NSPersistentStoreCoordinator.registerStoreType(
            NSPostgreSQLStoreType,
            factory: { url, options, model in try PostgreSQLStore(url: url, options: options, model: model) },
            migrator: { request in try SchemaMigration.migrate(request) })
    }

    /// The libpq connection string for `url` or `options`, and the server named for messages
    /// (without the password).
    ///
    /// - Throws: ``PostgreSQLStoreError`` `.invalidURL` when neither names a server.
    static func connectionInfo(url: URL?, options: [String: String]) throws(PostgreSQLStoreError) -> (conninfo: String, target: String) {
        // The description's timeout (``PersistenceKit/NSPersistentStoreTimeoutOption``) as
        // libpq's `connect_timeout`, whole seconds, unless the connection names one itself.
        let timeout = options[NSPersistentStoreTimeoutOption].flatMap(Double.init).map { max(1, Int($0.rounded(.up))) }
        if let keywords = options[connectionStringOptionKey] {
            guard let timeout, !keywords.contains("connect_timeout") else { return (keywords, redacted(keywords)) }
            return (keywords + " connect_timeout=\(timeout)", redacted(keywords))
        }
        guard let url, url.scheme == "postgresql" || url.scheme == "postgres" else {
            throw PostgreSQLStoreError(
                .invalidURL, target: url?.absoluteString ?? "no URL",
                "a PostgreSQL store needs a postgresql:// URL (postgresql://user@host:5432/database) or a libpq "
                    + "keyword string under the option \(connectionStringOptionKey).")
        }
        var shown = URLComponents(url: url, resolvingAgainstBaseURL: false)
        shown?.password = nil
        var conninfo = url.absoluteString
        if let timeout, !conninfo.contains("connect_timeout") {
            conninfo += (conninfo.contains("?") ? "&" : "?") + "connect_timeout=\(timeout)"
        }
        return (conninfo, shown?.string ?? url.host ?? "PostgreSQL")
    }

    /// Opens the store at `url` (a `postgresql://` or `postgres://` URL), creating its
    /// tables from `model` when the database (schema) has none.
    ///
    /// - Throws: ``PostgreSQLStoreError`` (`.invalidURL`, `.connectionFailed`, `.query`,
    ///   `.unsupportedModel`, `.unsupportedLayout` for a schema of another table layout); a
    ///   ``PersistenceKit/CoreDataError`` with code
    ///   `.persistentStoreIncompatibleVersionHash` (134100) when the store was made with
    ///   another model, as a file store's mismatch (a coordinator then migrates the schema
    ///   when the description allows it; see Docs/Migration.md).
    public init(url: URL?, options: [String: String] = [:], model: NSManagedObjectModel) throws {
        let (conninfo, target) = try Self.connectionInfo(url: url, options: options)
        self.url = url
        self.isReadOnly = ["1", "true", "yes"].contains(options[NSReadOnlyPersistentStoreOption]?.lowercased() ?? "")
        let schema = options[Self.schemaOptionKey] ?? "public"
        self.schema = schema
        self.support = StoreCommitSupport(model: model)
        self.layouts = try TableLayout.all(of: model, schema: schema)
        self.statements = layouts.map(TableStatements.init)
        self.channel = Self.channel(for: schema)
        let capacity = options[Self.poolSizeOptionKey].flatMap(Int.init) ?? 4
        self.pool = ConnectionPool(conninfo: conninfo, target: target, capacity: capacity)
        let opened = try SchemaBuilder(layouts: layouts, schema: schema, support: support, target: target)
            .open(in: pool, creating: !isReadOnly)
        self.identifier = opened.identifier
        self.userMetadata = Mutex(opened.entries)
        self.baseMetadata = [
            NSStoreTypeKey: NSPostgreSQLStoreType,
            NSStoreUUIDKey: opened.identifier,
            PersistenceKitModelLayoutHashKey: opened.layoutHash,
            "ModelVersionHash": model.versionHashString,
            Self.layoutVersionKey: opened.layoutVersion,
        ]
        // A hot standby takes no LISTEN; a read-only store there listens for nothing.
        if options[Self.listensOptionKey] != "false", try !(isReadOnly && isInRecovery()) {
            let listener = try RemoteChangeListener(store: self)
            self.listener.withLock { $0 = listener }
        }
    }

    /// Throws for a write to a store opened read-only.
    func refuseIfReadOnly() throws(PostgreSQLStoreError) {
        guard isReadOnly else { return }
        throw PostgreSQLStoreError(
            .query, target: pool.target, "the store was opened read-only (NSReadOnlyPersistentStoreOption); nothing was written.")
    }

    /// Whether the server is a hot standby replaying another's log (`pg_is_in_recovery()`).
    private func isInRecovery() throws -> Bool {
        try pool.withConnection { c in try c.execute("SELECT pg_is_in_recovery()").text(0, 0) == "t" }
    }

    deinit {
        listener.withLock { $0?.stop() }
        pool.close()
    }

    /// Stops listening and closes the store's connections. Later calls fail with
    /// ``PostgreSQLStoreError/Kind/closed``.
    public func close() {
        let l = listener.withLock { l in
            defer { l = nil }
            return l
        }
        l?.stop()
        pool.close()
    }

    /// The layout of `entity`'s table.
    func layout(_ entity: Int32) throws(PostgreSQLStoreError) -> TableLayout {
        guard entity >= 0, Int(entity) < layouts.count else {
            throw PostgreSQLStoreError(.query, target: pool.target, "entity index \(entity) is not in the store's model.")
        }
        return layouts[Int(entity)]
    }

    /// The channel of `schema`'s notifications: under PostgreSQL's 63-byte limit for names,
    /// whatever the schema's length (a longer name would be cut short by `LISTEN` but refused
    /// by `pg_notify`), and distinct per schema (a hash of the whole name ends it).
    static func channel(for schema: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in schema.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        let head = String(decoding: schema.utf8.prefix(32), as: UTF8.self)
        return "pk_" + head + "_" + String(h, radix: 16)
    }

    /// A keyword string with its password left out, for messages.
    private static func redacted(_ keywords: String) -> String {
        keywords.split(separator: " ").filter { !$0.hasPrefix("password=") }.joined(separator: " ")
    }

    /// See ``RemoteChangeReporting``.
    public func addRemoteChangeHandler(_ handler: @escaping @Sendable (StoreRemoteChanges) -> Bool) {
        handlers.withLock { $0.append(handler) }
    }

    /// Hands `changes` to the registered handlers, dropping those that decline.
    func deliver(_ changes: StoreRemoteChanges) {
        let current = handlers.withLock { $0 }
        var keep: [Bool] = []
        for h in current { keep.append(h(changes)) }
        guard keep.contains(false) else { return }
        handlers.withLock { list in
            // Handlers registered meanwhile sit past `current` and are kept.
            var kept: [@Sendable (StoreRemoteChanges) -> Bool] = []
            for (i, h) in list.enumerated() where i >= keep.count || keep[i] { kept.append(h) }
            list = kept
        }
    }
}

extension PostgreSQLStore {
    /// See ``PersistentStore``. Replaces the application's rows of `_pk_metadata` with the
    /// entries of `metadata` whose keys the store does not keep itself, in one transaction.
    ///
    /// - Throws: ``PostgreSQLStoreError`` (`.query` for a store opened read-only, nothing
    ///   changed; the server's errors, the rows as they were).
    public func setMetadata(_ metadata: [String: String]) throws {
        try refuseIfReadOnly()
        let entries = metadata.filter { baseMetadata[$0.key] == nil && !SchemaBuilder.ownKeys.contains($0.key) }
        let table = SchemaBuilder.metadataTable(schema)
        // Under the lock for the whole write: two calls at once leave the table and this
        // process's copy with the same call's entries.
        try metadataWrites.withLock { _ in try writeMetadata(entries, table: table) }
    }

    private func writeMetadata(_ entries: [String: String], table: String) throws {
        try pool.withConnection { c in
            try c.execute("BEGIN")
            do {
                let own = "{" + SchemaBuilder.ownKeys.sorted().map { "\"\($0)\"" }.joined(separator: ",") + "}"
                try c.execute("DELETE FROM \(table) WHERE key <> ALL($1::text[])", [.text(own)], prepare: false)
                for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
                    try c.execute("INSERT INTO \(table) (key, value) VALUES ($1, $2)", [.text(key), .text(value)], prepare: false)
                }
                try c.execute("COMMIT")
            } catch {
                if c.isHealthy { _ = try? c.execute("ROLLBACK") }
                throw error
            }
        }
        userMetadata.withLock { $0 = entries }
    }
}
