import Foundation
import PersistenceKit

/// The payloads of the `NOTIFY`s a commit sends: the IDs of the rows it inserted, updated
/// and deleted, split into parts under PostgreSQL's 8,000-byte payload limit.
///
/// A part reads `<origin> <txid> <part> <of> <changes>`, where changes are
/// `;`-separated runs `I<entity>:<pk>,<pk>…` (inserted), `U…` (updated), `D…` (deleted).
/// The parts of one commit are delivered together, in order, when it commits.
enum ChangeNotification {
    /// The most bytes of changes per part.
    static let partSize = 7_000

    /// The payloads for a commit of `t` by the store object `origin`.
    static func payloads(_ t: StoreTransaction, origin: String, txid: String) -> [String] {
        var runs: [String] = []
        func add(_ tag: Character, _ ids: [StoreRowID]) {
            for (entity, group) in Dictionary(grouping: ids, by: \.entity).sorted(by: { $0.key < $1.key }) {
                // A run is cut where a part would overflow.
                var run = "\(tag)\(entity):"
                var count = 0
                for id in group {
                    let key = String(id.primaryKey)
                    if run.utf8.count + key.utf8.count + 1 > partSize / 2 {
                        runs.append(run)
                        run = "\(tag)\(entity):"
                        count = 0
                    }
                    run += count == 0 ? key : "," + key
                    count += 1
                }
                if count > 0 { runs.append(run) }
            }
        }
        add("I", t.inserts.map(\.id))
        add("U", t.updates.map(\.id))
        add("D", t.deletes.map(\.id))
        var parts: [String] = []
        var current = ""
        for run in runs {
            if !current.isEmpty && current.utf8.count + run.utf8.count + 1 > partSize {
                parts.append(current)
                current = ""
            }
            current += current.isEmpty ? run : ";" + run
        }
        if !current.isEmpty || parts.isEmpty { parts.append(current) }
        return parts.enumerated().map { "\(origin) \(txid) \($0.offset + 1) \(parts.count) \($0.element)" }
    }

    /// One part as received.
    struct Part {
        var origin: Substring
        var txid: Substring
        var index: Int
        var count: Int
        var changes: Substring
    }

    /// Reads a payload; nil when it is not one of the store's.
    static func parse(_ payload: String) -> Part? {
        let fields = payload.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, let index = Int(fields[2]), let count = Int(fields[3]) else { return nil }
        return Part(origin: fields[0], txid: fields[1], index: index, count: count, changes: fields[4])
    }

    /// Adds the row IDs in `changes` to `into`.
    static func collect(_ changes: Substring, into result: inout StoreRemoteChanges) {
        for run in changes.split(separator: ";") {
            guard let tag = run.first, let colon = run.firstIndex(of: ":"),
                let entity = Int32(run[run.index(after: run.startIndex)..<colon])
            else { continue }
            let ids = run[run.index(after: colon)...].split(separator: ",").compactMap { Int64($0) }
                .map { StoreRowID(entity: entity, primaryKey: $0) }
            switch tag {
            case "I": result.inserted += ids
            case "U": result.updated += ids
            case "D": result.deleted += ids
            default: break
            }
        }
    }
}

extension PostgreSQLStore {
    /// The statement sending the commit's changed row IDs on the store's channel, inside the
    /// transaction.
    func notifyStatement(_ t: StoreTransaction, txid: String) -> SQLStatement {
        let payloads = ChangeNotification.payloads(t, origin: origin, txid: txid)
        // One statement for all parts: each is an element of a text array (payloads hold
        // no quotes or backslashes, so quoting each element is enough).
        let array = "{" + payloads.map { "\"" + $0 + "\"" }.joined(separator: ",") + "}"
        return SQLStatement(
            sql: "SELECT pg_notify($1, p) FROM unnest($2::text[]) WITH ORDINALITY AS u(p, n) ORDER BY n",
            parameters: [.text(channel), .text(array)])
    }
}
