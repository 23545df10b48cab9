import Foundation

/// Names one version of a model for a staged migration, as Core Data's: the model itself,
/// or an Xcode model file, with the version checksum it must have.
///
/// # Thread safety
/// Immutable; its model is sealed when a migration uses it.
public final class NSManagedObjectModelReference: Sendable {
    /// The model this reference resolves to.
    public let resolvedModel: NSManagedObjectModel
    /// The checksum the model had when the reference was made (its ``NSManagedObjectModel/versionChecksum``).
    public let versionChecksum: String

    /// A reference to `model`; `versionChecksum` is its ``NSManagedObjectModel/versionChecksum``
    /// (checked: a mismatch traps, as the reference would migrate through the wrong model).
    public init(model: NSManagedObjectModel, versionChecksum: String) {
        guard model.versionChecksum == versionChecksum else {
            programmerError(
                "PersistenceKit: NSManagedObjectModelReference was given checksum \(versionChecksum) for a model whose "
                    + "checksum is \(model.versionChecksum). Rule: the checksum names the model version; print "
                    + "model.versionChecksum and use that.")
        }
        self.resolvedModel = model
        self.versionChecksum = versionChecksum
    }

    /// A reference to the model in the Xcode model file at `fileURL` (see
    /// ``NSManagedObjectModel/init(modelFileAt:managedObjectClasses:)``).
    /// - Throws: ``ModelFileError`` when the file cannot be read; ``MigrationError`` when
    ///   its checksum is not `versionChecksum`.
    public convenience init(fileURL: URL, versionChecksum: String) throws {
        let model = try NSManagedObjectModel(modelFileAt: fileURL)
        guard model.versionChecksum == versionChecksum else {
            throw MigrationError(
                .invalidStages("checksum"),
                "the model at \(fileURL.path) has checksum \(model.versionChecksum), not \(versionChecksum); the file "
                    + "changed since the stage was written.")
        }
        self.init(model: model, versionChecksum: versionChecksum)
    }
}

extension NSManagedObjectModel {
    /// A checksum of the model version, as Core Data's: base64 of a SHA-256 digest over the
    /// entities' version hashes. Equal for models that store data alike; staged migrations
    /// name model versions by it.
    public var versionChecksum: String {
        var bytes: [UInt8] = []
        for (name, hash) in entityVersionHashesByName.sorted(by: { $0.key < $1.key }) {
            bytes += Array(name.utf8) + [0] + Array(hash)
        }
        return SHA256.hash(bytes).base64EncodedString()
    }
}
