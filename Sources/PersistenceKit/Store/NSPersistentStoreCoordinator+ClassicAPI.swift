import Foundation

// The coordinator API of hand-built Core Data stacks (before NSPersistentContainer), so that
// code such as `psc.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil,
// at: url, options: nil)` compiles unchanged.

/// A store added to a coordinator: any ``PersistentStore`` (Core Data's store class name).
public typealias NSPersistentStore = any PersistentStore

extension NSPersistentStoreCoordinator {
    /// Creates and adds a store of a registered type, as Core Data's method of this name:
    /// ``addPersistentStore(type:at:options:)`` with Core Data's argument labels.
    ///
    /// `configuration` must be `nil` or `"Default"` (there are no other configurations).
    /// Option values are passed on as strings (`true` as `"true"`, numbers as their
    /// digits); the file store reads ``FileStore/durabilityOptionKey`` and ignores keys it
    /// does not know.
    ///
    /// - Throws: ``CoreDataError`` `.persistentStoreIncompatibleSchema` for another
    ///   configuration name; otherwise what ``addPersistentStore(type:at:options:)`` throws.
    @discardableResult
    public func addPersistentStore(
        ofType storeType: String, configurationName configuration: String?, at storeURL: URL?,
        options: [AnyHashable: Any]? = nil
    ) throws -> NSPersistentStore {
        try Self.checkConfiguration(configuration)
        var strings: [String: String] = [:]
        for (key, value) in options ?? [:] {
            guard let key = key.base as? String else { continue }
            switch value {
            case let s as String: strings[key] = s
            case let b as Bool: strings[key] = b ? "true" : "false"
            default: strings[key] = "\(value)"
            }
        }
        return try addPersistentStore(type: storeType, at: storeURL, options: strings)
    }

    /// Throws unless `configuration` names the only configuration there is: `nil` or
    /// `"Default"` (models have no others here).
    static func checkConfiguration(_ configuration: String?) throws(CoreDataError) {
        guard configuration == nil || configuration == "Default" else {
            throw CoreDataError(
                .persistentStoreIncompatibleSchema,
                "configuration '\(configuration ?? "")' does not exist: models have no configurations here; use nil "
                    + "(or \"Default\"), which holds every entity.")
        }
    }

    /// The added store whose URL is `url`, or `nil`. File URLs are compared with symbolic
    /// links resolved, as the file store identifies its file: a coordinator that opened a
    /// store already open in this process shares that store object, whose ``PersistentStore/url``
    /// is the first opener's spelling. Compared as spelled, a store added through a
    /// symlinked folder would not be found by the URL it was added with.
    public func persistentStore(for url: URL) -> NSPersistentStore? {
        func key(_ u: URL) -> URL { u.isFileURL ? URL(fileURLWithPath: FileStore.resolvedPath(of: u)) : u }
        let wanted = key(url)
        return persistentStores.first { $0.url.map(key) == wanted }
    }

    /// The URL of `store`; `/dev/null` for a store added without one (an in-memory store).
    public func url(for store: NSPersistentStore) -> URL {
        store.url ?? URL(fileURLWithPath: "/dev/null")
    }
}
