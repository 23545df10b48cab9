import Foundation

/// One step of a staged migration (``NSStagedMigrationManager``), as Core Data's.
///
/// # Thread safety
/// Properties may be read and set from any thread (they are behind locks); a migration runs
/// the stages, and their handlers, on the thread that loads the store.
public class NSMigrationStage: @unchecked Sendable {
    // @unchecked Sendable (a non-final class cannot be checked): its one mutable property is
    // behind `labelLock`, and the subclasses add only `let`s of Sendable types and state
    // behind locks of their own.

    private let labelLock = Lock<String?>(nil)

    /// A label for logs and messages.
    public var label: String? {
        get { labelLock.withLock { $0 } }
        set { labelLock.withLock { $0 = newValue } }
    }

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
    // @unchecked Sendable: NSMigrationStage's proof; this class adds one `let` of strings.

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
    // @unchecked Sendable: NSMigrationStage's proof; this class adds two `let`s of Sendable
    // references and the handlers, which are read and written only under `handlers`' lock
    // and are `@Sendable` themselves: a handler set on one thread runs on the thread that
    // loads the store (outside the lock), so what it captures must be safe to share.

    private typealias Handler = @Sendable (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void
    private let handlers = Lock<(will: Handler?, did: Handler?)>((nil, nil))

    /// The model version the stage starts from.
    public let currentModel: NSManagedObjectModelReference
    /// The model version the stage ends at.
    public let nextModel: NSManagedObjectModelReference
    /// Runs before the rows are migrated, with `manager.container` on the old version.
    /// The handler may run on another thread than the one that set it, so it is `@Sendable`.
    public var willMigrateHandler: (@Sendable (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)? {
        get { handlers.withLock { $0.will } }
        set { handlers.withLock { $0.will = newValue } }
    }
    /// Runs after the rows are migrated, with `manager.container` on the new version (fill a
    /// new attribute here).
    public var didMigrateHandler: (@Sendable (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)? {
        get { handlers.withLock { $0.did } }
        set { handlers.withLock { $0.did = newValue } }
    }

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
public final class NSStagedMigrationManager: Sendable {
    /// The stages, oldest first.
    public let stages: [NSMigrationStage]
    /// While a custom stage's handler runs: a container loaded with that step's model on the
    /// store being migrated. `nil` otherwise.
    public internal(set) var container: NSPersistentContainer? {
        get { containerLock.withLock { $0 } }
        set { containerLock.withLock { $0 = newValue } }
    }

    private let containerLock = Lock<NSPersistentContainer?>(nil)

    /// A manager that runs `stages` in order.
    public init(_ stages: [NSMigrationStage]) {
        self.stages = stages
    }
}
