import Foundation

// A store's metadata: what Core Data code reads before it loads a store, to decide whether
// the model still fits it or loading will migrate it.

/// The metadata key of a store's type (`NSFileStoreType`, `NSInMemoryStoreType`, …).
public let NSStoreTypeKey = "NSStoreType"
/// The metadata key of a store's identifier, a UUID string made when the store was created.
public let NSStoreUUIDKey = "NSStoreUUID"
/// The metadata key of the layout hash (hex) of the model a store was created with: the
/// hash a file store checks on open (see `Docs/Differences.md`, "Model version hash").
/// A store file's header keeps this one hash; the per-entity hashes are
/// ``NSStoreModelVersionHashesKey`` in an added store's metadata.
public let PersistenceKitModelLayoutHashKey = "ModelLayoutHash"
/// The metadata key of the entity version hashes (`[String: Data]`, entity name →
/// ``NSEntityDescription/versionHash``) of the model a store holds data of, as Core Data's.
/// ``NSPersistentStoreCoordinator/metadata(for:)`` gives it for an added store, and
/// ``NSPersistentStoreCoordinator/metadataForPersistentStore(ofType:at:options:)`` for a
/// closed file of format 5 or a file migrated without a rewrite (older files have only
/// ``PersistenceKitModelLayoutHashKey``).
public let NSStoreModelVersionHashesKey = "NSStoreModelVersionHashes"
/// The metadata key of the version identifiers (`[String]`, ascending) of the model a store
/// holds data of: the model's ``NSManagedObjectModel/versionIdentifiers`` that are strings.
/// Present where ``NSStoreModelVersionHashesKey`` is.
public let NSStoreModelVersionIdentifiersKey = "NSStoreModelVersionIdentifiers"

extension NSPersistentStoreCoordinator {
    /// The metadata of the store of type `storeType` at `url`, read without adding the
    /// store, as Core Data's class method of this name. For a file store it comes from the
    /// file's header (``FileStore/metadata(at:)``), and, when the file keeps them (format 5,
    /// or migrated without a rewrite), ``NSStoreModelVersionHashesKey`` and
    /// ``NSStoreModelVersionIdentifiersKey`` of the model its rows are of.
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
        var metadata: [String: Any] = try FileStore.metadata(at: url)
        if let model = FileStore.modelSection(at: url) {
            metadata[NSStoreModelVersionHashesKey] = model.versionHashes
            metadata[NSStoreModelVersionIdentifiersKey] = model.versionIdentifiers
        }
        return metadata
    }

    /// The metadata of a store added to this coordinator: its ``PersistentStore/metadata``
    /// and ``NSStoreModelVersionHashesKey``, the entity version hashes of this coordinator's
    /// model, which the store's data is in.
    public func metadata(for store: any PersistentStore) -> [String: Any] {
        var metadata: [String: Any] = store.metadata
        metadata[NSStoreModelVersionHashesKey] = managedObjectModel.entityVersionHashesByName
        return metadata
    }

    /// Replaces the metadata entries of `store` that the application keeps (`nil`: none),
    /// as Core Data's: pass back what ``metadata(for:)`` returned with entries added,
    /// changed or removed. The store's own keys (``NSStoreUUIDKey``, the model hashes, …)
    /// keep their values whatever `metadata` holds for them. Written before it returns (a
    /// file store: beside the store file, see Docs/StoreFormat.md), not at the next save.
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreOperation` for a value that is not a
    ///   `String` (stores keep metadata as text) or a store that keeps no metadata of the
    ///   application's; `.persistentStoreSave` for a store added read-only; the store's error
    ///   (a file store's ``FileStoreError``) as `underlying` of `.persistentStoreSave` when it
    ///   cannot write.
    public func setMetadata(_ metadata: [String: Any]?, for store: any PersistentStore) throws {
        try refuseWrites(to: store, "setMetadata(_:for:)")
        let entries = try Self.textEntries(metadata)
        do {
            try store.setMetadata(entries)
        } catch let error as CoreDataError {
            throw error
        } catch {
            throw CoreDataError(
                .persistentStoreSave, "setting the metadata of store \(store.identifier) failed: \(error); it keeps the metadata it had.",
                underlying: error)
        }
    }

    /// The entries of `metadata` a store keeps: all but the model's version hashes and
    /// identifiers (which no store holds; the store leaves out its own keys itself), as text.
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreOperation` for a value that is not a `String`.
    private static func textEntries(_ metadata: [String: Any]?) throws -> [String: String] {
        var entries: [String: String] = [:]
        for (key, value) in metadata ?? [:] where key != NSStoreModelVersionHashesKey && key != NSStoreModelVersionIdentifiersKey {
            guard let text = value as? String else {
                throw CoreDataError(
                    .persistentStoreOperation,
                    "metadata entry '\(key)' holds a \(type(of: value)); stores here keep metadata as text: store it as a String.")
            }
            entries[key] = text
        }
        return entries
    }

    /// Sets the application's metadata entries of the file store at `url` without loading
    /// it (see ``setMetadata(_:for:)``): through the store when it is open in this process,
    /// otherwise under its lock. `options` is taken for Core Data's signature; no option
    /// changes what it does.
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreInvalidType` for a type other than
    ///   ``NSFileStoreType``, `.persistentStoreOperation` for a value that is not a `String`,
    ///   `.persistentStoreSave` with the ``FileStoreError`` as `underlying` (locked by another
    ///   process, no store at `url`, damaged header, I/O).
    public static func setMetadata(
        _ metadata: [String: Any]?, forPersistentStoreOfType storeType: String, at url: URL, options: [String: String]? = nil
    ) throws {
        guard storeType == NSFileStoreType else {
            throw CoreDataError(
                .persistentStoreInvalidType,
                "cannot set the metadata of a '\(storeType)' store at \(url.path) without loading it; load it and use "
                    + "setMetadata(_:for:).")
        }
        let entries = try textEntries(metadata)
        do {
            try FileStore.setMetadata(entries, at: url)
        } catch {
            throw CoreDataError(
                .persistentStoreSave, "setting the metadata of the store at \(url.path) failed: \(error.message)", underlying: error)
        }
    }
}

extension NSManagedObjectModel {
    /// Whether a store with `metadata` can be opened with this model without migrating:
    /// every entity's version hash (``NSStoreModelVersionHashesKey``) is this model's, and
    /// the layout hash (``PersistenceKitModelLayoutHashKey``, which also covers the order of
    /// properties) is this model's when the metadata has it; metadata with only a layout hash
    /// (a file of format 4 or older) is compared by that. From
    /// ``NSPersistentStoreCoordinator/metadataForPersistentStore(ofType:at:options:)`` or
    /// ``NSPersistentStoreCoordinator/metadata(for:)``. As in Core Data, check this before
    /// loading a store to know whether loading will migrate it.
    ///
    /// `configuration` must be `nil` or `"Default"` (there are no other configurations);
    /// any other name gives `false`.
    public func isConfiguration(withName configuration: String?, compatibleWithStoreMetadata metadata: [String: Any]) -> Bool {
        guard configuration == nil || configuration == "Default" else { return false }
        // Per-entity hashes where the metadata has them (an added store's, or Core Data's
        // form); else the layout hash a file's header keeps, which also covers property order.
        let layout = metadata[PersistenceKitModelLayoutHashKey] as? String
        if let hashes = metadata[NSStoreModelVersionHashesKey] as? [String: Data] {
            return hashes == entityVersionHashesByName && (layout == nil || layout == layoutHashString)
        }
        guard let layout else { return false }
        return layout == layoutHashString
    }
}
