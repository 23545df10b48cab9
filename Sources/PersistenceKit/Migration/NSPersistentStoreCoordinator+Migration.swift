import Foundation

/// The store option that lets a coordinator migrate a store written with another model
/// version (`"true"`/`"1"` or `"false"`/`"0"`), as Core Data's. Containers set it from
/// ``NSPersistentStoreDescription/shouldMigrateStoreAutomatically`` (on by default); a
/// coordinator given no such option does not migrate.
public let NSMigratePersistentStoresAutomaticallyOption = "NSMigratePersistentStoresAutomaticallyOption"
/// The store option that lets a migration infer its mapping (lightweight migration), as
/// Core Data's. Containers set it from
/// ``NSPersistentStoreDescription/shouldInferMappingModelAutomatically`` (on by default).
public let NSInferMappingModelAutomaticallyOption = "NSInferMappingModelAutomaticallyOption"

extension NSPersistentStoreCoordinator {
    /// Whether `options` turn `key` on.
    static func isOn(_ key: String, in options: [String: String]?) -> Bool { storeOptionIsOn(options?[key]) }

    /// Migrates the file store at `url` to this coordinator's model when `options` (or a
    /// staged migration manager) allow it. Returns whether it migrated.
    /// - Throws: ``CoreDataError`` `.migration` or `.migrationMissingSourceModel` with the
    ///   ``MigrationError`` as `underlying`; the store is then unchanged.
    func migrateFileStore(
        at url: URL, options: [String: String]?, staged: NSStagedMigrationManager?, durability: FileStore.Durability
    ) throws -> Bool {
        let automatic = Self.isOn(NSMigratePersistentStoresAutomaticallyOption, in: options)
            && Self.isOn(NSInferMappingModelAutomaticallyOption, in: options)
        // A read-only store is never written, so never migrated.
        guard automatic || staged != nil, !Self.opensReadOnly(options) else { return false }
        do {
            guard let storeHash = try FileStore.metadata(at: url)[PersistenceKitModelLayoutHashKey] else { return false }
            let plan = try MigrationPlan(storeHash: storeHash, destination: managedObjectModel, staged: staged)
            for step in plan.steps {
                if let custom = step.custom, let handler = custom.willMigrateHandler, let staged {
                    try Self.run(handler, of: custom, manager: staged, model: step.from, url: url, durability: durability)
                }
                try FileStoreMigration.migrate(at: url, from: step.from, to: step.to, durability: durability)
                if let custom = step.custom, let handler = custom.didMigrateHandler, let staged {
                    try Self.run(handler, of: custom, manager: staged, model: step.to, url: url, durability: durability)
                }
            }
            return true
        } catch let error as MigrationError {
            let code: CoreDataError.Code = if case .missingSourceModel = error.kind { .migrationMissingSourceModel } else { .migration }
            throw CoreDataError(
                code,
                "the store at \(url.path) could not be migrated to this coordinator's model "
                    + "\(managedObjectModel.layoutHashString): \(error.message)",
                underlying: error)
        }
    }

    /// Migrates a store of a type registered with a ``StoreMigrator`` when `options` (or a
    /// staged migration manager) allow it. Returns whether it asked the migrator.
    /// - Throws: as ``migrateFileStore(at:options:staged:durability:)``.
    func migrateInPlace(
        with migrator: StoreMigrator, type: String, at url: URL?, options: [String: String], staged: NSStagedMigrationManager?
    ) throws -> Bool {
        let automatic = Self.isOn(NSMigratePersistentStoresAutomaticallyOption, in: options)
            && Self.isOn(NSInferMappingModelAutomaticallyOption, in: options)
        // A read-only store is never written, so never migrated.
        guard automatic || staged != nil, !Self.opensReadOnly(options) else { return false }
        let request = StoreMigrationRequest(url: url, options: options, destination: managedObjectModel, staged: staged, storeType: type)
        // A database URL may carry a password; messages never show it.
        let place = url.flatMap { u -> String? in
            var c = URLComponents(url: u, resolvingAgainstBaseURL: false)
            c?.password = nil
            return c?.string
        } ?? "the configured location"
        do {
            do {
                try migrator(request)
            } catch let error as MigrationError {
                throw error
            } catch {
                throw MigrationError(.store, "the store could not be migrated; it is unchanged.", underlying: error)
            }
            return true
        } catch let error as MigrationError {
            let code: CoreDataError.Code = if case .missingSourceModel = error.kind { .migrationMissingSourceModel } else { .migration }
            throw CoreDataError(
                code,
                "the store at \(place) could not be migrated to this coordinator's model "
                    + "\(managedObjectModel.layoutHashString): \(error.message)",
                underlying: error)
        }
    }

    /// Runs a custom stage's handler with `manager.container` loaded with `model` on the
    /// file store at `url`, and closes that container's store afterwards.
    private static func run(
        _ handler: (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void, of stage: NSCustomMigrationStage,
        manager: NSStagedMigrationManager, model: NSManagedObjectModel, url: URL, durability: FileStore.Durability
    ) throws {
        let description = NSPersistentStoreDescription(url: url)
        description.setOption(durability.rawValue, forKey: FileStore.durabilityOptionKey)
        description.shouldMigrateStoreAutomatically = false
        try runStageHandler(handler, of: stage, manager: manager, model: model, description: description)
    }

    /// Runs a custom stage's handler with `manager.container` loaded with `model` on the
    /// store `description` names (automatic migration off), and removes that container's
    /// store from its coordinator afterwards (a file store is closed then; another store
    /// lets go of what it holds when released).
    static func runStageHandler(
        _ handler: (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void, of stage: NSCustomMigrationStage,
        manager: NSStagedMigrationManager, model: NSManagedObjectModel, description: NSPersistentStoreDescription
    ) throws(MigrationError) {
        let container = NSPersistentContainer(name: stage.label ?? "Migration", managedObjectModel: model)
        container.persistentStoreDescriptions = [description]
        let failure = Lock<(any Error)?>(nil)
        container.loadPersistentStores { _, error in failure.withLock { $0 = error } }
        if let loadError = failure.withLock({ $0 }) { throw MigrationError(.store, "the store could not be opened for a custom stage.", underlying: loadError) }
        manager.container = container
        defer {
            manager.container = nil
            for store in container.persistentStoreCoordinator.persistentStores {
                try? container.persistentStoreCoordinator.remove(store)
                try? (store as? FileStore)?.close()
            }
        }
        do {
            try handler(manager, stage)
        } catch {
            throw MigrationError(
                .handlerFailed, "a custom migration stage's handler threw; the store stays at the version it had.",
                underlying: error)
        }
    }
}
