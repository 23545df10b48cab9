import Foundation
import Synchronization

/// How a context runs: on the main queue (bound to the main actor) or on a private queue
/// of its own.
public enum NSManagedObjectContextConcurrencyType: UInt, Sendable {
    /// Not supported (deprecated in Core Data); kept so that code naming it compiles.
    case confinementConcurrencyType = 0
    /// The context owns a private serial queue; use it inside `perform`/`performAndWait`.
    case privateQueueConcurrencyType = 1
    /// The context runs on the main queue: use it from the main actor.
    case mainQueueConcurrencyType = 2
}

/// A scratchpad of managed objects over a coordinator: it fetches, tracks changes, keeps
/// one object per ID (uniquing), and saves all of its changes as one transaction.
///
/// # Thread safety
/// A context and its objects belong to the context's queue. `perform(_:)`,
/// `performAndWait(_:)`, `perform(schedule:isolation:_:)`, `name`, `concurrencyType`,
/// `persistentStoreCoordinator`, `didSaveObjectIDs()` and `description` may be used from
/// any thread; every other member must run on the queue — inside a perform block, or on the main actor for
/// a main-queue context. Off-queue use traps with a message naming the context, always in
/// debug builds and in release builds when the environment variable
/// `PERSISTENCEKIT_CONCURRENCY_DEBUG=1` is set.
///
/// Guarantees: perform blocks run one at a time in FIFO order; `performAndWait` is
/// reentrant; notifications are posted on the context's queue.
public final class NSManagedObjectContext: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: `queue`, `concurrencyType` and the Lock-guarded boxes are
    // thread-safe; every other stored property is read and written only on `queue`, which
    // `assertOnQueue` enforces at each entry point (perform/performAndWait being the only
    // members that run off the queue, and they touch nothing but `queue`).

    /// The context's concurrency type.
    public let concurrencyType: NSManagedObjectContextConcurrencyType
    let queue: ContextQueue

    /// The coordinator the context reads and saves through: for a child context, one whose
    /// store is its parent (see `ParentContextStore`).
    let coordinatorBox = Lock<NSPersistentStoreCoordinator?>(nil)
    /// Bumped (after the box changes) whenever the coordinator is set, so that the queue can
    /// keep its own copy and check it with one atomic load instead of taking the box's lock
    /// (measured: the lock was taken for every object created).
    private let coordinatorGeneration = Atomic<Int>(0)
    /// `name` as set, and what messages call the context when it has none (the container's
    /// view context: "viewContext").
    private let nameBox = Lock<(given: String?, fallback: String?)>((nil, nil))
    let didSaveStreams = Lock<[UUID: AsyncStream<NSManagedObjectContext.ObjectIDChanges>.Continuation]>([:])

    // Queue-confined state. `@exclusivity(unchecked)`: the run-time check for overlapping
    // accesses was a measurable share of every insert, fetch and save; it is safe to drop
    // for the same reasons as on NSManagedObject's state (see there): internal, confined to
    // `queue`, and never accessed re-entrantly — mutations are single calls into value-type
    // methods whose element callbacks (`hash(into:)`, `==` of objects and IDs) are this
    // module's own and touch none of these properties.
    /// Every object with a permanent ID, by ID (uniquing). Inserted objects without one are
    /// in `insertions` only, and also in `temporaries` once their temporary ID was made.
    @exclusivity(unchecked) var registeredByID = ObjectRegistry()
    @exclusivity(unchecked) var insertions = InsertionList()
    /// The inserted objects whose temporary key was made (someone read the object's ID), by
    /// that key: what lookups by a temporary ID search. Keeping new objects out of
    /// `registeredByID` until they have permanent IDs saves adding each under a temporary key
    /// and moving it at save (measured: those two random accesses per object into the
    /// registry's table were a tenth of inserting and saving 100,000 objects), and most new
    /// objects never have their temporary ID read.
    @exclusivity(unchecked) var temporaries = ObjectRegistry()
    @exclusivity(unchecked) var updatedSet: Set<NSManagedObject> = []
    @exclusivity(unchecked) var deletedSet: Set<NSManagedObject> = []
    /// The to-many edits of objects since their snapshots, by object (see
    /// `NSManagedObject+ToManyEdits.swift`); an entry lives while its object's
    /// `toManyEditsRecorded` bit is set.
    @exclusivity(unchecked) var toManyEdits: [ObjectIdentifier: ToManyEdits] = [:]
    /// How many times objects have left the context (deletions saved or merged, inserts
    /// rolled back or deleted, a reset): each place that invalidates or detaches objects
    /// counts once. A save trusts the to-many edits of an object to list every target that
    /// must be checked only while this has not moved since its tracking started (debug
    /// builds check that no other target left: a place that forgets to count trips it).
    @exclusivity(unchecked) var departures: UInt32 = 0
    /// Set when `departures` would wrap: from then on every save checks every target.
    @exclusivity(unchecked) var departuresOverflowed = false

    /// Counts objects leaving the context (see `departures`).
    @inline(__always)
    func noteDeparture() {
        if departures == .max { departuresOverflowed = true } else { departures += 1 }
    }
    /// Faults that found no row when fired and became deleted objects with empty values
    /// (see `shouldDeleteInaccessibleFaults`); the next save or reset discards them, and a
    /// rollback (or `insert(_:)` of one) turns them back into faults.
    @exclusivity(unchecked) var inaccessibleObjects: Set<NSManagedObject> = []
    /// Changed objects that link upkeep moved onto a newer row (`bringUpToDate`), with the
    /// version they were read at: under the error policy their save is a conflict, as it
    /// would have been without the move. Cleared when they are saved, refreshed, merged,
    /// rolled back or leave the context.
    @exclusivity(unchecked) var rebasedWhileChanged: [ObjectIdentifier: (object: NSManagedObject, readVersion: Int64)] = [:]
    /// The least reading of ``CommitClock`` when fetches here read the rows that faults
    /// hold; `.max` before any fetch. See `heldRowIsCurrent(_:)`. Kept on the queue, which
    /// objects reach without retaining the context (see `ContextQueue.heldRowsSince`).
    var heldRowsSince: UInt64 {
        get { queue.heldRowsSince.load(ordering: .relaxed) }
        set { queue.heldRowsSince.store(newValue, ordering: .relaxed) }
    }
    /// Deletions whose delete rules have not been applied yet.
    @exclusivity(unchecked) var pendingDeletes: [NSManagedObject] = []
    /// Changes not yet announced by an objects-did-change notification.
    @exclusivity(unchecked) var unprocessed = PendingChanges()
    /// While a fetch judges rows: its row stand-ins by key, which the context adopts (see
    /// `adoptStandIn(_:)`) instead of making a second object for the same row.
    @exclusivity(unchecked) var standIns: [ObjectKey: NSManagedObject] = [:]
    /// The inserted-objects set the last objects-did-change announced, when it held every
    /// pending insertion, with the `insertions.version` it was made at. A save that inserts
    /// exactly those objects posts the same set in did-save instead of building it again
    /// (measured: each 100,000-object set was a twentieth of such a save).
    @exclusivity(unchecked) var announcedInsertions: (version: Int, objects: Set<NSManagedObject>)?
    /// The queue's copy of the coordinator, valid while `coordinatorGeneration` still has
    /// this generation; plus the entity last looked up by class (for `init(context:)`).
    @exclusivity(unchecked) private var coordinatorCache: (generation: Int, coordinator: NSPersistentStoreCoordinator?) = (-1, nil)
    /// The last store identifier this context made object keys for, with its number (see
    /// `StoreNumbers`): one store almost always, so keys need no lock.
    @exclusivity(unchecked) var storeNumberCache: (identifier: String, number: UInt32)?
    @exclusivity(unchecked) var entityCache: (generation: Int, type: ObjectIdentifier?, entity: NSEntityDescription?) = (-1, nil, nil)
    var isSaving = false
    /// See `undoManager` (NSManagedObjectContext+Undo.swift).
    @exclusivity(unchecked) var storedUndoManager: UndoManager?
    /// The router of the live observation domain that instruments this context (a
    /// container's `viewContext`), which routes saved changes to its objects' readers; see
    /// `NSManagedObjectContext+Observation.swift`. Weak: releasing the domain stops routing.
    /// Queue-confined.
    weak var observationRouter: ObservationRouter?
    /// Whether a domain instruments this context: reads of observable objects here make and
    /// use registrars. Kept on the queue, where reads test it without retaining the context.
    var instrumentsObservation: Bool {
        get { queue.instrumentsObservation.load(ordering: .relaxed) }
        set { queue.instrumentsObservation.store(newValue, ordering: .relaxed) }
    }
    /// Producer registrations (`CDEObservationDomain.registerChangeProducer(context:)`) alive
    /// for this context: while any is, its saves report the properties they changed. Changed
    /// from any thread.
    let observedChangeProducers = Atomic<Int>(0)
    /// Set by `saveObservedChanges` for the one save it runs (queue-confined).
    @exclusivity(unchecked) var reportsChangedPropertiesOnce = false
    /// The settings any thread may change (see `mergePolicy`).
    struct Settings {
        var mergePolicy: NSMergePolicy = .error
        var automaticallyMerges = false
        var deletesInaccessibleFaults = true
    }
    let settings = Lock(Settings())
    /// `mergePolicy`, without the queue check.
    var mergePolicyStorage: NSMergePolicy { settings.withLock { $0.mergePolicy } }

    /// Changes accumulated between two `processPendingChanges()` calls.
    /// The inserts to announce are not listed here: they are the objects `insertions`
    /// has not handed out yet (see `InsertionList.takeUnannounced(_:)`; an insert deleted
    /// before then has left that list, a repeated one is in it once).
    struct PendingChanges {
        var updated: Set<NSManagedObject> = []
        var deleted: Set<NSManagedObject> = []
        /// Objects `refresh(_:mergeChanges:)` reloaded, announced with the rest (Core Data
        /// coalesces refreshes into the next objects-did-change).
        var refreshed: Set<NSManagedObject> = []
        var isEmpty: Bool { updated.isEmpty && deleted.isEmpty && refreshed.isEmpty }
    }

    /// Whether changes wait to be announced by objects-did-change: inserts, updates,
    /// deletions, refreshes.
    var hasUnprocessedChanges: Bool { insertions.hasUnannounced || !unprocessed.isEmpty }

    /// Whether queue checks run: always in debug builds; in release builds when
    /// `PERSISTENCEKIT_CONCURRENCY_DEBUG` is set to a non-zero value.
    static let checksQueues: Bool = {
        #if DEBUG
        return true
        #else
        let value = ProcessInfo.processInfo.environment["PERSISTENCEKIT_CONCURRENCY_DEBUG"] ?? "0"
        return value != "0" && !value.isEmpty
        #endif
    }()

    /// Creates a context of the given type. Set ``persistentStoreCoordinator`` before use.
    ///
    /// Traps for `.confinementConcurrencyType`, which Core Data deprecated.
    public init(concurrencyType: NSManagedObjectContextConcurrencyType) {
        programmerCheck(
            concurrencyType != .confinementConcurrencyType,
            "PersistenceKit: confinementConcurrencyType is not supported; use .privateQueueConcurrencyType or .mainQueueConcurrencyType.")
        self.concurrencyType = concurrencyType
        self.queue = ContextQueue(
            kind: concurrencyType == .mainQueueConcurrencyType ? .main : .privateQueue,
            label: "PersistenceKit.context")
    }

    /// Creates a context of the given type connected to `coordinator`.
    public convenience init(
        concurrencyType: NSManagedObjectContextConcurrencyType, coordinator: NSPersistentStoreCoordinator
    ) {
        self.init(concurrencyType: concurrencyType)
        persistentStoreCoordinator = coordinator
    }

    deinit {
        // Related objects hold each other strongly (to-one and to-many slots), so a context's
        // objects form cycles that would outlive it. Empty every object's slots while the
        // registry still holds them all: nothing is freed mid-loop, so freeing afterwards
        // cannot recurse down a long chain of objects (a deep chain overflowed the stack).
        // No other thread can be using these objects: their context is gone, so any access
        // traps. Objects kept by callers become invalidated.
        //
        // An object that only the registry holds and that holds no other object (its values
        // are not in slots: a fetched or saved object nobody touched since) needs only its
        // link to this context cut: its values go with it, and nothing is freed through it.
        // (Measured: invalidating every object, through an array of them all, was a sixth
        // of freeing a context that fetched 25,000 objects.) The link must be cut all the
        // same: a subclass's deinit runs when the registry lets go, and it may see the
        // object, or keep it alive through a weak reference to it.
        registeredByID.removeAll { o, onlyHeldHere in
            if onlyHeldHere && (o.valueStorage != .slots || o.storedSlots.isEmpty) {
                o.detachFromFreedContext()
            } else {
                o.invalidate()
            }
        }
        for o in insertions.objects { o.invalidate() }
        temporaries = ObjectRegistry()
        coordinatorBox.withLock { $0 }?.removeMergeObserver(self)
        let streams = didSaveStreams.withLock { s in s }
        for (_, c) in streams { c.finish() }
    }

    /// The coordinator the context fetches from and saves to; for a child context (see
    /// ``parent``), the root's. May be set from any thread, before the context is used.
    public var persistentStoreCoordinator: NSPersistentStoreCoordinator? {
        get {
            let own = coordinatorBox.withLock { $0 }
            return own?.parentContextStore?.rootCoordinator ?? own
        }
        set {
            coordinatorBox.withLock { current in
                if let current, current !== newValue {
                    programmerError(
                        "PersistenceKit: context '\(debugName)' already has a coordinator; cannot replace it. Rule: a "
                            + "context's objects belong to its coordinator's stores; make a new context instead.")
                }
                current = newValue
            }
            coordinatorGeneration.add(1, ordering: .releasing)
        }
    }

    /// Changes whenever `persistentStoreCoordinator` is set: caches derived from the
    /// coordinator (such as `entityCache`) record it and are valid while it is unchanged.
    var currentCoordinatorGeneration: Int { coordinatorGeneration.load(ordering: .acquiring) }

    /// The coordinator, or a trap saying none is set. On the context's queue only (it keeps
    /// a queue-confined copy).
    ///
    /// Why the copy is right: the setter changes the box, then bumps the generation. A
    /// reader that sees the new generation reads the box after that and gets the new
    /// coordinator; one that sees the old generation files whatever it read under the old
    /// generation, and its next read sees the new generation and reads the box again.
    var coordinator: NSPersistentStoreCoordinator {
        let generation = coordinatorGeneration.load(ordering: .acquiring)
        if coordinatorCache.generation == generation, let c = coordinatorCache.coordinator { return c }
        let current = coordinatorBox.withLock { $0 }
        coordinatorCache = (generation, current)
        guard let c = current else {
            programmerError(
                "PersistenceKit: context '\(debugName)' has no persistentStoreCoordinator. Rule: set one before using the context.")
        }
        return c
    }

    /// A name for debugging; appears in messages and traps. Nil until you set one (the
    /// container's view context included, as in Core Data). May be set from any thread.
    public var name: String? {
        get { nameBox.withLock { $0.given } }
        set { nameBox.withLock { $0.given = newValue } }
    }

    /// Sets what messages and traps call the context while `name` is nil. (Core Data's
    /// `name` is developer-provided and nil until set, so the container's view context is
    /// not named "viewContext"; the messages should still say which context it is.)
    func setFallbackName(_ fallback: String) {
        nameBox.withLock { $0.fallback = fallback }
    }

    /// A dictionary of your own values kept with the context, as Core Data's `userInfo`:
    /// made empty on first use, read and changed on the context's queue only (it is not
    /// thread-safe, like the context's objects).
    public var userInfo: NSMutableDictionary {
        assertOnQueue("userInfo")
        if let existing = storedUserInfo { return existing }
        let made = NSMutableDictionary()
        storedUserInfo = made
        return made
    }
    @exclusivity(unchecked) private var storedUserInfo: NSMutableDictionary?

    /// The author recorded with this context's saves and batch requests in persistent
    /// history (``NSPersistentHistoryTransaction/author``), as Core Data's property of this
    /// name: typically the part of the app that writes ("app", "importer"), so that a reader of
    /// history can skip its own transactions. Nil by default; kept across saves. Read and set
    /// on the context's queue.
    public var transactionAuthor: String? {
        get {
            assertOnQueue("transactionAuthor")
            return storedTransactionAuthor
        }
        set {
            assertOnQueue("transactionAuthor")
            storedTransactionAuthor = newValue
        }
    }
    @exclusivity(unchecked) private var storedTransactionAuthor: String?

    /// The query generation this context reads, when it is pinned (see
    /// NSManagedObjectContext+QueryGenerations.swift); nil when it reads the store as it is.
    @exclusivity(unchecked) var pinnedGeneration: NSQueryGenerationToken?

    package var debugName: String {
        let (given, fallback) = nameBox.withLock { $0 }
        return given ?? fallback
            ?? "\(concurrencyType == .mainQueueConcurrencyType ? "main" : "private") context \(ObjectIdentifier(self))"
    }

    /// A readable summary for logs and messages.
    public var description: String { "<NSManagedObjectContext \(debugName)>" }

    /// How a save resolves conflicts with changes saved elsewhere since this context read
    /// the objects. Defaults to ``NSErrorMergePolicy`` (the save fails with the conflicts).
    ///
    /// Like every setting of a context (and as in Core Data, whose setters on queue-based
    /// contexts are thread-safe), it may be read and set from any thread: configure a new
    /// background context before its first `perform`. Core Data code commonly follows
    /// `newBackgroundContext()` with `mergePolicy = …` outside `perform`; that must not trap.
    public var mergePolicy: NSMergePolicy {
        get { settings.withLock { $0.mergePolicy } }
        set { settings.withLock { $0.mergePolicy = newValue } }
    }

    /// When `true`, this context merges every save made by another context of the same
    /// coordinator, on its own queue, as if `mergeChanges(fromContextDidSave:)` were called.
    /// May be read and set from any thread, like ``mergePolicy``; a save that another
    /// thread broadcasts while this is being turned on may or may not be merged.
    public var automaticallyMergesChangesFromParent: Bool {
        get { settings.withLock { $0.automaticallyMerges } }
        set {
            // The coordinator's list changes under the settings lock too, so that two
            // threads setting it at once leave the flag and the list in agreement.
            // (`persistentStoreCoordinator`, not `coordinator`: that one caches on the queue.)
            if let parent {  // a child merges what its parent saves, merges and receives
                settings.withLock { s in
                    s.automaticallyMerges = newValue
                    parent.setForwarding(to: self, newValue)
                }
                return
            }
            guard let coordinator = persistentStoreCoordinator else {
                programmerError(
                    "PersistenceKit: context '\(debugName)' has no persistentStoreCoordinator. Rule: set one before "
                        + "automaticallyMergesChangesFromParent.")
            }
            settings.withLock { s in
                s.automaticallyMerges = newValue
                if newValue { coordinator.addMergeObserver(self) } else { coordinator.removeMergeObserver(self) }
            }
        }
    }

    // MARK: Queue discipline

    /// Traps unless the caller runs on this context's queue (when checks are on).
    @inline(__always)
    func assertOnQueue(_ operation: @autoclosure () -> String, object: NSManagedObject? = nil) {
        // The second, slower look only before trapping (main-actor code inside another
        // queue's `sync`, see ContextQueue+MainActor.swift).
        if Self.checksQueues && !queue.isCurrent && !queue.isHeldByMainActor {
            queueViolation(operation(), object: object)
        }
    }

    private func queueViolation(_ operation: String, object: NSManagedObject?) -> Never {
        let what = object.map { "\($0.objectID) of context '\(debugName)'" } ?? "context '\(debugName)'"
        let rule =
            concurrencyType == .mainQueueConcurrencyType
            ? "a main-queue context and its objects may only be used on the main thread (the main actor) or inside perform/performAndWait"
            : "a private-queue context and its objects may only be used inside its perform/performAndWait blocks"
        programmerError(
            "PersistenceKit concurrency violation: \(operation) on \(what) from the wrong thread. Rule: \(rule).")
    }

    // MARK: Executor support (for ModelActorKit)

    /// Runs a Swift concurrency job on the context's queue, in one FIFO with `perform`
    /// blocks. Never blocks. Used by `NSModelObjectContextExecutor`.
    package func enqueueExecutorJob(_ job: UnownedJob, executor: UnownedSerialExecutor) {
        // A model actor's jobs end as `perform` blocks do: with pending changes processed.
        // Weak: the job may have freed the context (an actor's isolated deinit).
        // Installed with the first actor job, not by the initializer: a weak reference gives
        // its target a side table, and every retain and release of an object with one takes
        // the runtime's slow path — for every context, which is retained per object in
        // saves (measured: 7% of inserting and saving 100,000 objects in a context that never
        // ran an actor job).
        queue.setAfterJobOnce { { [weak self] in self?.processPendingChangesIfNeeded() } }
        queue.enqueue(job, executor: executor)
    }

    /// Whether the calling thread is running this context's queue right now.
    package var isExecutingOnQueue: Bool { queue.isCurrent }

    /// ``isExecutingOnQueue``, with a second, slower look for the view context before a trap:
    /// main-actor code inside another queue's `sync` (see ContextQueue+MainActor.swift).
    package var isExecutingOnQueueOnSecondLook: Bool { queue.isCurrentOrHeldByMainActor }

    /// Whether the caller runs on the main queue (the main actor's executor). On Linux this
    /// is not the same as `Thread.isMainThread`: after `dispatchMain()` a worker thread
    /// drains the main queue.
    package static var isOnMainQueue: Bool { ContextQueue.isOnMainQueue }

    // MARK: Perform

    /// Runs `block` asynchronously on the context's queue, after every block enqueued
    /// before it. Pending changes are processed when the block ends.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            CurrentContext.with(self) { block() }
            processPendingChangesIfNeeded()
        }
    }

    /// Runs `block` on the context's queue and waits for it; returns its result and
    /// rethrows its error. Reentrant: called on the context's queue, it runs inline.
    /// Unlike `perform(_:)` it does not process pending changes at the end (as in Core Data).
    public func performAndWait<T>(_ block: () throws -> T) rethrows -> T {
        try queue.sync { try CurrentContext.with(self, block) }
    }

    /// How `perform(schedule:isolation:_:)` schedules its block.
    public enum ScheduledTaskType: Sendable {
        /// Run at once when called on the context's queue; otherwise enqueue.
        case immediate
        /// Always enqueue behind the blocks already waiting.
        case enqueued
    }

    /// Runs `block` on the context's queue and returns its result to the awaiting caller.
    ///
    /// `isolation` is the caller's actor (leave the default): the call stays on it, so that
    /// `.immediate` from the context's own queue — a model actor's method, or main-actor
    /// code with the view context — runs the block at once, ahead of blocks enqueued
    /// earlier. Without it the call leaves for the global pool first, never finds itself on
    /// the queue, and `.immediate` always enqueues.
    ///
    /// - Throws: what `block` throws.
    public func perform<T: Sendable, E: Error>(
        schedule: ScheduledTaskType = .immediate, isolation: isolated (any Actor)? = #isolation,
        _ block: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        if schedule == .immediate && queue.isCurrent {
            // Pending changes processed at the end, as after a queued block.
            defer { processPendingChangesIfNeeded() }
            return try CurrentContext.with(self, block)
        }
        // Checked, not unsafe, though it is resumed exactly once: with an unsafe continuation
        // Thread Sanitizer reports a race between the resume and the awaiting task (it cannot
        // see the runtime's ordering there), though the round trip was 7% faster; the
        // sanitizer run in CI fails with it.
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async { [self] in
                let result: Result<T, E>
                do throws(E) {
                    result = .success(try CurrentContext.with(self, block))
                } catch {
                    result = .failure(error)
                }
                processPendingChangesIfNeeded()  // before the caller resumes (see below)
                continuation.resume(returning: result)
            }
        }
        return try result.get()
    }

    /// Runs `block` on the context's queue and returns when it has run.
    ///
    /// This non-generic overload exists so that `await context.perform { ... }` with a block
    /// that returns nothing resolves to the waiting form rather than the fire-and-forget
    /// ``perform(_:)``.
    public func perform(
        schedule: ScheduledTaskType = .immediate, isolation: isolated (any Actor)? = #isolation,
        _ block: @escaping @Sendable () -> Void
    ) async {
        if schedule == .immediate && queue.isCurrent {
            CurrentContext.with(self, block)
            processPendingChangesIfNeeded()  // as after a queued block
            return
        }
        // Resumed after the pending changes are processed, not inside the block: the caller
        // goes on once the block's objects-did-change is posted, as with `.immediate`.
        // Resumed inside `perform`, the caller would race the announcement.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                CurrentContext.with(self, block)
                processPendingChangesIfNeeded()
                continuation.resume()
            }
        }
    }

    /// What the queue does after each `perform` block: process pending changes (as Core Data
    /// does), so observers hear of them.
    func processPendingChangesIfNeeded() {
        if hasUnprocessedChanges || !pendingDeletes.isEmpty { processPendingChanges() }
        if queue.registersUndo.load(ordering: .relaxed) { closeUndoEventGroup() }
    }
}
