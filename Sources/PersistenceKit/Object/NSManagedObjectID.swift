import Foundation
import Synchronization

/// The identity of a managed object, valid across contexts of one coordinator.
///
/// Objects inserted in a context get a temporary ID; saving (or
/// `NSManagedObjectContext.obtainPermanentIDs(for:)`) gives them a permanent one, which
/// names the store and the row. IDs are immutable, `Sendable` and `Hashable`: they are how
/// objects travel between contexts and threads.
public final class NSManagedObjectID: Hashable, Sendable, CustomStringConvertible, NSFetchRequestResult {
    enum Key: Hashable, Sendable {
        case temporary(UInt64)
        case permanent(StoreRowID)
    }

    /// The entity of the object.
    public let entity: NSEntityDescription
    /// Everything but the entity: the ID's key, store and hash.
    let objectKey: ObjectKey

    var key: Key { objectKey.key }
    /// The identifier of the store holding the object (`nil` for temporary IDs).
    public var persistentStoreIdentifier: String? { objectKey.store }
    /// Computed once: IDs are dictionary keys on every hot path (uniquing, change sets).
    var hashCode: Int { objectKey.hashCode }

    /// Distinguishes this process's temporary IDs in URIs.
    private static let processToken = UUID().uuidString

    /// The ID of an object of `entity` with `objectKey` (made for that entity).
    init(entity: NSEntityDescription, objectKey: ObjectKey) {
        self.entity = entity
        self.objectKey = objectKey
    }

    convenience init(temporaryFor entity: NSEntityDescription) {
        self.init(entity: entity, objectKey: ObjectKey(temporaryFor: entity))
    }

    convenience init(entity: NSEntityDescription, row: StoreRowID, store: String) {
        self.init(entity: entity, objectKey: ObjectKey(entity: entity, row: row, store: store))
    }

    /// Whether the ID is temporary (the object has not been saved nor given a permanent ID).
    public var isTemporaryID: Bool {
        if case .temporary = key { return true }
        return false
    }

    /// The store row, for permanent IDs.
    var rowID: StoreRowID? { objectKey.rowID }

    /// A URL that identifies the object:
    /// `x-coredata://<store identifier>/<Entity>/p<primary key>` for permanent IDs and
    /// `x-coredata:///<Entity>/t<token><n>` for temporary ones. Turn it back into an ID with
    /// `NSPersistentStoreCoordinator.managedObjectID(forURIRepresentation:)`.
    public func uriRepresentation() -> URL {
        let text: String
        switch key {
        case let .permanent(row):
            text = "x-coredata://\(persistentStoreIdentifier ?? "")/\(entity.name)/p\(row.primaryKey)"
        case let .temporary(n):
            text = "x-coredata:///\(entity.name)/t\(Self.processToken)\(n)"
        }
        // The entity name is validated to be non-empty; percent-encode anything unusual.
        let encoded = text.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed) ?? text
        return URL(string: encoded) ?? URL(fileURLWithPath: "/invalid-object-id")
    }

    public static func == (lhs: NSManagedObjectID, rhs: NSManagedObjectID) -> Bool {
        lhs === rhs || (lhs.objectKey == rhs.objectKey && lhs.entity === rhs.entity)
    }

    /// Hashes the ID (entity and key).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashCode)
    }

    /// The hash that `Set` and `Dictionary` use: the precomputed `hashCode`, mixed with the
    /// table's seed without SipHash (see `identityHash`). Equal IDs have equal `hashCode`s.
    public func _rawHashValue(seed: Int) -> Int {
        identityHash(UInt(bitPattern: hashCode), seed: seed)
    }

    /// A readable summary for logs and messages.
    public var description: String {
        "<\(entity.name) \(uriRepresentation().absoluteString)>"
    }
}

/// An object ID's identity without the ID object: key, store and hash (the entity is kept
/// beside it, by the object or the ID).
///
/// A managed object holds its `ObjectKey` and makes its `NSManagedObjectID` only when asked:
/// the context registers, finds and re-keys objects by key, so a fetched row or an inserted
/// object costs no ID allocation unless someone reads `objectID` (measured: making, and for
/// inserts later freeing, an ID object per row was a tenth of a filtered fetch and a twentieth
/// of inserting 100,000 objects).
struct ObjectKey: Equatable, Sendable {
    let key: NSManagedObjectID.Key
    /// The store identifier, for permanent keys.
    let store: String?
    /// Mixes the key and the entity; equal keys of one entity have equal hash codes.
    let hashCode: Int

    private static let temporaryCounter = Atomic<UInt64>(1)

    /// A new temporary key, unique in the process.
    init(temporaryFor entity: NSEntityDescription) {
        let n = Self.temporaryCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        key = .temporary(n)
        store = nil
        hashCode = Self.hash(key: key, entity: entity)
    }

    /// The key of row `row` of `store`.
    init(entity: NSEntityDescription, row: StoreRowID, store: String) {
        key = .permanent(row)
        self.store = store
        hashCode = Self.hash(key: key, entity: entity)
    }

    /// The store row, for permanent keys.
    var rowID: StoreRowID? {
        if case let .permanent(r) = key { return r }
        return nil
    }

    static func == (lhs: ObjectKey, rhs: ObjectKey) -> Bool {
        lhs.hashCode == rhs.hashCode && lhs.key == rhs.key && lhs.store == rhs.store
    }

    /// A cheap multiplicative mix (no SipHash): IDs are not attacker-chosen keys, and this
    /// runs for every object a fetch or insert creates.
    private static func hash(key: NSManagedObjectID.Key, entity: NSEntityDescription) -> Int {
        let e = UInt64(UInt(bitPattern: ObjectIdentifier(entity)))
        let k: UInt64
        switch key {
        case let .temporary(n): k = n ^ 0x5555_5555_5555_5555
        case let .permanent(row): k = UInt64(bitPattern: row.primaryKey) &+ UInt64(UInt32(bitPattern: row.entity)) << 48
        }
        var x = (k ^ (e &* 0x9E37_79B9_7F4A_7C15)) &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 31
        return Int(truncatingIfNeeded: x)
    }
}
