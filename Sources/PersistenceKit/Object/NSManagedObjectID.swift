import Foundation

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
    /// Everything but the entity: the ID's key and store (see `ObjectKey`).
    let objectKey: ObjectKey
    /// The hash of the entity and key: two multiplications, computed when asked. (It was a
    /// stored field, which made every ID a 64-byte heap block instead of 48; a save of
    /// 100,000 inserts makes an ID per object.)
    var hashCode: Int { objectKey.hashCode(for: entity) }

    var key: Key { objectKey.key }
    /// The identifier of the store holding the object (`nil` for temporary IDs).
    public var persistentStoreIdentifier: String? { objectKey.storeIdentifier }

    /// Distinguishes this process's temporary IDs in URIs.
    private static let processToken = UUID().uuidString

    /// The ID of an object of `entity` with `objectKey`.
    init(entity: NSEntityDescription, objectKey: ObjectKey) {
        self.entity = entity
        self.objectKey = objectKey
    }

    convenience init(entity: NSEntityDescription, row: StoreRowID, store: String) {
        self.init(entity: entity, objectKey: ObjectKey(row: row, store: store))
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

    /// Whether both IDs name the same object: the same entity and key (the same store row,
    /// or the same temporary number), whichever ID objects carry them.
    public static func == (lhs: NSManagedObjectID, rhs: NSManagedObjectID) -> Bool {
        lhs === rhs || (lhs.objectKey == rhs.objectKey && lhs.entity === rhs.entity)
    }

    /// Hashes the ID (entity and key).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashCode)
    }

    /// The hash that `Set` and `Dictionary` use: `hashCode`, mixed with the
    /// table's seed without SipHash (see `identityHash`). Equal IDs have equal `hashCode`s.
    public func _rawHashValue(seed: Int) -> Int {
        identityHash(UInt(bitPattern: hashCode), seed: seed)
    }

    /// A readable summary for logs and messages.
    public var description: String {
        "<\(entity.name) \(uriRepresentation().absoluteString)>"
    }
}
