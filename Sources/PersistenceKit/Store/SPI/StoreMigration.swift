import Foundation

/// Migrates a store of a registered type in place, for a ``PersistentStore`` written outside
/// this module (a database's schema, say) that takes part in automatic migration: register
/// it with ``NSPersistentStoreCoordinator/registerStoreType(_:factory:migrator:)``.
///
/// When the store's factory throws ``CoreDataError/storeModelMismatch(store:storeHash:modelHash:underlying:)``
/// (code `.persistentStoreIncompatibleVersionHash`) and the store's options allow a migration
/// (``NSMigratePersistentStoresAutomaticallyOption`` and ``NSInferMappingModelAutomaticallyOption``,
/// or a staged migration manager), the coordinator calls the migrator once, then opens the
/// store again. The migrator must read the model the store was written with itself (under
/// whatever lock keeps two processes from migrating at once), ask
/// ``StoreMigrationRequest/steps(fromLayoutHash:runsHandlers:)`` for the steps, and apply them
/// all or nothing. A store already at ``StoreMigrationRequest/destination`` (another process
/// migrated it meanwhile) is left as it is, without error.
///
/// A migrator that runs custom stages' handlers asks for the steps with `runsHandlers: true`
/// and commits each step of those that have handlers on its own: it calls
/// ``StoreMigrationRequest/runWillMigrateHandler(of:)`` before the step's changes and
/// ``StoreMigrationRequest/runDidMigrateHandler(of:)`` once they are committed, as the file
/// store does. The handlers open the store at the step's model through this store type,
/// with automatic migration off, on connections or handles of their own, so the migrator
/// must hold no lock then that such an open, or the handler's saves, would wait for.
///
/// - Throws: ``MigrationError`` (the coordinator wraps it in a ``CoreDataError`` `.migration`
///   or `.migrationMissingSourceModel`), or the store's own error, which the coordinator wraps
///   as a ``MigrationError`` `.store`. After an error the store must be as it was.
public typealias StoreMigrator = @Sendable (_ request: StoreMigrationRequest) throws -> Void

/// What a ``StoreMigrator`` is asked to do: migrate the store at ``url`` to ``destination``.
///
/// # Thread safety
/// Immutable; may be used from any thread for the duration of the migrator's call.
public struct StoreMigrationRequest: Sendable {
    /// The store's URL, as given to its factory.
    public let url: URL?
    /// The store's options, as given to its factory.
    public let options: [String: String]
    /// The coordinator's model, which the store must end at.
    public let destination: NSManagedObjectModel
    let staged: NSStagedMigrationManager?
    /// The store's type, under which a custom stage's handler opens it.
    let storeType: String

    /// The steps from the model whose layout hash the store recorded (the hash stores keep
    /// under ``PersistenceKitModelLayoutHashKey``) to ``destination``, each with its inferred
    /// mapping; empty when the store is already at ``destination``. The models are found as
    /// for a file store: among the staged migration manager's stages, else among the versions
    /// of the Xcode model file ``destination`` was read from.
    ///
    /// - Parameter runsHandlers: whether the migrator runs custom stages' handlers around the
    ///   steps that have them (see ``StoreMigrator``); when false such a step is refused.
    /// - Throws: ``MigrationError`` `.missingSourceModel` when no known model has that hash,
    ///   `.invalidStages` when a stage is invalid or, unless `runsHandlers`, is a custom stage
    ///   with handlers (their code runs between steps through a container), and the
    ///   lightweight checks' errors for a change that cannot be inferred.
    public func steps(fromLayoutHash storeHash: String, runsHandlers: Bool = false) throws(MigrationError) -> [StoreMigrationStep] {
        destination.seal()
        if storeHash == destination.layoutHashString { return [] }
        let plan = try MigrationPlan(storeHash: storeHash, destination: destination, staged: staged)
        var steps: [StoreMigrationStep] = []
        for step in plan.steps {
            if !runsHandlers, let custom = step.custom, custom.willMigrateHandler != nil || custom.didMigrateHandler != nil {
                throw MigrationError(
                    .invalidStages(custom.label ?? "custom stage"),
                    "this store type migrates in place and does not run custom stages' handlers; migrate with "
                        + "lightweight stages only, or run the handlers' work after loading the store.")
            }
            steps.append(StoreMigrationStep(try InferredMapping(from: step.from, to: step.to), custom: step.custom))
        }
        return steps
    }

    /// Runs `step`'s custom stage's `willMigrateHandler`, if it has one, with the staged
    /// migration manager's `container` loaded with the step's ``StoreMigrationStep/source``
    /// model on this store; the container's store is removed from its coordinator afterwards.
    ///
    /// - Throws: ``MigrationError`` `.handlerFailed` with the handler's error, `.store` when the
    ///   store could not be opened at the step's source model.
    public func runWillMigrateHandler(of step: StoreMigrationStep) throws(MigrationError) {
        guard let custom = step.custom, let handler = custom.willMigrateHandler, let staged else { return }
        try runHandler(handler, of: custom, manager: staged, model: step.source)
    }

    /// Runs `step`'s custom stage's `didMigrateHandler`, if it has one, as
    /// ``runWillMigrateHandler(of:)`` does, with the step's ``StoreMigrationStep/destination``
    /// model: call it once the step's changes are committed.
    public func runDidMigrateHandler(of step: StoreMigrationStep) throws(MigrationError) {
        guard let custom = step.custom, let handler = custom.didMigrateHandler, let staged else { return }
        try runHandler(handler, of: custom, manager: staged, model: step.destination)
    }

    private func runHandler(
        _ handler: (NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void, of stage: NSCustomMigrationStage,
        manager: NSStagedMigrationManager, model: NSManagedObjectModel
    ) throws(MigrationError) {
        let description = NSPersistentStoreDescription(url: url, type: storeType)
        for (key, value) in options { description.setOption(value, forKey: key) }
        // The copied options turn migration on, and an explicit option wins over the
        // property: left on, an open that found another version would start a migration
        // that waits for the one running this handler.
        description.setOption("false", forKey: NSMigratePersistentStoresAutomaticallyOption)
        description.setOption("false", forKey: NSInferMappingModelAutomaticallyOption)
        description.shouldMigrateStoreAutomatically = false
        try NSPersistentStoreCoordinator.runStageHandler(handler, of: stage, manager: manager, model: model, description: description)
    }
}

/// One inferred (lightweight) step of a migration, from ``source`` to ``destination``, with
/// the same checks and mapping a file store's migration uses.
public struct StoreMigrationStep: Sendable {
    /// How one destination entity's rows come from a source entity's.
    public struct EntityMapping: Sendable {
        /// The source entity (its name is the stored one).
        public let source: NSEntityDescription
        /// The destination entity (renamed when its name differs from ``source``'s).
        public let destination: NSEntityDescription
        /// For each destination property, in order: the index of the source property it
        /// keeps the values of, or nil for a new property (it starts at its default value,
        /// or empty).
        public let sourceProperties: [Int?]
        /// For each destination property, in order: its default value as stored (`.null`
        /// for none, and for relationships).
        public let defaultValues: [StoreValue]
    }

    /// The model the step starts from.
    public let source: NSManagedObjectModel
    /// The model the step ends at.
    public let destination: NSManagedObjectModel
    /// One per destination entity that has a source entity; destination entities not
    /// listed are new, source entities not listed are removed.
    public let entities: [EntityMapping]
    /// The custom stage around this step, whose handlers the request runs.
    let custom: NSCustomMigrationStage?

    /// Whether a custom stage's handler runs before or after this step (see
    /// ``StoreMigrationRequest/runWillMigrateHandler(of:)``): the migrator must then commit
    /// this step on its own.
    public var hasHandlers: Bool { custom.map { $0.willMigrateHandler != nil || $0.didMigrateHandler != nil } ?? false }

    init(_ mapping: InferredMapping, custom: NSCustomMigrationStage?) {
        self.custom = custom
        source = mapping.source
        destination = mapping.destination
        entities = mapping.entities.map { map in
            EntityMapping(
                source: map.source, destination: map.destination, sourceProperties: map.columns,
                defaultValues: map.destination.properties.map { ($0 as? NSAttributeDescription)?.defaultStoreValue ?? .null })
        }
    }
}

extension MigrationError {
    /// The error a ``StoreMigrator`` throws when a stored value stands in the way of a step
    /// (`.valueDoesNotFit`, `.requiredWithoutDefault`, `.toManyHoldsSeveral`), with the
    /// message a file store's migration gives for it. Other kinds get a general message.
    public static func storedValue(_ kind: Kind, entity: String, property: String, type: NSAttributeType? = nil) -> MigrationError {
        let message: String
        switch kind {
        case let .valueDoesNotFit(pk):
            message = "object \(pk) holds a value that does not fit \(type.map { "\($0)" } ?? "the new type"); keep the "
                + "wider type or change the value in a custom migration stage first."
        case let .requiredWithoutDefault(pk):
            message = "object \(pk) has no value for this required attribute and it has no default value; give it a "
                + "default value or keep it optional."
        case let .toManyHoldsSeveral(pk):
            message = "object \(pk) holds several objects in this relationship, which is now to-one; empty it "
                + "first, or move the objects in a custom migration stage."
        default:
            message = "a stored value cannot be migrated."
        }
        return MigrationError(kind, entity: entity, property: property, message)
    }
}
