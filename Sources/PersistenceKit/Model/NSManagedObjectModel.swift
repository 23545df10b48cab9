import Foundation
import Synchronization

/// A schema: the set of entities that a coordinator's stores hold.
///
/// Build one from `NSManagedObject` subclasses that declare their properties with
/// `@Attribute` and `@Relationship` (``init(managedObjectClasses:)``), or by hand from
/// ``NSEntityDescription``s; both routes give equal models (`==`, ``versionHash``).
///
/// # Thread safety
/// A model is mutable until a coordinator uses it; it is then sealed (further mutation
/// traps) and may be shared freely.
public final class NSManagedObjectModel: @unchecked Sendable, Equatable, CustomStringConvertible {
    // @unchecked Sendable: `entities` is written only before sealing (checked); after
    // `seal()` — which runs under `sealLock` — the model is only read.

    /// The model's entities. Setting it makes this model their owner.
    public var entities: [NSEntityDescription] {
        didSet {
            if isSealed {
                programmerError(
                    "PersistenceKit: a model's entities were replaced after it was used by a coordinator. "
                        + "Rule: a model is immutable once in use; build a new model instead.")
            }
            adopt(entities)
        }
    }

    /// Makes this model the owner of `entities`; traps for an entity that a coordinator uses
    /// through another model (taking it over re-indexed it under that coordinator).
    private func adopt(_ entities: [NSEntityDescription]) {
        for e in entities {
            if let other = e.managedObjectModel, other !== self, other.isSealed {
                programmerError(
                    "PersistenceKit: entity '\(e.name)' is already used by a coordinator through another model; it "
                        + "cannot be added to a second model. Rule: a model is immutable once in use, and an entity "
                        + "belongs to one model; build new entity descriptions for the new model.")
            }
            e.managedObjectModel = self
        }
    }

    /// Identifiers of this model version, as Core Data's: free-form values (a model file's
    /// "Version Identifier" becomes one string here) that tell versions apart for people and
    /// migration code. They do not enter ``versionHash``: two models that differ only in
    /// their identifiers open the same stores. Set before the model is used by a coordinator.
    public var versionIdentifiers: Set<AnyHashable> = [] {
        didSet {
            if isSealed {
                programmerError(
                    "PersistenceKit: a model's versionIdentifiers were changed after it was used by a coordinator. "
                        + "Rule: a model is immutable once in use.")
            }
        }
    }

    /// The Xcode model file this model was read from (a `.xcdatamodeld` bundle, a version
    /// folder or a `contents` file), if any: migration looks for the store's model among the
    /// bundle's other versions. Set once, by the model-file initializers.
    var modelFileURL: URL?

    private let sealLock = Lock<Bool>(false)
    /// The validation error found when the model was sealed, if any (written once, under
    /// `sealLock`, before `isSealed` becomes true).
    private(set) var sealError: ModelError?
    private var entitiesByIndex: [NSEntityDescription] = []
    /// Whether any entity has a derived attribute (sealed models only): saves compute them.
    private(set) var hasDerivedAttributes = false
    private var entitiesByClass: [ObjectIdentifier: NSEntityDescription] = [:]
    private var entitiesByNameTable: [String: NSEntityDescription] = [:]
    /// The version hash, computed once when the model is sealed (written under `sealLock`
    /// before `isSealed` becomes true). Opening a store compares it, and computing it walks
    /// the whole canonical description: a tenth of reopening a 100,000-object store.
    private var sealedVersionHash = Data()
    /// `layoutHash`, computed once when the model is sealed (like `sealedVersionHash`).
    private var sealedLayoutHash = Data()

    /// Creates an empty model; add entities with ``entities``.
    public init() {
        entities = []
    }

    deinit {
        // Relationships hold their destination and inverse strongly, so related entities form
        // reference cycles. Break them for the entities this model owned (their weak
        // `managedObjectModel` reads nil now); entities another model took over keep theirs.
        for e in entities where e.managedObjectModel == nil {
            for case let r as NSRelationshipDescription in e.properties {
                r.destinationEntity = nil
                r.inverseRelationship = nil
            }
        }
    }

    /// Creates a model from entity descriptions.
    public convenience init(entities: [NSEntityDescription]) {
        self.init()
        self.entities = entities
        adopt(entities)
    }

    /// Whether the model has been sealed (used by a coordinator) and can no longer change.
    public var isSealed: Bool { sealLock.withLock { $0 } }

    /// The model's entities keyed by name.
    public var entitiesByName: [String: NSEntityDescription] {
        if isSealed { return entitiesByNameTable }
        return Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Validates the model and makes it immutable. Idempotent. Invalid models are sealed too
    /// (so that objects can still be described in error messages); stores refuse them.
    func seal() {
        sealLock.withLock { sealed in
            guard !sealed else { return }
            // Validation resolves relationship names, so it runs here, under the seal lock:
            // two coordinators created at once for one model must not both mutate it.
            do throws(ModelError) { try validate() } catch { sealError = error }
            let sorted = entities.sorted { $0.name < $1.name }
            for (i, e) in sorted.enumerated() {
                e.managedObjectModel = self
                e.seal(index: Int32(i))
            }
            // A sum reads attributes of other objects: changes of those reach the summing
            // object through the summed relationship's inverse.
            for e in sorted {
                for (_, d) in e.derivedSlots {
                    guard case let .sum(ri, _)? = d.derivation, let r = e.properties[ri] as? NSRelationshipDescription,
                        let inverse = r.inverseRelationship, let destination = r.destinationEntity
                    else { continue }
                    for member in destination.selfAndDescendants where !member.derivationSources.contains(inverse.index) {
                        member.derivationSources.append(inverse.index)
                    }
                }
            }
            hasDerivedAttributes = sorted.contains { !$0.derivedSlots.isEmpty }
            entitiesByIndex = sorted
            entitiesByNameTable = Dictionary(sorted.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            var byClass: [ObjectIdentifier: NSEntityDescription] = [:]
            for e in sorted where e.managedObjectClass != NSManagedObject.self {
                byClass[ObjectIdentifier(e.managedObjectClass)] = e
            }
            entitiesByClass = byClass
            EntityRegistry.register(sorted)
            sealedVersionHash = Self.hash(of: hashDescription)
            sealedLayoutHash = Self.hash(of: layoutDescription)
            sealed = true
        }
    }

    /// The entity at a sealed index.
    func entity(at index: Int32) -> NSEntityDescription? {
        let i = Int(index)
        return i >= 0 && i < entitiesByIndex.count ? entitiesByIndex[i] : nil
    }

    /// The entity whose objects are instances of `type` (sealed models only).
    func entity(for type: NSManagedObject.Type) -> NSEntityDescription? {
        if let e = entitiesByClass[ObjectIdentifier(type)] { return e }
        return entitiesByNameTable[String(describing: type)]
    }

    /// The model's canonical form: entities sorted by name, each with its properties sorted.
    var canonicalDescription: String {
        entities.map(\.canonicalDescription).sorted().joined(separator: "\n")
    }

    /// The canonical form without renaming identifiers, which Core Data's version hashes
    /// leave out too: a model that only adds them is the same version.
    var hashDescription: String {
        entities.map(\.hashDescription).sorted().joined(separator: "\n")
    }

    /// A 16-byte hash of the model's canonical form, renaming identifiers left out (as Core
    /// Data's version hashes leave them out; version hash modifiers count). Equal models have
    /// equal hashes. The
    /// file store records a related hash of the stored layout (property order included)
    /// and refuses to open with a model whose layout differs; see Differences.md, "Model
    /// version hash". The in-memory store compares nothing.
    public var versionHash: Data {
        if isSealed { return sealedVersionHash }
        return Self.hash(of: hashDescription)
    }

    /// A 16-byte hash of the model as stores lay it out: the version hash's content with each
    /// entity's properties in their order. A file store records it and opens only with a
    /// model whose layout hash matches: rows keep values by position, so two models equal
    /// but for the order of their properties must not share a store: a reordered model
    /// would open it and read each value under another property.
    var layoutHash: Data {
        if isSealed { return sealedLayoutHash }
        return Self.hash(of: layoutDescription)
    }

    /// The layout hash as lowercase hex, for messages.
    var layoutHashString: String { Self.hex(layoutHash) }

    /// The model's layout form: entities sorted by name (the order of their indexes), each
    /// with its properties in order.
    private var layoutDescription: String {
        entities.sorted { $0.name < $1.name }.map(\.layoutDescription).joined(separator: "\n")
    }

    /// Two 64-bit FNV-1a hashes of `description` with different seeds, big-endian.
    private static func hash(of description: String) -> Data {
        var out = Data()
        for seed: UInt64 in [0xcbf2_9ce4_8422_2325, 0x8422_2325_cbf2_9ce4] {
            var h = seed
            for b in description.utf8 {
                h ^= UInt64(b)
                h = h &* 0x0000_0100_0000_01B3
            }
            withUnsafeBytes(of: h.bigEndian) { out.append(contentsOf: $0) }
        }
        return out
    }

    /// The version hash as lowercase hex, for messages and metadata.
    public var versionHashString: String { Self.hex(versionHash) }

    /// `bytes` as lowercase hex.
    static func hex(_ bytes: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// Two models are equal when they describe the same entities, properties, types,
    /// options and relationships (class names do not count).
    public static func == (lhs: NSManagedObjectModel, rhs: NSManagedObjectModel) -> Bool {
        lhs.canonicalDescription == rhs.canonicalDescription
    }

    /// A readable summary for logs and messages.
    public var description: String { "NSManagedObjectModel(\(entities.map(\.name).sorted()))" }
}
