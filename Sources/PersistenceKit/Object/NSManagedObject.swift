import Foundation
import Observation

/// An object of the object graph: one record of an entity, owned by at most one context.
///
/// Subclass it and declare persisted properties with `@Attribute` and `@Relationship`, or
/// use it directly with ``value(forKey:)`` / ``setValue(_:forKey:)``.
///
/// ```swift
/// final class Book: NSManagedObject {
///     @Attribute var title: String = ""
///     @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var shelf: Shelf?
/// }
/// ```
///
/// # Thread safety
/// Managed objects are not `Sendable`. Use an object only on its context's queue (inside
/// `perform`/`performAndWait`, or on the main actor for a main-queue context); pass its
/// ``objectID`` to other contexts. Off-queue use traps when concurrency checks are on.
///
/// # Subclassing
/// A subclass must not declare designated initializers other than the required
/// ``init(entity:insertInto:)``; it inherits ``init(context:)``.
open class NSManagedObject: Hashable, CustomStringConvertible, NSFetchRequestResult {
    /// Where the object stands in its life. Guarded by the context's queue.
    struct Flags: OptionSet {
        let rawValue: UInt8
        /// Values not loaded yet; reading any property loads them.
        static let fault = Flags(rawValue: 1 << 0)
        /// Inserted into its context and not saved yet.
        static let inserted = Flags(rawValue: 1 << 1)
        /// Deleted in its context and not saved yet.
        static let deleted = Flags(rawValue: 1 << 2)
        /// Changed since the last save.
        static let updated = Flags(rawValue: 1 << 3)
        /// No longer usable: its deletion was saved or its context was reset.
        static let invalidated = Flags(rawValue: 1 << 4)
        /// A throwaway object that records which slot a key path reads.
        static let probe = Flags(rawValue: 1 << 5)
        /// Updated, and already listed in the context's unprocessed changes: further changes
        /// before the next `processPendingChanges()` need not tell the context again.
        static let changeRecorded = Flags(rawValue: 1 << 6)
        /// Inserted, and objects-did-change has announced the insert: deleting it before a
        /// save must be announced too.
        static let insertAnnounced = Flags(rawValue: 1 << 7)
    }

    /// State bits beside ``Flags`` (which is full).
    struct MoreFlags: OptionSet {
        let rawValue: UInt8
        /// `awakeFromInsert()` ran: Core Data calls it once in an object's life, so an
        /// object deleted before a save and inserted again does not get it a second time.
        static let awokenFromInsert = MoreFlags(rawValue: 1 << 0)
        /// The to-many slots hold the snapshot's lists, changed only by the edits the
        /// context records for the object (none while `toManyEditsRecorded` is clear). See
        /// `NSManagedObject+ToManyEdits.swift`.
        static let toManyEditsTracked = MoreFlags(rawValue: 1 << 1)
        /// The context holds an entry of to-many edits for the object. Only set with
        /// `toManyEditsTracked`.
        static let toManyEditsRecorded = MoreFlags(rawValue: 1 << 2)
        /// A detached object a fetch judges a row by (its predicate and sort read it): a
        /// fault holding the row not yet registered (a *row stand-in*), or a copy of a
        /// registered object's saved values. In no context, it resolves relationships
        /// through the context that is fetching (`NSManagedObjectContext.judging`), and its
        /// fault fires without `awakeFromFetch()`. See `fetchCandidates` in
        /// `NSManagedObjectContext+Fetching.swift`.
        static let rowStandIn = MoreFlags(rawValue: 1 << 3)
    }

    /// Whether this is a fetch's detached stand-in (see ``MoreFlags/rowStandIn``).
    final var isRowStandIn: Bool { moreFlags.contains(.rowStandIn) }

    /// Whether a loaded stand-in's persistent values differ from the row it was made from.
    final var wasWrittenSinceFetched: Bool {
        entity.properties.indices.contains { persistentValueDiffers(at: $0) }
    }

    /// Whether `awakeFromInsert()` ran (see ``MoreFlags/awokenFromInsert``).
    final var hasAwokenFromInsert: Bool {
        get { moreFlags.contains(.awokenFromInsert) }
        set { if newValue { moreFlags.insert(.awokenFromInsert) } else { moreFlags.remove(.awokenFromInsert) } }
    }

    /// The object's entity.
    public let entity: NSEntityDescription

    /// The object's ID: temporary until the object is saved or given a permanent ID.
    ///
    /// Made on first use from the object's key (see `ObjectKey`) and kept until the object
    /// gets a permanent ID. The first read must happen on the object's queue (it stores the
    /// ID); later reads may happen anywhere, as when another context merges a save
    /// notification's objects. The ID itself is `Sendable`.
    public internal(set) final var objectID: NSManagedObjectID {
        get {
            if let id = storedObjectID { return id }
            let id = NSManagedObjectID(entity: entity, objectKey: objectKey)
            storedObjectID = id
            return id
        }
        set {
            storedKey = newValue.objectKey
            storedObjectID = newValue
        }
    }

    /// The object's identity: the key the context registers it under. A new object gets a
    /// temporary key on first use (fetched objects get their permanent key at once).
    @inline(__always)
    final var objectKey: ObjectKey {
        if let k = storedKey { return k }
        return makeTemporaryKey()
    }

    @inline(never)
    private final func makeTemporaryKey() -> ObjectKey {
        let k = ObjectKey.nextTemporary()
        storedKey = k
        // Inserted objects are found by temporary ID through the context's `temporaries`,
        // which holds exactly those whose key exists: one made now joins it.
        if flags.contains(.inserted), let context = storedContext { context.temporaries.insert(self) }
        return k
    }

    /// Whether the object has a permanent key (a store row). Never makes a key.
    final var hasPermanentKey: Bool {
        if let k = storedKey { return !k.isTemporary }
        return false
    }

    /// Whether the object's temporary key (and so its temporary ID) was made. Never makes one.
    final var hasTemporaryKey: Bool { storedKey?.isTemporary == true }

    /// Whether the object's key is `key`. Compares in place: the registry asks this for
    /// every probe that meets an equal hash.
    @inline(__always)
    final func hasObjectKey(_ key: ObjectKey) -> Bool {
        storedKey == key
    }

    /// The object's store row; `nil` while it has no permanent key. Makes neither an ID
    /// object nor a temporary key (a save asks this of every inserted object).
    final var rowID: StoreRowID? { storedKey?.rowID }

    /// Gives the object a new key (and drops the ID made from the old one).
    final func setObjectKey(_ key: ObjectKey) {
        storedKey = key
        storedObjectID = nil
    }

    @exclusivity(unchecked) private final var storedKey: ObjectKey?
    // The small fields come right after `storedKey`, in the bytes its optional's tag leaves
    // before the next 8-byte boundary. Declared where they are used, each took 8 bytes with
    // its padding, and every object was 32 bytes larger (an eighth of an object; the memory
    // of new objects, in page faults, was a fifth of inserting 100,000 of them). Keep them
    // here. (`Flags`, `ValueStorage` and `MoreFlags` are one byte each.)
    @exclusivity(unchecked) final var flags: Flags = []
    @exclusivity(unchecked) final var valueStorage: ValueStorage = .slots
    /// Bits that did not fit in `flags`. (One byte, in the gap before
    /// `storedInsertionIndex`: the object did not grow.)
    @exclusivity(unchecked) final var moreFlags: MoreFlags = []
    @exclusivity(unchecked) private final var storedInsertionIndex: Int32 = -1
    /// The ID made from `storedKey`, once asked for.
    @exclusivity(unchecked) private final var storedObjectID: NSManagedObjectID?

    /// The context that owns the object; `nil` once the object was removed from it (its
    /// deletion saved, the context reset or rolled back over its insertion).
    public internal(set) final var managedObjectContext: NSManagedObjectContext? {
        get {
            // Checked only on the context's queue, where reading its registry is allowed.
            assert(
                !(contextQueue?.isCurrent ?? false)
                    || storedContext.map { $0.insertions.contains(self) || $0.registeredByID.contains(self) } ?? true,
                "PersistenceKit invariant: an object with a context is registered or inserted in it")
            if let context = storedContext { return context }
            // A fetch's stand-in answers the fetching context, as the registered object it
            // stands for would: a computed property used in a predicate may read its
            // object's context, and must find one.
            return moreFlags.contains(.rowStandIn) ? NSManagedObjectContext.judging : nil
        }
        // Takes the queue from the new value, not by reading the context reference back
        // (measured when that reference was weak: the load and its retain were a tenth of
        // registering a fetched row).
        set {
            if newValue == nil {
                // Leaving the context, where its edits live (relative to the snapshot). The
                // context counts departures itself, per batch (see `departures`): counted
                // here, each object retained its context on the way out, a slow-path
                // retain (a context has a side table) for every object a context's deinit
                // lets go of (measured: +13% instructions freeing a context of 25,000).
                forgetToManyEdits()
            } else {
                // Joining one (objects never move between contexts directly). Nothing
                // opaque is called on this path: a call here made the compiler retain the
                // new context around it, on every insert and every fetched row, and a
                // context has a side table, so each retain is the runtime's slow path
                // (measured: +2.2% instructions for inserting and saving 100,000 objects).
                assert(!moreFlags.contains(.toManyEditsTracked), "PersistenceKit internal error: \(objectID) joins a context with tracked to-many edits")
            }
            storedContext = newValue
            contextQueue = newValue?.queue
        }
    }

    // Not `weak`: a weak reference gives the context a side table, and from then on every
    // retain and release of the context takes the runtime's slow path (measured: a twentieth
    // of inserting 100,000 objects, from three weak loads per object). `unowned(unsafe)` is
    // safe because of this invariant, kept by every place that touches the registry:
    //   an object's `storedContext` is non-nil only while the object is in that context's
    //   `registeredByID` or `insertions` (inserted objects without a permanent ID are kept
    //   out of the registry: see `NSManagedObjectContext.temporaries`).
    // Both hold their objects strongly, and the context's deinit invalidates every object in
    // them (which sets this to nil) before the context's memory goes away, so the reference
    // never outlives its target. Removing an object from a registry must go
    // with `invalidate()` or `managedObjectContext = nil` (objects given permanent keys are
    // re-registered by `registerPermanentKeys(of:)` right after the pass that keys them,
    // which reads no object's context), and an object that `ObjectRegistry.insert` displaces
    // must be invalidated or refused. Debug builds check the invariant on each read (ContextLinkTests).
    //
    // Kept as the context's address, unretained, which is what `unowned(unsafe)` keeps: the
    // same 8 bytes and the same invariant. As an `unowned(unsafe) var`, every read made a
    // strong copy, so `isOwned(by:)`, meant to compare without a reference, retained and
    // released the context (a side-table retain, the runtime's slow path) for each object
    // it checked, as a save announcing its inserts does for every one (measured in A/B
    // runs: 1–3% of inserting and saving 100,000 objects).
    @exclusivity(unchecked) private final var storedContextAddress: UnsafeMutableRawPointer?

    /// The owning context (see the invariant above); reading it takes a strong reference.
    private final var storedContext: NSManagedObjectContext? {
        @inline(__always) get {
            storedContextAddress.map { Unmanaged<NSManagedObjectContext>.fromOpaque($0).takeUnretainedValue() }
        }
        @inline(__always) set { storedContextAddress = newValue.map { Unmanaged.passUnretained($0).toOpaque() } }
    }

    /// For a context's deinit, on an object that only the context holds and that holds no
    /// other object: what `invalidate()` does for such an object, without emptying values
    /// that go with it anyway. No reference to the context is taken.
    @inline(__always)
    final func detachFromFreedContext() {
        assert(!moreFlags.contains(.toManyEditsRecorded), "PersistenceKit internal error: \(objectID) has to-many edits")
        storedContext = nil
        contextQueue = nil
        flags = [.invalidated]
        moreFlags.remove(.toManyEditsTracked)
    }

    /// Whether no store commit happened since the owning context fetched the rows its
    /// faults hold (see ``CommitClock``). Read through the queue: going through the context
    /// retained it for every fault fired (see `ContextQueue.heldRowsSince`).
    @inline(__always)
    final var noCommitSinceRowsWereFetched: Bool {
        contextQueue?.heldRowsSince.load(ordering: .relaxed) == CommitClock.now
    }

    /// The owning context, for bookkeeping that must not go through the accessor's debug
    /// check (see `NSManagedObject+ToManyEdits.swift`).
    @inline(__always)
    final var owningContext: NSManagedObjectContext? { storedContext }

    /// Whether `context` owns the object — `managedObjectContext === context` without taking
    /// a reference to the context (for checks over many objects).
    @inline(__always)
    final func isOwned(by context: NSManagedObjectContext) -> Bool {
        storedContextAddress == Unmanaged.passUnretained(context).toOpaque()
    }

    /// The owning context's queue, held strongly so that the queue check on every property
    /// access needs no load of the context (measured when the context reference was weak:
    /// that load was the largest single cost of a property read).
    @exclusivity(unchecked) final var contextQueue: ContextQueue?

    // Internal state is `final`: the class is `open`, and without it every read of these
    // on the hot paths (property access, faulting, saving) could go through the vtable.
    //
    // `@exclusivity(unchecked)` on the hot state below: Swift checks class properties for
    // overlapping accesses at run time, which cost about a tenth of the instructions of an
    // insert-and-save of 100,000 objects (measured with callgrind). Why dropping the check is
    // safe: the properties are internal, so only this module's code touches them; they are
    // confined to the owning context's queue (checked on entry); and no access to one of
    // them is held across a call that could reach the same property again — mutations are
    // single statements or calls into value-type methods (Array, Set, ObjectRegistry) that
    // never call back into managed objects or user code. Keep it that way when editing:
    // never pass these `inout` to a closure-taking helper.

    /// Current values, one slot per property of ``entity``; empty while a fault.
    ///
    /// The values do not always live here (see ``valueStorage``): reading `slots` or writing
    /// through it first moves them into `storedSlots`; assigning it makes `storedSlots` the
    /// home of the values again.
    @inline(__always) final var slots: ContiguousArray<Slot> {
        _read {
            loadSlots()
            yield storedSlots
        }
        // A write through `slots` may change a to-many, so it ends the tracking of to-many
        // edits (see `MoreFlags.toManyEditsTracked`); the tracked edits write `storedSlots`.
        _modify {
            loadSlots()
            forgetToManyEdits()
            yield &storedSlots
        }
        set {
            forgetToManyEdits()
            valueStorage = .slots
            storedValues = []
            storedSlots = newValue
        }
    }
    @exclusivity(unchecked) final var storedSlots: ContiguousArray<Slot>

    /// Where an object's current values live.
    ///
    /// Most objects are read far more than written, and a slot array per object was a large
    /// share of fetching and saving: decoding every fetched row into one was an eighth of a
    /// filtered fetch, and building one per new object, then a second array of values for
    /// the store, a tenth of inserting 100,000 objects (measured with callgrind). So a
    /// fetched or saved object keeps its values in its snapshot, and an object of an entity
    /// of persistent attributes only keeps them in one array of store values that the save
    /// hands to the store and keeps as the snapshot. Only what needs slots makes them.
    enum ValueStorage: UInt8 {
        /// In `storedSlots`.
        case slots
        /// In `storedSnapshot` (unchanged since it was fetched or saved); `storedSlots` and
        /// `storedValues` are empty. The values are `decode(storedSnapshot!)`.
        case snapshot
        /// In `storedValues`, one per property (the entity has persistent attributes only);
        /// `storedSlots` is empty.
        case values
        /// The entity's `defaultValues`, unchanged and held nowhere (the entity has persistent
        /// attributes only; `storedSlots` and `storedValues` are empty). Only an object made
        /// outside a context starts so; inserting it into one, or writing to it, moves the
        /// values into `storedValues`.
        case defaults
    }
    /// The values while `valueStorage == .values`; empty otherwise.
    @exclusivity(unchecked) final var storedValues: [StoreValue] = []

    /// Makes `storedSlots` hold the values, for hot paths that then index `storedSlots`
    /// directly (the accessors of `slots` stayed calls, measured in an insert-and-save).
    @inline(__always)
    final func loadSlots() {
        if valueStorage != .slots { moveValuesIntoSlots() }
    }

    /// The values last read from or written to the store, with the row version.
    ///
    /// Setting it keeps the current values: while they still live in the old snapshot, they
    /// move out of it first.
    @inline(__always) final var snapshot: StoreRow? {
        _read { yield storedSnapshot }
        set {
            if valueStorage == .snapshot { moveValuesOutOfSnapshot() }
            forgetToManyEdits()  // they are relative to the snapshot
            storedSnapshot = newValue
        }
    }
    @exclusivity(unchecked) final var storedSnapshot: StoreRow?
    /// The object's position in its context's list of unsaved inserts; -1 when not in it.
    /// (Stored in 32 bits: a context holds fewer than 2^31 unsaved inserts.)
    @inline(__always) final var insertionIndex: Int {
        get { Int(storedInsertionIndex) }
        set { storedInsertionIndex = Int32(newValue) }
    }
    /// The row a save in progress (or `obtainPermanentIDs`) allocated for this object while
    /// it still has a temporary ID; `nil` otherwise. Always a row of the object's own entity.
    @inline(__always) final var pendingRow: StoreRowID? {
        get {
            storedPendingKey == Self.noPendingKey ? nil : StoreRowID(entity: entity.index, primaryKey: storedPendingKey)
        }
        set {
            assert(newValue.map { $0.entity == entity.index } ?? true, "PersistenceKit internal error: a pending row of another entity")
            programmerCheck(
                newValue?.primaryKey != Self.noPendingKey,
                "PersistenceKit: the store handed out primary key \(Self.noPendingKey), which no store may use.")
            storedPendingKey = newValue?.primaryKey ?? Self.noPendingKey
        }
    }
    /// `pendingRow`'s primary key, `noPendingKey` for none. Only the key: the entity is the
    /// object's own, and a `StoreRowID?` took 24 bytes of every object.
    @exclusivity(unchecked) private final var storedPendingKey: Int64 = NSManagedObject.noPendingKey
    /// The one key `storedPendingKey` cannot hold (`Int64.min`; not 0, which a custom store
    /// may hand out: ``PersistentStore/allocatePrimaryKeys(entity:count:)`` rules out only
    /// `Int64.min`).
    static let noPendingKey = Int64.min
    /// For probe objects: the last attribute slot read.
    final var probedSlot: Int? {
        get { storedProbedSlotOrEpoch < 0 ? nil : Int(storedProbedSlotOrEpoch) }
        set { storedProbedSlotOrEpoch = Int32(newValue ?? -1) }
    }
    /// For objects in a context: the context's count of departed objects when the tracking
    /// of to-many edits started (see `NSManagedObject+ToManyEdits.swift`).
    final var toManyTrackingEpoch: UInt32 {
        get { UInt32(bitPattern: storedProbedSlotOrEpoch) }
        set { storedProbedSlotOrEpoch = Int32(bitPattern: newValue) }
    }
    /// Two uses, one per kind of object: a probe's `probedSlot` (-1 for none), any other
    /// object's `toManyTrackingEpoch`. A probe never has a context, so it never tracks
    /// to-many edits. 4 bytes where an `Int?` took 16 (a separate `Int?` made every object 16
    /// bytes larger: measured 216 → 232 bytes).
    @exclusivity(unchecked) private final var storedProbedSlotOrEpoch: Int32 = -1
    /// State few objects have (see ``ObjectExtras``), made when the first of it is set;
    /// `nil` for most objects. One field for all of it: each field of its own made every
    /// object 8 bytes larger, which fetches of many objects pay for. Guarded by the
    /// context's queue.
    @exclusivity(unchecked) final var extras: ObjectExtras?

    /// The object's Observation registrar, made by the first tracked read of an observable
    /// object in an instrumented context (see `NSManagedObject+Observation.swift`); `nil` for
    /// every other object. Guarded by the context's queue.
    final var observationRegistrar: ObservationRegistrar? {
        get { extras?.observationRegistrar }
        set {
            if let extras {
                extras.observationRegistrar = newValue
            } else if let newValue {
                extras = ObjectExtras(observationRegistrar: newValue)
            }
        }
    }

    /// The order of each ordered to-many relationship that has one, by slot: the targets'
    /// identities, first to last (see `NSManagedObject+OrderedToMany.swift`); `nil` for every
    /// object without ordered relationships. Identities, not references: the slot's set holds
    /// the targets, and a second strong list would need clearing everywhere a slot is.
    /// Guarded by the context's queue.
    final var toManyOrders: [Int: [ObjectIdentifier]]? {
        get { extras?.toManyOrders }
        set {
            if let extras {
                extras.toManyOrders = newValue
            } else if let newValue {
                let made = ObjectExtras()
                made.toManyOrders = newValue
                extras = made
            }
        }
    }

    /// Creates an object of `entity` and, when `context` is given, inserts it there (which
    /// calls ``awakeFromInsert()``).
    ///
    /// Traps when `context` uses a model that does not contain `entity`.
    public required init(entity: NSEntityDescription, insertInto context: NSManagedObjectContext?) {
        if entity.isSealed && entity.hasOnlyPersistentAttributes {
            self.storedSlots = []
            if context == nil {
                // Outside a context: every fault and every fetch's stand-in is made so, and
                // takes its row at once. Taking the entity's shared array here and dropping
                // it for the row cost two atomic operations on an object that every object
                // of the entity shares (measured in A/B runs: 2% of 100 indexed fetches).
                self.valueStorage = .defaults
            } else {
                self.storedValues = entity.defaultValues
                self.valueStorage = .values
            }
        } else {
            self.storedSlots = Self.defaultSlots(for: entity)
        }
        // Stored last: the store is then the parameter's last use and takes it over. Stored
        // first, the entity was retained for the field and the parameter released at the
        // end: an extra pair of atomic operations on the entity, which every object of the
        // entity shares (per object made by a fetch, too).
        self.entity = consume entity
        if let context {
            context.insert(self)
        }
    }

    /// Creates an object of the entity that the context's model maps to this class and
    /// inserts it into `context`.
    ///
    /// Traps when the context's model has no entity for this class.
    public convenience init(context: NSManagedObjectContext) {
        let entity = context.entityDescription(for: Self.self)
        self.init(entity: entity, insertInto: context)
    }

    /// Slots holding each property's default value: the entity's shared template once the
    /// model is sealed (copied on first write), built here only for unsealed models.
    static func defaultSlots(for entity: NSEntityDescription) -> ContiguousArray<Slot> {
        if entity.isSealed { return entity.defaultSlots }
        return ContiguousArray(
            entity.properties.map { p -> Slot in
                if let a = p as? NSAttributeDescription { return .value(a.defaultStoreValue ?? .null) }
                if let r = p as? NSRelationshipDescription, r.isToMany { return .toMany([]) }
                return .toOne(nil)
            })
    }


    // MARK: Lifecycle hooks
    //
    // Overridable hooks must live in the class body: Swift cannot override members declared
    // in extensions of a non-Objective-C class.

    /// Called once when the object is inserted into a context (not when it is fetched). Set
    /// initial values here; the changes count as part of the insert.
    open func awakeFromInsert() {}

    /// Called when a fault is fired and the object's values were loaded from the store.
    open func awakeFromFetch() {}

    /// Called on every inserted, updated or deleted object at the start of a save, before
    /// validation. Changes made here are saved too.
    open func willSave() {}

    /// Called on every inserted, updated or deleted object after its save reached the store.
    open func didSave() {}

    /// Called once when the object is deleted: inside `delete(_:)`, before it returns (for an
    /// object a cascade deletes, when the context processes pending changes and the cascade
    /// reaches it); before delete rules are applied to its relationships, which still hold
    /// their values here.
    open func prepareForDeletion() {}

    /// Called before the object's values are dropped to turn it into a fault.
    open func willTurnIntoFault() {}

    /// Called after the object became a fault.
    open func didTurnIntoFault() {}

    /// Checks the object before an insert is saved: required attributes and to-one
    /// relationships have values, to-many relationships respect their counts. Override to
    /// add checks; call `super` to keep these.
    ///
    /// - Throws: ``CoreDataError`` with a validation code; several problems of one object
    ///   come back as one error with code `.validationMultipleErrors`.
    open func validateForInsert() throws {
        try validatePropertyConstraints()
    }

    /// Checks the object before an update is saved; same checks as ``validateForInsert()``.
    open func validateForUpdate() throws {
        try validatePropertyConstraints()
    }

    /// Checks the object before a deletion is saved: fails while a relationship with the
    /// deny delete rule still has targets.
    open func validateForDelete() throws {
        try validateDenyRules()
    }

    // MARK: State

    /// Whether the object was inserted into its context and not saved yet.
    public var isInserted: Bool { checkedFlags().contains(.inserted) }
    /// Whether the object was changed since the last save (and is not inserted or deleted).
    public var isUpdated: Bool { checkedFlags().contains(.updated) }
    /// Whether the object was deleted in its context and the deletion is not saved yet.
    public var isDeleted: Bool { checkedFlags().contains(.deleted) }
    /// Whether the object's values are not loaded yet (they load on first access).
    public var isFault: Bool { checkedFlags().contains(.fault) }
    /// 0 when the object's values are loaded, 1 while it is a fault (Core Data promises only
    /// "0 when fully initialized, some other value otherwise"). Does not fire the fault.
    public var faultingState: Int { checkedFlags().contains(.fault) ? 1 : 0 }

    /// Whether the object has unsaved changes: inserted, deleted or updated.
    public var hasChanges: Bool { !checkedFlags().isDisjoint(with: [.inserted, .deleted, .updated]) }

    private func checkedFlags() -> Flags {
        checkQueue("reading the object's state")
        return flags
    }

    // MARK: Identity

    /// Identity: an object equals only itself (one object per ID per context).
    public static func == (lhs: NSManagedObject, rhs: NSManagedObject) -> Bool { lhs === rhs }
    /// Hashes by identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// The hash that `Set` and `Dictionary` use: the object's address, mixed without SipHash
    /// (see `identityHash`). Consistent with `==`, which compares identity.
    public func _rawHashValue(seed: Int) -> Int {
        identityHash(UInt(bitPattern: ObjectIdentifier(self)), seed: seed)
    }

    /// A readable summary for logs and messages.
    open var description: String {
        var state: [String] = []
        if flags.contains(.fault) { state.append("fault") }
        if flags.contains(.inserted) { state.append("inserted") }
        if flags.contains(.updated) { state.append("updated") }
        if flags.contains(.deleted) { state.append("deleted") }
        if flags.contains(.invalidated) { state.append("invalidated") }
        return "<\(entity.name) \(objectID.uriRepresentation().absoluteString)\(state.isEmpty ? "" : " " + state.joined(separator: ","))>"
    }
}

/// What one property slot of an object holds.
enum Slot {
    /// An attribute value.
    case value(StoreValue)
    /// A to-one relationship's target.
    case toOne(NSManagedObject?)
    /// A to-many relationship's targets.
    case toMany(Set<NSManagedObject>)
    /// A to-one target read from the store and not yet turned into an object.
    case unresolvedToOne(StoreRowID?)
    /// To-many targets read from the store and not yet turned into objects.
    case unresolvedToMany([StoreRowID])
}
