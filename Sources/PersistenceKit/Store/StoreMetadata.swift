import Foundation

// A store's metadata: what Core Data code reads before it loads a store, to decide whether
// the model still fits it (and, here, since there are no migrations yet, whether to
// destroy and rebuild it).

/// The metadata key of a store's type (`NSFileStoreType`, `NSInMemoryStoreType`, …).
public let NSStoreTypeKey = "NSStoreType"
/// The metadata key of a store's identifier, a UUID string made when the store was created.
public let NSStoreUUIDKey = "NSStoreUUID"
/// The metadata key of the layout hash (hex) of the model a store was created with: the
/// hash a file store checks on open (see `Docs/Differences.md`, "Model version hash").
/// Core Data's `NSStoreModelVersionHashesKey` (a hash per entity) has no counterpart.
public let PersistenceKitModelLayoutHashKey = "ModelLayoutHash"

extension NSPersistentStoreCoordinator {
    /// The metadata of the store of type `storeType` at `url`, read without adding the
    /// store, as Core Data's class method of this name. For a file store it comes from the
    /// file's header (``FileStore/metadata(at:)``).
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreInvalidType` for a type whose stores
    ///   have no file to read (in-memory, or an unknown type); ``FileStoreError`` when the
    ///   file is missing or not a store.
    public static func metadataForPersistentStore(
        ofType storeType: String, at url: URL, options: [String: String]? = nil
    ) throws -> [String: Any] {
        guard storeType == NSFileStoreType else {
            throw CoreDataError(
                .persistentStoreInvalidType,
                "cannot read the metadata of a '\(storeType)' store at \(url.path) without loading it; only "
                    + "\(NSFileStoreType) stores keep metadata in a file.")
        }
        return try FileStore.metadata(at: url)
    }

    /// The metadata of a store added to this coordinator (its ``PersistentStore/metadata``).
    public func metadata(for store: any PersistentStore) -> [String: Any] {
        store.metadata
    }
}

extension NSManagedObjectModel {
    /// Whether a store with `metadata` (from
    /// ``NSPersistentStoreCoordinator/metadataForPersistentStore(ofType:at:options:)``) can
    /// be opened with this model: it was created with a model of the same layout. As in
    /// Core Data, check this before loading a store to decide whether it needs migrating —
    /// here, since there are no migrations yet, whether to destroy and rebuild it.
    ///
    /// `configuration` must be `nil` or `"Default"` (there are no other configurations);
    /// any other name gives `false`.
    public func isConfiguration(withName configuration: String?, compatibleWithStoreMetadata metadata: [String: Any]) -> Bool {
        guard configuration == nil || configuration == "Default" else { return false }
        guard let stored = metadata[PersistenceKitModelLayoutHashKey] as? String else { return false }
        return stored == layoutHashString
    }
}
