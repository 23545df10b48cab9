import Foundation
import Synchronization

/// A small pool of connections to one database, so that a read never waits behind another
/// thread's transaction (a view context's fetch beside a background import's save).
///
/// Connections are opened on demand up to ``capacity``; a borrower beyond that waits for one
/// to come back. A connection that went bad (the server restarted) is closed when it comes
/// back, and the next borrower opens a fresh one: the pool reconnects by itself.
///
/// # Thread safety
/// `idle`, `open` and `closed` are guarded by `condition`; a borrowed connection belongs to
/// its borrower alone.
final class ConnectionPool: @unchecked Sendable {
    // @unchecked Sendable: `idle`, `open` and `closed` are read and written only while
    // `condition` is locked; the other stored properties are `let`s of Sendable types.
    private let condition = NSCondition()
    private var idle: [PostgreSQLConnection] = []
    private var open = 0
    private var closed = false
    /// The most connections open at once.
    let capacity: Int
    private let conninfo: String
    let target: String

    init(conninfo: String, target: String, capacity: Int) {
        self.conninfo = conninfo
        self.target = target
        self.capacity = max(1, capacity)
    }

    /// A fresh connection outside the pool (the listener's own).
    func makeConnection() throws(PostgreSQLStoreError) -> PostgreSQLConnection {
        try PostgreSQLConnection(conninfo: conninfo, target: target)
    }

    /// Runs `body` with a connection of the pool, waiting for one when all are in use.
    func withConnection<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        let connection = try borrow()
        defer { giveBack(connection) }
        return try body(connection)
    }

    /// Runs a read, once more on a fresh connection when the one it got had dropped (an idle
    /// connection the server closed, or a server restart): a read changes nothing, so
    /// running it again is safe, and the caller sees the reconnection only as a delay.
    func read<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        do {
            return try withConnection(body)
        } catch let e as PostgreSQLStoreError where e.kind == .connectionLost {
            return try withConnection(body)
        }
    }

    private func borrow() throws(PostgreSQLStoreError) -> PostgreSQLConnection {
        condition.lock()
        while true {
            if closed {
                condition.unlock()
                throw PostgreSQLStoreError(.closed, target: target, "the store was closed; add it to a coordinator again.")
            }
            if let c = idle.popLast() {
                condition.unlock()
                return c
            }
            if open < capacity {
                open += 1
                condition.unlock()
                do {
                    return try makeConnection()
                } catch {
                    condition.lock()
                    open -= 1
                    condition.signal()
                    condition.unlock()
                    throw error
                }
            }
            condition.wait()
        }
    }

    private func giveBack(_ connection: PostgreSQLConnection) {
        condition.lock()
        var dropped: [PostgreSQLConnection] = []
        if connection.isHealthy && !closed {
            idle.append(connection)
        } else {
            open -= 1
            // A dropped connection most often means the server restarted: the idle ones are
            // dead too, and each would fail its next borrower's statement (a read retries
            // once only). Closed now, they are replaced by fresh connections when needed.
            dropped = idle
            idle = []
            open -= dropped.count
        }
        condition.signal()
        condition.unlock()
        withExtendedLifetime(dropped) {}
    }

    /// Closes the idle connections and refuses further borrowing.
    func close() {
        condition.lock()
        closed = true
        let dropped = idle
        idle = []
        open -= dropped.count
        condition.broadcast()
        condition.unlock()
        withExtendedLifetime(dropped) {}
    }
}
