import Foundation

/// A version of the store a context can read from (Core Data's class of this name): pin a
/// context to one with `setQueryGenerationFrom(_:)` and its fetches and faults see the
/// store as it was then, whatever other contexts save meanwhile, until the context saves,
/// merges, refreshes all objects, resets or unpins.
///
/// ``current`` asks for the store as it is at the moment of pinning; a pinned context's
/// `queryGenerationToken` names its generation, which another context of the same
/// coordinator can pin too.
///
/// # Thread safety
/// Immutable; `Sendable`. The generation it names stays readable as long as some token or
/// context holds it.
public final class NSQueryGenerationToken: Sendable, Hashable, CustomStringConvertible {
    /// The store's read-only snapshot, and the store it was made from; nil for ``current``.
    let snapshot: (any PersistentStore)?
    let storeIdentifier: String?

    init(snapshot: (any PersistentStore)?, storeIdentifier: String?) {
        self.snapshot = snapshot
        self.storeIdentifier = storeIdentifier
    }

    /// The store as it is when a context is pinned with it.
    public static let current = NSQueryGenerationToken(snapshot: nil, storeIdentifier: nil)

    /// Whether both name the same generation.
    public static func == (lhs: NSQueryGenerationToken, rhs: NSQueryGenerationToken) -> Bool { lhs === rhs }

    /// Hashes the generation's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// A readable summary for logs and messages.
    public var description: String {
        self === Self.current ? "NSQueryGenerationToken(current)" : "NSQueryGenerationToken(\(storeIdentifier ?? "?"), pinned)"
    }
}
