import Foundation

// Codable so that an ID can be captured by `#Predicate`, which requires Codable values:
// `#Predicate<Book> { $0.shelf?.objectID == shelfID }` is how Core Data's
// `NSPredicate(format: "shelf == %@", shelf)` is written here; without it a predicate
// cannot filter by a related object.
extension NSManagedObjectID: Codable {
    /// The `userInfo` key under which a decoder finds the coordinator that resolves IDs.
    public static let coordinatorUserInfoKey = CodingUserInfoKey(rawValue: "PersistenceKit.NSPersistentStoreCoordinator")!

    /// Encodes the ID as its URI (``uriRepresentation()``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation())
    }

    /// Decodes an ID from its URI, resolved by the coordinator the decoder's `userInfo` holds
    /// under ``coordinatorUserInfoKey`` (an ID only means something to a coordinator).
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the decoder has no coordinator, or the
    ///   URI does not name an object ID of its stores (temporary IDs never do).
    public convenience init(from decoder: any Decoder) throws {
        let uri = try decoder.singleValueContainer().decode(URL.self)
        guard let coordinator = decoder.userInfo[Self.coordinatorUserInfoKey] as? NSPersistentStoreCoordinator else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "decoding the object ID \(uri) needs the coordinator that resolves it: put it in the "
                        + "decoder's userInfo under NSManagedObjectID.coordinatorUserInfoKey."))
        }
        guard let id = coordinator.managedObjectID(forURIRepresentation: uri) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "\(uri) does not name an object ID of this coordinator's stores (a temporary ID "
                        + "never does)."))
        }
        self.init(entity: id.entity, objectKey: id.objectKey)
    }
}
