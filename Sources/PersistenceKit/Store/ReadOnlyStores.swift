import Foundation

/// The store option that opens a store read-only (`"true"`/`"1"`), as Core Data's:
/// ``NSPersistentStoreDescription/isReadOnly`` sets it. Fetches work; a save, a batch
/// request, ``NSManagedObjectContext/obtainPermanentIDs(for:)`` and history deletion
/// that would write to the store fail with ``CoreDataError`` `.persistentStoreSave` before
/// anything is written, and the store is never migrated (a store of another model is
/// reported as without automatic migration).
public let NSReadOnlyPersistentStoreOption = "NSReadOnlyPersistentStoreOption"

/// The store option giving how long a file store's open waits for another process to close
/// it, in seconds (`"5"`, `"0.5"`), as Core Data's: ``NSPersistentStoreDescription/timeout``
/// sets it. Without it the open fails at once when the store is in use.
public let NSPersistentStoreTimeoutOption = "NSPersistentStoreTimeoutOption"

extension NSPersistentStoreCoordinator {
    /// Whether `options` open the store read-only.
    static func opensReadOnly(_ options: [String: String]?) -> Bool { isOn(NSReadOnlyPersistentStoreOption, in: options) }

    /// Throws the error of a write to a read-only store when `store` is one (added with
    /// ``NSReadOnlyPersistentStoreOption``, or read-only by its own account), naming
    /// `operation`. Nothing has been written when it throws.
    func refuseWrites(to store: any PersistentStore, _ operation: String) throws(CoreDataError) {
        guard store.isReadOnly || isAddedReadOnly(store) else { return }
        // A file's path, or the store's identifier: a database URL may hold a password.
        let named = store.url.flatMap { $0.isFileURL ? "at \($0.path)" : nil } ?? store.identifier
        throw CoreDataError(
            .persistentStoreSave,
            "\(operation) failed: the store \(named) "
                + "was added read-only (NSReadOnlyPersistentStoreOption, or the description's isReadOnly), so nothing was written "
                + "and the context keeps its changes; add the store without that option to change it.")
    }
}
