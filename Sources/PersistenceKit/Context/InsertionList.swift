/// The objects a context inserted and has not saved, in insertion order.
///
/// Each object remembers its position (`insertionIndex`), so adding, removing and
/// membership are O(1) with no hashing, and the order needs no sort when a save allocates
/// keys (measured: the `Set` this replaces, plus sorting it, was about a tenth of inserting
/// and saving 100,000 objects).
struct InsertionList {
    /// Fills the slot of a removed object, so that the slots are a plain array of objects
    /// that ``objects`` hands out as it is when nothing was removed.
    // nonisolated(unsafe): no property of it is ever read or written; lists only compare it
    // by identity (`===`) and retain and release it, which are atomic, from any thread.
    nonisolated(unsafe) private static let hole = NSManagedObject(entity: NSEntityDescription(), insertInto: nil)

    private var slots: [NSManagedObject] = []
    /// The number of objects in the list.
    private(set) var count = 0
    /// The slots `takeUnannounced(_:)` has gone through: later ones hold objects inserted
    /// since, which the context's next objects-did-change announces. (A list of those
    /// objects beside this one retained each new object once more, and released each when
    /// they were announced, by then out of cache: measured −1 to −2% of inserting and saving
    /// 100,000 objects.)
    private var announcedSlots = 0
    /// Changes with every append and removal, so that a value computed from the list can
    /// tell whether the list is still the same.
    private(set) var version = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ object: NSManagedObject) {
        object.insertionIndex = slots.count
        slots.append(object)
        count += 1
        version &+= 1
    }

    func contains(_ object: NSManagedObject) -> Bool {
        let i = object.insertionIndex
        return i >= 0 && i < slots.count && slots[i] === object
    }

    mutating func remove(_ object: NSManagedObject) {
        guard contains(object) else { return }
        slots[object.insertionIndex] = Self.hole
        object.insertionIndex = -1
        count -= 1
        version &+= 1
    }

    /// Whether objects were appended since the last `takeUnannounced(_:)` or
    /// `markAnnounced()` (some may have left the list since).
    var hasUnannounced: Bool { announcedSlots < slots.count }

    /// Calls `body` with each object appended since the last call (or `markAnnounced()`)
    /// that is still in the list, in insertion order, and counts them announced. `body`
    /// must not change the list.
    mutating func takeUnannounced(_ body: (NSManagedObject) -> Void) {
        let hole = Self.hole
        slots.withUnsafeBufferPointer { slots in
            for i in announcedSlots..<slots.count where slots[i] !== hole { body(slots[i]) }
        }
        announcedSlots = slots.count
    }

    /// The objects `takeUnannounced(_:)` would hand out now (usually none: an array is
    /// built only for them).
    var unannounced: [NSManagedObject] {
        guard hasUnannounced else { return [] }
        let hole = Self.hole
        return slots[announcedSlots...].filter { $0 !== hole }
    }

    /// Counts every object in the list announced.
    mutating func markAnnounced() { announcedSlots = slots.count }

    /// Counts every object in the list not announced yet.
    mutating func markUnannounced() { announcedSlots = 0 }

    /// Whether any object in the list satisfies `predicate` (no array is built).
    func contains(where predicate: (NSManagedObject) -> Bool) -> Bool {
        let hole = Self.hole
        for o in slots where o !== hole && predicate(o) { return true }
        return false
    }

    /// Calls `body` with each object, in insertion order: the objects in the list when the
    /// call began (objects `body` inserts are not visited). Builds no array of them.
    func forEach(_ body: (NSManagedObject) -> Void) {
        let current = slots  // shares the storage; an insert by `body` copies the list's own
        let hole = Self.hole
        for o in current where o !== hole { body(o) }
    }

    /// The objects, in insertion order.
    ///
    /// - Complexity: O(1) when no object was removed since the list was last empty (the
    ///   list's own storage, shared); otherwise O(n).
    var objects: [NSManagedObject] {
        // Shared, not copied: a save of 100,000 inserts asks for this list once, and a copy
        // retained every object and released each again when the save ended, a cache miss
        // per object each time.
        if count == slots.count { return slots }
        // Not through `unsafeUninitializedCapacity` when empty: with no capacity that writes
        // the count into the process-wide empty-array storage, which Thread Sanitizer reports
        // as a race between contexts on different threads.
        if count == 0 { return [] }
        // Written straight into the new array's memory: appending cost a capacity check, a
        // retain and a release per object (measured: 1% of saving 100,000 inserts).
        let hole = Self.hole
        return [NSManagedObject](unsafeUninitializedCapacity: count) { buffer, initialized in
            var n = 0
            slots.withUnsafeBufferPointer { slots in
                for o in slots where o !== hole {
                    (buffer.baseAddress! + n).initialize(to: o)
                    n += 1
                }
            }
            initialized = n
        }
    }

    /// Empties the list. With `resettingObjects: false` the objects keep their
    /// `insertionIndex`, and the caller must set it to -1 on each itself (a save does, in its
    /// one pass over the objects it saved).
    mutating func removeAll(resettingObjects: Bool = true) {
        if resettingObjects {
            let hole = Self.hole
            for o in slots where o !== hole { o.insertionIndex = -1 }
        }
        slots = []
        count = 0
        announcedSlots = 0
        version &+= 1
    }
}
