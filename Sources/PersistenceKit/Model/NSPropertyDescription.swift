import Foundation

/// The common part of attribute and relationship descriptions: a named property of an
/// entity.
///
/// # Thread safety
/// Descriptions are mutable while their model is being built. Once the model is used by a
/// coordinator it is sealed: setters then trap, and the description may be read from any
/// thread.
public class NSPropertyDescription: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: every stored property is written only before the owning model is
    // sealed (setters call `checkMutable()`, which traps afterwards), and a model is sealed
    // before it is shared with a coordinator, so concurrent access only ever reads. The
    // entity link (`storedEntity`, `owner`) is also cleared by `detach(from:)`: when an
    // unsealed entity drops the property (its `properties` setter traps once sealed) or in
    // the entity's deinit, when no model shares the entity any more.
    // The same facts make `@exclusivity(unchecked)` safe (see NSEntityDescription): no two
    // accesses of one of these properties ever overlap.

    /// The property's name, unique within its entity.
    @exclusivity(unchecked) public var name: String {
        didSet { checkMutable() }
    }

    /// Whether the property may be `nil` (or, for a to-many relationship, empty) when saved.
    @exclusivity(unchecked) public var isOptional: Bool = true {
        didSet { checkMutable() }
    }

    /// Whether the property is transient: kept in memory by objects but never written to a
    /// store.
    @exclusivity(unchecked) public var isTransient: Bool = false {
        didSet { checkMutable() }
    }

    /// A name this property had in an earlier version of the model, as Core Data's: model
    /// migration matches a property of the old entity whose name (or renaming identifier)
    /// equals it, so a renamed attribute or relationship keeps its values. `nil` (the
    /// default) means the property's ``name``. Part of the model's equality.
    @exclusivity(unchecked) public var renamingIdentifier: String? {
        didSet { checkMutable() }
    }

    /// A string that, as in Core Data, enters the property's version hash: change it to mark
    /// a model version as different when the property's type and options are the same but
    /// the meaning of its values changed. `nil` by default. Part of the model's equality.
    @exclusivity(unchecked) public var versionHashModifier: String? {
        didSet { checkMutable() }
    }

    /// The predicates a non-nil value of the property must satisfy when its object is
    /// validated (`SELF` is the value: `SELF >= 0`, `length <= 40`, `SELF MATCHES "[a-z]+"`),
    /// as Core Data's; empty by default. Set with
    /// ``setValidationPredicates(_:withValidationWarnings:)``. Not part of the model's
    /// equality or version hashes (as in Core Data, they do not change what is stored).
    @exclusivity(unchecked) public private(set) var validationPredicates: [NSPredicate] = []

    /// One warning per validation predicate, in order, as Core Data's: the message of the
    /// error a failing value gets. A warning naming one of Core Data's validation error
    /// codes (`"NSValidationStringTooLongError"`, …, the names an Xcode model's minimum,
    /// maximum and regular expression give) gives the error that code; any other text gives
    /// `NSManagedObjectValidationError` (1550) with that text.
    @exclusivity(unchecked) public private(set) var validationWarnings: [String] = []

    /// Sets ``validationPredicates`` and their ``validationWarnings`` (`nil`: none). A
    /// predicate without a warning gets a general message.
    public func setValidationPredicates(_ predicates: [NSPredicate]?, withValidationWarnings warnings: [String]?) {
        checkMutable()
        validationPredicates = predicates ?? []
        validationWarnings = warnings ?? []
    }

    /// The renaming identifier (when `renaming`) and version hash modifier in the canonical
    /// form: empty when neither is set, so that models without them keep the hashes (and
    /// stores) they had. The hashes leave the renaming identifier out, as Core Data's version
    /// hashes do: renaming nothing is no new version.
    func versioningDescription(renaming: Bool) -> String {
        var s = ""
        if renaming, let renamingIdentifier { s += " renaming=\(renamingIdentifier)" }
        if let versionHashModifier { s += " hashModifier=\(versionHashModifier)" }
        return s
    }

    /// The entity the property belongs to; set when the property is added to an entity, and
    /// `nil` again once it is removed from it or the entity is gone. Like Core Data's, the
    /// reference does not keep the entity alive.
    public internal(set) var entity: NSEntityDescription? {
        get { owner == nil ? nil : storedEntity }
        set {
            storedEntity = newValue
            owner = newValue.map(ObjectIdentifier.init)
        }
    }

    // `unowned`, not `weak`: a weak reference gives its target a side table, and every
    // retain of an entity — each object created or fetched retains its entity — then took
    // the runtime's slow path (measured: ~3% of inserting 100,000 objects). An unowned
    // reference traps if read after its target is gone, so the entity clears it (through
    // `detach(from:)`) when it drops the property and in its deinit; `owner` says whether
    // it is set without loading it.
    private unowned var storedEntity: NSEntityDescription?
    private var owner: ObjectIdentifier?

    /// Forgets `entity` if it is this property's entity. Reads no reference to it, so the
    /// entity may call this from its deinit.
    func detach(from entity: NSEntityDescription) {
        guard owner == ObjectIdentifier(entity) else { return }
        owner = nil
        storedEntity = nil
    }

    /// The property's position in its entity's storage, assigned when the model is sealed.
    @exclusivity(unchecked) var index: Int = -1

    init(name: String) {
        self.name = name
    }

    func checkMutable() {
        if let model = entity?.managedObjectModel, model.isSealed {
            programmerError(
                "PersistenceKit: property '\(entity?.name ?? "?").\(name)' was modified after its model was "
                    + "used by a coordinator. Rule: a model is immutable once in use; build a new model instead."
            )
        }
    }

    /// A one-line summary used by the model's canonical form and version hash.
    var canonicalDescription: String { describe(renaming: true) }

    /// The canonical form without the renaming identifier: what the version and layout
    /// hashes read.
    var hashDescription: String { describe(renaming: false) }

    /// The canonical form, with or without the renaming identifier (subclasses describe
    /// their own content here).
    func describe(renaming: Bool) -> String { "\(name)\(versioningDescription(renaming: renaming))" }

    /// A readable summary for logs and messages.
    public var description: String { canonicalDescription }
}

extension NSPropertyDescription: Hashable {
    /// Whether both are the same description (identity: a model holds each property once).
    public static func == (lhs: NSPropertyDescription, rhs: NSPropertyDescription) -> Bool { lhs === rhs }

    /// Hashes the description's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
