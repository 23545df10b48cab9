import Foundation

/// The steps that take a store from the model version it was written with to the current
/// model: found among the staged migration manager's stages when there is one, else among
/// the other versions of the Xcode model file the current model was read from.
struct MigrationPlan {
    struct Step {
        let from: NSManagedObjectModel
        let to: NSManagedObjectModel
        /// The custom stage whose handlers run around this step, if any.
        let custom: NSCustomMigrationStage?
    }

    let steps: [Step]

    /// Plans the migration of a store whose layout hash is `storeHash` to `destination`.
    /// - Throws: ``MigrationError`` `.missingSourceModel` when no known model is the store's,
    ///   `.invalidStages` when a stage names a checksum no known model has.
    init(storeHash: String, destination: NSManagedObjectModel, staged: NSStagedMigrationManager?) throws(MigrationError) {
        let bundleVersions = Self.modelFileVersions(of: destination)
        var versions: [NSManagedObjectModel] = []
        func append(_ model: NSManagedObjectModel) {
            model.seal()
            if let last = versions.last, last.layoutHash == model.layoutHash { return }
            versions.append(model)
        }
        var customs: [NSCustomMigrationStage] = []
        if let staged {
            var known = bundleVersions + [destination]
            for case let stage as NSCustomMigrationStage in staged.stages { known += stage.models }
            for stage in staged.stages {
                if let custom = stage as? NSCustomMigrationStage {
                    customs.append(custom)
                    custom.models.forEach(append)
                } else if let light = stage as? NSLightweightMigrationStage {
                    for checksum in light.versionChecksums {
                        guard let model = known.first(where: { $0.versionChecksum == checksum }) else {
                            throw MigrationError(
                                .invalidStages(checksum),
                                "a lightweight stage names model checksum \(checksum), which none of the models the "
                                    + "migration knows has (custom stages' models, the model file's versions, the current "
                                    + "model); add a custom stage with that model, or fix the checksum.")
                        }
                        append(model)
                    }
                }
            }
            append(destination)
        } else {
            destination.seal()
            guard let source = bundleVersions.first(where: { $0.seal(); return $0.layoutHashString == storeHash }) else {
                throw Self.missing(storeHash)
            }
            versions = [source, destination]
        }
        guard let start = versions.firstIndex(where: { $0.layoutHashString == storeHash }) else { throw Self.missing(storeHash) }
        var steps: [Step] = []
        for i in start..<(versions.count - 1) {
            let (from, to) = (versions[i], versions[i + 1])
            let custom = customs.first {
                $0.currentModel.resolvedModel.layoutHash == from.layoutHash && $0.nextModel.resolvedModel.layoutHash == to.layoutHash
            }
            steps.append(Step(from: from, to: to, custom: custom))
        }
        self.steps = steps
    }

    private static func missing(_ storeHash: String) -> MigrationError {
        MigrationError(
            .missingSourceModel(storeHash: storeHash),
            "the store was written with a model (layout \(storeHash)) that none of the known "
                + "models is: keep the old version in the .xcdatamodeld the model is read from, or list it in an "
                + "NSStagedMigrationManager stage (NSCustomMigrationStage(migratingFrom:to:) with model references).")
    }

    /// The versions of the Xcode model bundle `model` was read from, other than `model`'s own.
    static func modelFileVersions(of model: NSManagedObjectModel) -> [NSManagedObjectModel] {
        guard let url = model.modelFileURL else { return [] }
        var bundle = url
        if bundle.lastPathComponent == "contents" { bundle.deleteLastPathComponent() }
        if bundle.pathExtension == "xcdatamodel" { bundle.deleteLastPathComponent() }
        guard bundle.pathExtension == "xcdatamodeld",
            let names = try? FileManager.default.contentsOfDirectory(atPath: bundle.path)
        else { return [] }
        return names.filter { $0.hasSuffix(".xcdatamodel") }.sorted().compactMap {
            try? NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent($0))
        }
    }
}
