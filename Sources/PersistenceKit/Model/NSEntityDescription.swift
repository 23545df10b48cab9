import Foundation
import Synchronization

/// Describes one entity: its name, the class of its objects, and its properties.
///
/// # Thread safety
/// Mutable while its model is being built; immutable (setters trap) once the model is used
/// by a coordinator, and readable from any thread after that.
public final class NSEntityDescription: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked Sendable: stored properties are written only before the model is sealed
    // (checked by `checkMutable()`) or by `seal(index:)`, which the model runs once under
    // its seal lock before any coordinator shares it; the only state written later, the
    // key-path caches `storageKeyPathIndex` and `wrappedKeyPathIndex`, is behind Locks
    // (`storageSlotCache` is safe by its own atomic publication).

    // `@exclusivity(unchecked)` on the stored properties below: they are written only while
    // the model is being built (one thread, one statement at a time; the observers only read
    // the model reference) and by `seal(index:)` under the model's seal lock, and are
    // read-only afterwards, so accesses never overlap. The run-time checks they replace ran
    // on every object created, validated and faulted (measured: about 5% of the instructions
    // of inserting and saving 100,000 objects).

    /// The entity's name, unique in its model.
    @exclusivity(unchecked) public var name: String {
        didSet { checkMutable() }
    }

    /// The name of the class whose instances represent this entity's objects.
    @exclusivity(unchecked) public var managedObjectClassName: String {
        didSet { checkMutable() }
    }

    /// The class whose instances represent this entity's objects (`NSManagedObject` unless a
    /// subclass was registered).
    @exclusivity(unchecked) public var managedObjectClass: NSManagedObject.Type {
        didSet {
            checkMutable()
            managedObjectClassName = String(describing: managedObjectClass)
        }
    }

    /// The entity's properties, in storage order: those it inherits from its
    /// ``superentity`` (that entity's ``properties``, in their order) followed by its own.
    ///
    /// As in Core Data, setting it sets the entity's own properties and makes this entity
    /// their owner; the inherited ones stay first and keep their ``NSPropertyDescription/entity``
    /// (the ancestor that declares them). An inherited property has the same storage index in
    /// the entity that declares it and in every sub-entity, so a value read by index means the
    /// same property on objects of either.
    public var properties: [NSPropertyDescription] {
        get { allProperties }
        set {
            checkMutable()
            // Properties that left this entity stop naming it (their `entity` does not keep
            // the entity alive, so a stale one must not outlive it).
            for p in ownProperties where !newValue.contains(where: { $0 === p }) { p.detach(from: self) }
            ownProperties = newValue
            adopt(newValue)
            refreshInheritedProperties()
        }
    }

    /// The properties this entity declares itself (not inherited), in order.
    @exclusivity(unchecked) private(set) var ownProperties: [NSPropertyDescription] = []

    /// The inherited properties followed by ``ownProperties``: what ``properties`` returns.
    /// Kept up to date eagerly (when either list of an ancestor changes), so that the hot
    /// paths read a stored array.
    @exclusivity(unchecked) private var allProperties: [NSPropertyDescription] = []

    /// Recomputes ``allProperties`` for this entity and every entity below it.
    private func refreshInheritedProperties() {
        allProperties = (superentity?.allProperties ?? []) + ownProperties
        for sub in storedSubentities { sub.refreshInheritedProperties() }
    }

    /// Makes this entity the owner of `properties`; traps for a property of an entity in use.
    private func adopt(_ properties: [NSPropertyDescription]) {
        for p in properties {
            if let other = p.entity, other !== self, other.managedObjectModel?.isSealed == true {
                programmerError(
                    "PersistenceKit: property '\(other.name).\(p.name)' is used by a coordinator; it cannot be added "
                        + "to entity '\(name)'. Rule: a property belongs to one entity; make a new description.")
            }
            p.entity = self
        }
    }

    /// The entity's uniqueness constraints, as Core Data's: each inner array is one
    /// constraint, listing attribute names (`String`) or ``NSAttributeDescription``s of this
    /// entity; no two saved objects of the entity may share the values of every attribute of
    /// one constraint. A single-attribute constraint makes that attribute unique; a compound
    /// one makes the combination unique. Checked by ``NSManagedObjectModel/validate()``
    /// (unknown names, relationships and transient attributes are a ``ModelError``), and part
    /// of the model's version hash. A save that would break one is resolved by the context's
    /// merge policy (see `NSConstraintConflict`). Empty by default.
    @exclusivity(unchecked) public var uniquenessConstraints: [[Any]] = [] {
        didSet { checkMutable() }
    }

    /// The property indexes of each valid uniqueness constraint (sealed models only); empty
    /// for an entity without constraints, which is what the save and commit paths test.
    @exclusivity(unchecked) private(set) var uniqueColumns: [[Int]] = []

    /// Whether the entity is abstract: it has no objects of its own, only those of its
    /// ``subentities`` (a `Shape` entity with `Circle` and `Square` below it). Inserting an
    /// object of an abstract entity makes the save throw ``CoreDataError`` (code 1550, naming
    /// the entity). Part of the model's equality. `false` by default; settable until the
    /// model is used by a coordinator, as in Core Data.
    @exclusivity(unchecked) public var isAbstract: Bool = false {
        didSet { checkMutable() }
    }

    /// The entities that inherit from this one, as in Core Data. Setting it makes this
    /// entity their ``superentity`` (an entity listed here that had another super-entity
    /// leaves that one's list); each sub-entity then inherits this entity's ``properties``
    /// ahead of its own. Every sub-entity must also be in the model's
    /// ``NSManagedObjectModel/entities``. Traps when the list would make an entity its own
    /// ancestor, or when the model is in use.
    public var subentities: [NSEntityDescription] {
        get { storedSubentities }
        set {
            checkMutable()
            for sub in newValue {
                var ancestor: NSEntityDescription? = self
                while let a = ancestor {
                    if a === sub {
                        programmerError(
                            "PersistenceKit: entity '\(sub.name)' cannot be a sub-entity of '\(name)': it would become its own "
                                + "ancestor. Rule: entity inheritance is a tree.")
                    }
                    ancestor = a.superentity
                }
            }
            for old in storedSubentities where !newValue.contains(where: { $0 === old }) {
                old.setSuperentity(nil)
            }
            storedSubentities = newValue
            for sub in newValue {
                if let previous = sub.superentity, previous !== self {
                    previous.storedSubentities.removeAll { $0 === sub }
                }
                sub.setSuperentity(self)
            }
        }
    }

    @exclusivity(unchecked) private var storedSubentities: [NSEntityDescription] = []

    /// The entity this one inherits from, or `nil`; set through the super-entity's
    /// ``subentities``. Like Core Data's, the reference does not keep the super-entity alive.
    public var superentity: NSEntityDescription? {
        superentityOwner == nil ? nil : storedSuperentity
    }

    // `unowned`, not `weak`, for the reason given on `NSPropertyDescription.entity` (a weak
    // reference slows every retain of its target); the super-entity clears it in its
    // deinit and when it drops this entity from its list, and `superentityOwner` says
    // whether it is set without loading it.
    private unowned var storedSuperentity: NSEntityDescription?
    private var superentityOwner: ObjectIdentifier?

    private func setSuperentity(_ entity: NSEntityDescription?) {
        storedSuperentity = entity
        superentityOwner = entity.map(ObjectIdentifier.init)
        refreshInheritedProperties()
    }

    /// The sub-entities keyed by name.
    public var subentitiesByName: [String: NSEntityDescription] {
        Dictionary(storedSubentities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Whether this entity is `entity` or inherits from it (directly or through other
    /// entities), as Core Data's `isKindOf(entity:)`.
    public func isKindOf(entity: NSEntityDescription) -> Bool {
        var e: NSEntityDescription? = self
        while let current = e {
            if current === entity { return true }
            e = current.superentity
        }
        return false
    }

    /// A name this entity had in an earlier version of the model, as Core Data's: model
    /// migration matches an entity of the old model whose name (or renaming identifier)
    /// equals it, so a renamed entity keeps its objects. `nil` (the default) means the
    /// entity's ``name``. Part of the model's equality.
    @exclusivity(unchecked) public var renamingIdentifier: String? {
        didSet { checkMutable() }
    }

    /// A string that, as in Core Data, enters the entity's version hash: change it to mark a
    /// model version as different when the entity's structure is the same but the meaning
    /// of its data changed. `nil` by default. Part of the model's equality.
    @exclusivity(unchecked) public var versionHashModifier: String? {
        didSet { checkMutable() }
    }

    /// The model the entity belongs to, once it is added to one.
    public internal(set) weak var managedObjectModel: NSManagedObjectModel?

    /// The entity's index in the sealed model (entities are indexed in name order).
    @exclusivity(unchecked) var index: Int32 = -1

    /// Set, with release ordering, after `seal(index:)` has built every lookup table.
    private let sealedFlag = Atomic<Bool>(false)

    /// Whether the entity's model is sealed and its lookup tables are built. One acquiring
    /// load (a plain load on x86): the hot paths asked the model instead, which took a weak
    /// load and a lock per object. Acquire pairs with the release in `seal(index:)`, so a
    /// thread that sees `true` also sees the finished tables.
    var isSealed: Bool { sealedFlag.load(ordering: .acquiring) }

    /// Property name → storage index; filled when the model is sealed.
    @exclusivity(unchecked) private(set) var indexByName: [String: Int] = [:]

    /// What each slot holds, by index; filled when the model is sealed so that hot paths
    /// (faulting, saving) need no dynamic casts of property descriptions.
    enum SlotKind {
        case attribute, transientAttribute, toOne, toMany
        var isTransient: Bool { self == .transientAttribute }
    }

    /// The kind of each slot (sealed models only).
    @exclusivity(unchecked) private(set) var slotKinds: [SlotKind] = []
    /// Whether every property is a persistent attribute (sealed models only): then a saved
    /// row holds all of an object's values, and decoding it gives back the same slots.
    @exclusivity(unchecked) private(set) var hasOnlyPersistentAttributes = false
    /// Whether any property is a transient attribute (sealed models only).
    @exclusivity(unchecked) private(set) var hasTransientAttributes = false
    /// Whether the entity's class opted in to Swift Observation (``ObservableManagedObject``;
    /// sealed models only): reads of its objects' properties then report to Observation.
    @exclusivity(unchecked) private(set) var observesReads = false
    /// The slots of a new object: default values and empty relationships (sealed models only).
    @exclusivity(unchecked) private(set) var defaultSlots: ContiguousArray<Slot> = []
    /// The values of a new object, when the entity has persistent attributes only (sealed
    /// models only; see `NSManagedObject.ValueStorage`).
    @exclusivity(unchecked) private(set) var defaultValues: [StoreValue] = []
    /// The derived attributes, by slot (sealed models only; empty for most entities).
    @exclusivity(unchecked) private(set) var derivedSlots: [(slot: Int, description: NSDerivedAttributeDescription)] = []
    /// The relationship slots through which a change of an object of this entity reaches an
    /// object whose derived sum reads it (the inverse of a summed relationship; sealed
    /// models only, set by the model).
    @exclusivity(unchecked) var derivationSources: [Int] = []
    /// The properties with validation predicates, by index (sealed models only).
    @exclusivity(unchecked) private(set) var predicateValidatedSlots: [Int] = []

    /// The slots validation must look at (sealed models only): see ``constrainedSlots(in:)``.
    @exclusivity(unchecked) private(set) var constrainedSlots: [(index: Int, isAttribute: Bool)] = []

    /// Indexes of the properties that built-in validation checks: required persistent
    /// attributes, and relationships that are required or have count limits. (Validating
    /// every property of every object, casting each description and reading its flags, was
    /// a tenth of saving 100,000 inserts.)
    /// In property order, so that problems are reported in that order.
    static func constrainedSlots(in properties: [NSPropertyDescription]) -> [(index: Int, isAttribute: Bool)] {
        var result: [(index: Int, isAttribute: Bool)] = []
        for (i, p) in properties.enumerated() where !p.isTransient {
            if p is NSAttributeDescription {
                if !p.isOptional { result.append((i, true)) }
            } else if let r = p as? NSRelationshipDescription, !r.isOptional || (r.isToMany && (r.minCount > 0 || r.maxCount > 0)) {
                result.append((i, false))
            }
        }
        return result
    }

    /// Caches which `@Attribute`/`@Relationship` storage key path belongs to which property.
    /// Guarded by its own lock: objects on any queue may resolve key paths concurrently.
    let storageKeyPathIndex = Lock<[StorageKeyPath: Int]>([:])
    /// The same answers by key path identity, without a lock (the fast path).
    @usableFromInline let storageSlotCache = KeyPathSlotCache()

    /// Caches which attribute a property key path (`\Book.title`) reads; -1 for none.
    let wrappedKeyPathIndex = Lock<[StorageKeyPath: Int]>([:])
    /// Which relationship a key path of the class reads (-1: none); see
    /// `relationshipIndex(forKeyPath:)`.
    let relationshipKeyPathIndex = Lock<[StorageKeyPath: Int]>([:])

    /// Creates an empty entity description, as Core Data's `NSEntityDescription()`.
    public init() {
        self.name = ""
        self.managedObjectClassName = "NSManagedObject"
        self.managedObjectClass = NSManagedObject.self
    }

    deinit {
        // Properties and sub-entities may outlive their entity; they must not keep an
        // unowned reference to it.
        for p in ownProperties { p.detach(from: self) }
        for sub in storedSubentities where sub.superentityOwner == ObjectIdentifier(self) {
            sub.storedSuperentity = nil
            sub.superentityOwner = nil
        }
    }

    /// Creates an entity description with a name, a class and properties.
    public convenience init(
        name: String,
        managedObjectClass: NSManagedObject.Type = NSManagedObject.self,
        properties: [NSPropertyDescription] = []
    ) {
        self.init()
        self.name = name
        self.managedObjectClass = managedObjectClass
        self.managedObjectClassName = String(describing: managedObjectClass)
        self.properties = properties
    }

    /// The entity's properties keyed by name.
    public var propertiesByName: [String: NSPropertyDescription] {
        Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The entity's attributes keyed by name.
    public var attributesByName: [String: NSAttributeDescription] {
        Dictionary(
            properties.compactMap { $0 as? NSAttributeDescription }.map { ($0.name, $0) },
            uniquingKeysWith: { a, _ in a })
    }

    /// The entity's relationships keyed by name.
    public var relationshipsByName: [String: NSRelationshipDescription] {
        Dictionary(
            properties.compactMap { $0 as? NSRelationshipDescription }.map { ($0.name, $0) },
            uniquingKeysWith: { a, _ in a })
    }

    /// The relationships of this entity whose destination is `entity`.
    public func relationships(forDestination entity: NSEntityDescription) -> [NSRelationshipDescription] {
        properties.compactMap { $0 as? NSRelationshipDescription }.filter { $0.destinationEntity === entity }
    }

    /// Returns the entity named `entityName` in the model of `context`'s coordinator, or `nil`.
    /// Safe from any thread: it reads the coordinator through its lock, not the context's
    /// queue-confined copy.
    public static func entity(forEntityName entityName: String, in context: NSManagedObjectContext) -> NSEntityDescription? {
        context.persistentStoreCoordinator?.managedObjectModel.entitiesByName[entityName]
    }

    /// Creates an object of the entity named `entityName` and inserts it into `context`.
    /// Traps when the model has no such entity (Core Data raises an exception).
    public static func insertNewObject(forEntityName entityName: String, into context: NSManagedObjectContext) -> NSManagedObject {
        guard let entity = entity(forEntityName: entityName, in: context) else {
            programmerError(
                "PersistenceKit: insertNewObject(forEntityName: \"\(entityName)\") — the model of context "
                    + "'\(context.debugName)' has no entity with that name. Known entities: "
                    + (context.persistentStoreCoordinator?.managedObjectModel.entities.map(\.name).sorted().joined(separator: ", ") ?? "none"))
        }
        return entity.managedObjectClass.init(entity: entity, insertInto: context)
    }

    // MARK: Sealed lookups

    /// The property stored at `index` (sealed models only).
    func property(at index: Int) -> NSPropertyDescription { properties[index] }

    /// The storage index of the property named `name`, or `nil`.
    func propertyIndex(named name: String) -> Int? {
        if isSealed { return indexByName[name] }
        return properties.firstIndex { $0.name == name }
    }

    /// Builds lookup tables; called once by the model when it is sealed.
    func seal(index: Int32) {
        var byName: [String: Int] = [:]
        let inherited = properties.count - ownProperties.count
        for (i, p) in properties.enumerated() {
            // An inherited property keeps its ancestor as its entity; its index there is the
            // same (inherited properties come first, in the ancestor's order).
            p.index = i
            if i >= inherited { p.entity = self }
            if byName[p.name] == nil { byName[p.name] = i }
            if let a = p as? NSAttributeDescription { a.resolveDefault() }
        }
        indexByName = byName
        slotKinds = properties.map { p in
            if let a = p as? NSAttributeDescription { return a.isTransient ? .transientAttribute : .attribute }
            return (p as? NSRelationshipDescription)?.isToMany == true ? .toMany : .toOne
        }
        hasOnlyPersistentAttributes = slotKinds.allSatisfy { $0 == .attribute }
        hasTransientAttributes = slotKinds.contains(.transientAttribute)
        observesReads = managedObjectClass is any ObservableManagedObject.Type
        constrainedSlots = Self.constrainedSlots(in: properties)
        predicateValidatedSlots = properties.indices.filter { !properties[$0].validationPredicates.isEmpty }
        derivedSlots = properties.enumerated().compactMap { i, p in
            (p as? NSDerivedAttributeDescription).flatMap { $0.derivation == nil ? nil : (i, $0) }
        }
        uniqueColumns = resolvedUniquenessConstraints(byName: byName)
        defer {
            self.index = index
            sealedFlag.store(true, ordering: .releasing)
        }
        defaultValues = properties.map { p in (p as? NSAttributeDescription)?.defaultStoreValue ?? .null }
        defaultSlots = ContiguousArray(
            properties.map { p -> Slot in
                if let a = p as? NSAttributeDescription { return .value(a.defaultStoreValue ?? .null) }
                if let r = p as? NSRelationshipDescription, r.isToMany { return .toMany([]) }
                return .toOne(nil)
            })
    }

    func checkMutable() {
        if let model = managedObjectModel, model.isSealed {
            programmerError(
                "PersistenceKit: entity '\(name)' was modified after its model was used by a coordinator. "
                    + "Rule: a model is immutable once in use; build a new model instead.")
        }
    }

    /// Identity: an entity description equals only itself (compare models with the
    /// model's `==`, which compares their entities by content).
    public static func == (lhs: NSEntityDescription, rhs: NSEntityDescription) -> Bool { lhs === rhs }
    /// Hashes by identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// A readable summary for logs and messages.
    public var description: String { "NSEntityDescription(\(name))" }

    /// The canonical form of the entity used by model equality and the version hash:
    /// properties sorted by name, class name excluded (as in Core Data's version hashes).
    /// Inherited properties are described by the entity that declares them.
    var canonicalDescription: String { describe(renaming: true) }

    /// The canonical form without renaming identifiers: what the version hash reads.
    var hashDescription: String { describe(renaming: false) }

    private func describe(renaming: Bool) -> String {
        let props = ownProperties.map { $0.describe(renaming: renaming) }.sorted().joined(separator: "; ")
        return "entity \(name)\(inheritanceDescription(renaming: renaming)) { \(props) }\(uniquenessDescription)"
    }

    /// The canonical form with the properties in their order, which is the order a store
    /// keeps a row's values in (see `NSManagedObjectModel.layoutHash`).
    var layoutDescription: String {
        let props = properties.map(\.hashDescription).joined(separator: "; ")
        return "entity \(name)\(inheritanceDescription(renaming: false)) { \(props) }\(uniquenessDescription)"
    }

    /// The super-entity, abstract flag, renaming identifier (when `renaming`) and version
    /// hash modifier in the canonical form: empty when none is set, so that models without
    /// them keep the hashes (and stores) they had.
    func inheritanceDescription(renaming: Bool) -> String {
        var s = ""
        if let superentity { s += " : \(superentity.name)" }
        if isAbstract { s += " abstract" }
        if renaming, let renamingIdentifier { s += " renaming=\(renamingIdentifier)" }
        if let versionHashModifier { s += " hashModifier=\(versionHashModifier)" }
        return s
    }
}
