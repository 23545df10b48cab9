import Foundation

/// A point in persistent history: for each store, the number of the last transaction
/// before the point. Get one from a transaction (``NSPersistentHistoryTransaction/token``),
/// from the coordinator (`currentPersistentHistoryToken(fromStores:)`) or from a remote
/// change notification; pass it to `NSPersistentHistoryChangeRequest.fetchHistory(after:)`
/// to get what changed since.
///
/// Tokens stay valid across reopening the store and compaction (they are transaction
/// numbers the store never reuses), and are `Codable`, so they can be kept between runs (as
/// Core Data's, which are `NSSecureCoding`). A token older than history deleted since is
/// refused with `.persistentHistoryTokenExpired`.
///
/// # Thread safety
/// Immutable; `Sendable`.
public final class NSPersistentHistoryToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The transaction number per store identifier.
    public let storeTokens: [String: UInt64]

    init(storeTokens: [String: UInt64]) {
        self.storeTokens = storeTokens
    }

    /// Whether two tokens name the same point.
    public static func == (lhs: NSPersistentHistoryToken, rhs: NSPersistentHistoryToken) -> Bool {
        lhs.storeTokens == rhs.storeTokens
    }

    /// Hashes the point.
    public func hash(into hasher: inout Hasher) { hasher.combine(storeTokens) }

    /// Whether this token is at or after `other` in every store `other` names: the history
    /// after this token is part of the history after `other`.
    public func isAtOrAfter(_ other: NSPersistentHistoryToken) -> Bool {
        other.storeTokens.allSatisfy { store, t in (storeTokens[store] ?? 0) >= t }
    }

    /// A readable summary for logs and messages.
    public var description: String {
        "NSPersistentHistoryToken(" + storeTokens.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
    }
}
