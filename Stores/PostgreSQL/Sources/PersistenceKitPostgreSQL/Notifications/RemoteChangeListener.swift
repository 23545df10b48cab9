import Foundation
import PersistenceKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Listens on a connection of its own for the store's channel and hands other store
/// objects' commits (other processes, other coordinators) to the store's handlers.
///
/// A thread waits on the connection's socket (a quarter second at a time, to notice
/// ``stop()``), reads notifications, puts each commit's parts together and delivers it.
/// When the connection drops it reconnects and listens again; commits made while it was
/// down are not delivered (contexts see them on their next fetch or refresh).
///
/// # Thread safety
/// `stopped` is atomic; the connection belongs to the listening thread once it started.
final class RemoteChangeListener: Sendable {
    /// Set once to stop the thread.
    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }
    private let stopped = Flag()

    init(store: PostgreSQLStore) throws {
        let connection = try Self.listen(store.pool, channel: store.channel)
        let stopped = self.stopped
        let pool = store.pool
        let channel = store.channel
        let origin = store.origin
        let thread = Thread { [weak store] in
            var connection: PostgreSQLConnection? = connection
            var pending: [String: StoreRemoteChanges] = [:]
            while !stopped.value.load(ordering: .acquiring) {
                guard let c = connection, c.isHealthy else {
                    connection = try? Self.listen(pool, channel: channel)
                    if connection == nil { Thread.sleep(forTimeInterval: 0.25) }  // the server is down: try again shortly
                    continue
                }
                var fds = pollfd(fd: c.socket, events: Int16(POLLIN), revents: 0)
                guard poll(&fds, 1, 250) > 0 else { continue }
                do { try c.consumeInput() } catch {
                    connection = nil
                    continue
                }
                while let n = c.nextNotification() {
                    guard let part = ChangeNotification.parse(n.payload), part.origin != origin else { continue }
                    let key = "\(part.origin) \(part.txid)"
                    var changes = pending[key] ?? StoreRemoteChanges()
                    ChangeNotification.collect(part.changes, into: &changes)
                    if part.index < part.count {
                        pending[key] = changes
                        continue
                    }
                    pending[key] = nil
                    guard let store else { return }
                    store.deliver(changes)
                }
            }
        }
        thread.name = "PersistenceKit PostgreSQL listener"
        thread.start()
    }

    private static func listen(_ pool: ConnectionPool, channel: String) throws -> PostgreSQLConnection {
        let c = try pool.makeConnection()
        try c.execute("LISTEN \(quote(channel))")
        return c
    }

    /// Stops the thread (within a quarter second) and closes its connection.
    func stop() { stopped.value.store(true, ordering: .releasing) }
}
