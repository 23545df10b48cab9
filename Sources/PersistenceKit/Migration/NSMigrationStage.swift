import Foundation

/// One step of a staged migration (``NSStagedMigrationManager``), as Core Data's.
///
/// # Thread safety
/// Build stages on one thread before handing the manager to a container; a migration runs
/// them on the thread that loads the store.
public class NSMigrationStage: @unchecked Sendable {
    // @unchecked Sendable: configured before the manager is given to a container, then only
    // read by the one load that runs the migration.

    /// A label for logs and messages.
    public var label: String?

    init() {}

    /// The model versions this stage passes through, in order.
    var models: [NSManagedObjectModel] { [] }
}

/// A stage whose steps a lightweight migration infers, between model versions named by
/// their checksums (``NSManagedObjectModel/versionChecksum``).
///
/// The checksums are resolved against the other models a migration knows: those of the
/// manager's custom stages, the versions of the Xcode model file the current model was read
/// from, and the current model. A checksum none of them has makes the migration throw
/// ``MigrationError/Kind/invalidStages(_:)``.
public final class NSLightweightMigrationStage: NSMigrationStage, @unchecked Sendable {
    // @unchecked Sendable: as NSMigrationStage.

    /// The checksums of the model versions, oldest first.
    public let versionChecksums: [String]

    /// A stage through the model versions with `versionChecksums`, oldest first.
    public init(_ versionChecksums: [String]) {
        self.versionChecksums = versionChecksums
    }
}

/// A stage from one model version to the next with code of your own around the inferred
/// row migration: ``willMigrateHandler`` runs with the store still at the old version,
/// ``didMigrateHandler`` once it is at the new one; each can read and save through
/// `manager.container` (a container loaded with that version's model).
public final class NSCustomMigrationStage: NSMigrationStage, @unchecked Sendable {
    // @unchecked Sendable: as NSMigrationStage.

    /// The model version the stage starts from.
    public let currentModel: NSManagedObjectModelReference
    /// The model version the stage ends at.
    public let nextModel: NSManagedObjectModelReference
    /// Runs before the rows are migrated, with `manager.container` on the old version.
    public var willMigrateHandler: ((NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)?
    /// Runs after the rows are migrated, with `manager.container` on the new version (fill a
    /// new attribute here).
    public var didMigrateHandler: ((NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)?

    /// A stage from `currentModel` to `nextModel`.
    public init(migratingFrom currentModel: NSManagedObjectModelReference, to nextModel: NSManagedObjectModelReference) {
        self.currentModel = currentModel
        self.nextModel = nextModel
    }

    override var models: [NSManagedObjectModel] { [currentModel.resolvedModel, nextModel.resolvedModel] }
}

/// Migrates a store across several model versions in one load, as Core Data's: give it to
/// the store description (``NSPersistentStoreDescription/stagedMigrationManager``) and load
/// the container. The store is moved one version at a time from the version it was written
/// with to the container's model; each step is all or nothing, so a store interrupted
/// between steps opens at the last version reached and continues from there.
public final class NSStagedMigrationManager: @unchecked Sendable {
    // @unchecked Sendable: `stages` is immutable; `container` is set and read only by the
    // thread that runs the migration, while a handler runs.

    /// The stages, oldest first.
    public let stages: [NSMigrationStage]
    /// While a custom stage's handler runs: a container loaded with that step's model on the
    /// store being migrated. `nil` otherwise.
    public internal(set) var container: NSPersistentContainer?

    /// A manager that runs `stages` in order.
    public init(_ stages: [NSMigrationStage]) {
        self.stages = stages
    }
}
