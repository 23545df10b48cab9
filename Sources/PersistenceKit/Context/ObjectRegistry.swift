/// The objects a context holds, by object ID: one object per ID (uniquing).
///
/// An open-addressing table keyed by each object's own key (`ObjectKey`: its ID without
/// the ID object), using the key's cached hash. `Dictionary` hashed every ID again with SipHash on every lookup and insert, which
/// showed up as a fifth of an insert-heavy save. Linear probing with backward-shift
/// deletion (no tombstones); at most half full.
///
/// Each bucket keeps the hash beside the object, so probing compares hashes in the table's
/// own memory and follows a pointer only on a hash match. (Measured: with objects alone in
/// the buckets, every probe read the object and then its ID — two cache misses each — and
/// re-keying 100,000 objects at save took over 50 ms.)
///
/// Invariant: an object's key does not change while it is in the table (the context removes
/// it, changes the key, and adds it again).
struct ObjectRegistry {
    private struct Bucket {
        var hash: Int
        var object: NSManagedObject?
    }

    private var buckets: ContiguousArray<Bucket>
    private(set) var count = 0

    init() {
        buckets = Self.emptyBuckets(16)
    }

    /// `count` empty buckets. Filled with zero bytes (hash 0, `nil` object): built with
    /// `repeating:`, the array retained the empty bucket's `nil` once per bucket (measured:
    /// half a percent of saving 100,000 inserts, which grows the table twelve times).
    private static func emptyBuckets(_ count: Int) -> ContiguousArray<Bucket> {
        precondition(count > 0, "a registry has buckets")  // see `InsertionList.objects` for why 0 must not get here
        return ContiguousArray(unsafeUninitializedCapacity: count) { buffer, initialized in
            UnsafeMutableRawBufferPointer(buffer).initializeMemory(as: UInt8.self, repeating: 0)
            initialized = count
        }
    }

    var isEmpty: Bool { count == 0 }

    private var mask: Int { buckets.count - 1 }

    /// The bucket holding the object with `key` of `entity`, or the empty bucket where it
    /// would go.
    @inline(__always)
    private func find(_ key: ObjectKey, _ entity: NSEntityDescription) -> (index: Int, found: Bool, hash: Int) {
        let hash = key.hashCode(for: entity)
        var i = hash & mask
        while let o = buckets[i].object {
            if buckets[i].hash == hash, o.entity === entity, o.hasObjectKey(key) { return (i, true, hash) }
            i = (i + 1) & mask
        }
        return (i, false, hash)
    }

    /// The object registered under `id`.
    subscript(id: NSManagedObjectID) -> NSManagedObject? {
        self[id.objectKey, id.entity]
    }

    /// The object registered with `key` of `entity`.
    subscript(key: ObjectKey, entity: NSEntityDescription) -> NSManagedObject? {
        let (i, found, _) = find(key, entity)
        return found ? buckets[i].object : nil
    }

    /// Where a lookup of a key left off: the bucket of the object registered with it, or
    /// the empty bucket where an object with it would go (see ``insert(_:into:)``).
    struct Slot {
        fileprivate let index: Int
        fileprivate let hash: Int
    }

    /// The object registered with `key` of `entity`, or else the slot to register one in
    /// with ``insert(_:into:)``: one probe of the table for a lookup followed by an insert,
    /// where `insert(_:)` probed it a second time and hashed the key again.
    @inline(__always)
    func lookup(_ key: ObjectKey, _ entity: NSEntityDescription) -> (object: NSManagedObject?, slot: Slot) {
        let (i, found, hash) = find(key, entity)
        return (found ? buckets[i].object : nil, Slot(index: i, hash: hash))
    }

    /// Registers `object`, which has the key and entity that ``lookup(_:_:)`` found no
    /// object for, in the slot it returned. Valid only while the table is unchanged since
    /// that lookup: an insert or removal in between moves or fills the slot, and the object
    /// would go into the wrong bucket (a later lookup misses it, or it overwrites another).
    @inline(__always)
    mutating func insert(_ object: NSManagedObject, into slot: Slot) {
        assert(
            { let f = find(object.objectKey, object.entity); return f.index == slot.index && !f.found && f.hash == slot.hash }(),
            "PersistenceKit internal error: a stale registry slot")
        buckets[slot.index] = Bucket(hash: slot.hash, object: object)
        count += 1
        if count * 2 > buckets.count { grow() }
    }

    /// Whether `object` is registered here (under its key).
    func contains(_ object: NSManagedObject) -> Bool {
        self[object.objectKey, object.entity] === object
    }

    /// Registers `object` under its key. Returns the object it replaced, if another object
    /// was registered with that key: the caller must invalidate or refuse it, because an
    /// object outside the registry must not keep its context (see
    /// `NSManagedObject.storedContext`).
    @discardableResult
    mutating func insert(_ object: NSManagedObject) -> NSManagedObject? {
        let (i, found, hash) = find(object.objectKey, object.entity)
        let replaced = found ? buckets[i].object : nil
        buckets[i] = Bucket(hash: hash, object: object)
        if !found {
            count += 1
            if count * 2 > buckets.count { grow() }
        }
        return replaced === object ? nil : replaced
    }

    /// Registers each of `objects` under its key, as `insert(_:)` one after the other would
    /// (a later object with an earlier one's key replaces it), and returns the objects they
    /// replaced, which the caller must invalidate or refuse as for `insert(_:)`.
    ///
    /// For a large batch the objects go into the table in bucket order, not in the order
    /// given: keys are spread over the whole table, so one at a time every object was a
    /// cache miss into it (measured: a twelfth of saving 100,000 inserts, all of it in
    /// the load of the bucket). The references are taken while each object is at hand and
    /// moved into their buckets, so the second pass touches no object either.
    ///
    /// - Complexity: O(n + number of buckets / 256) for n objects.
    mutating func insert(contentsOf objects: [NSManagedObject]) -> [NSManagedObject] {
        // Room for all at once (grown one doubling at a time, the table moved its objects
        // again at each: measured, 2% of saving 100,000 inserts); the mask is final from here.
        reserveCapacity(count + objects.count)
        guard objects.count >= Self.bulkThreshold else {
            return objects.compactMap { insert($0) }
        }
        let mask = self.mask
        // Bins of 256 buckets (4 KiB of table): within one, the probes stay in a few pages.
        let binShift = 8
        let binCount = (mask >> binShift) + 1
        struct Entry {
            var hash: Int
            var object: Unmanaged<NSManagedObject>
        }
        // Pass 1, in the caller's order (the objects' memory order for new ones): hash each
        // object and take a reference to it while it is in cache; count the bins.
        var counts = [Int](repeating: 0, count: binCount + 1)
        var entries: [Entry] = []
        entries.reserveCapacity(objects.count)
        for o in objects {
            let hash = o.objectKey.hashCode(for: o.entity)
            entries.append(Entry(hash: hash, object: .passRetained(o)))
            counts[((hash & mask) >> binShift) + 1] += 1
        }
        for b in 0..<binCount { counts[b + 1] += counts[b] }
        // A stable counting sort by bin: objects with equal keys keep their order.
        var sorted = [Entry](repeating: Entry(hash: 0, object: entries[0].object), count: entries.count)
        for e in entries {
            let b = (e.hash & mask) >> binShift
            sorted[counts[b]] = e
            counts[b] += 1
        }
        var replaced: [NSManagedObject] = []
        // Pass 2, in bucket order: objects are read only on a hash match (a key registered
        // already), and each reference taken in pass 1 is moved into its bucket.
        buckets.withUnsafeMutableBufferPointer { table in
            for e in sorted {
                var i = e.hash & mask
                while let existing = table[i].object {
                    if table[i].hash == e.hash {
                        let o = e.object.takeUnretainedValue()
                        if existing.entity === o.entity, existing.hasObjectKey(o.objectKey) { break }
                    }
                    i = (i + 1) & mask
                }
                if let existing = table[i].object.take() {
                    if existing !== e.object.takeUnretainedValue() { replaced.append(existing) }
                } else {
                    count += 1
                }
                table[i] = Bucket(hash: e.hash, object: e.object.takeRetainedValue())
            }
        }
        return replaced
    }

    /// Below this many objects `insert(contentsOf:)` inserts one at a time: the table is
    /// small enough to stay in cache, and sorting would cost more than it saves.
    static let bulkThreshold = 4096

    /// Removes the object registered under `id`, if any.
    mutating func remove(_ id: NSManagedObjectID) {
        remove(id.objectKey, id.entity)
    }

    /// Removes `object` (whatever is registered under its key).
    mutating func remove(_ object: NSManagedObject) {
        remove(object.objectKey, object.entity)
    }

    private mutating func remove(_ key: ObjectKey, _ entity: NSEntityDescription) {
        var (hole, found, _) = find(key, entity)
        guard found else { return }
        // Held until the table is consistent again: releasing the last reference runs the
        // object's deinit, which must not find the table half-shifted.
        let removed = buckets[hole].object
        defer { withExtendedLifetime(removed) {} }
        buckets[hole].object = nil
        count -= 1
        // Backward-shift: move later entries of the probe run into the hole when their home
        // bucket allows it, so lookups never stop early at a gap.
        var j = (hole + 1) & mask
        while buckets[j].object != nil {
            let home = buckets[j].hash & mask
            let distanceToHole = (hole - home) & mask
            let distanceToJ = (j - home) & mask
            if distanceToHole < distanceToJ {
                buckets.swapAt(hole, j)
                hole = j
            }
            j = (j + 1) & mask
        }
    }

    /// Makes room for `n` objects in total without further growth.
    mutating func reserveCapacity(_ n: Int) {
        if n * 2 > buckets.count { grow(to: n * 2) }
    }

    private mutating func grow(to minimum: Int = 0) {
        var size = buckets.count * 2
        while size < minimum { size *= 2 }
        var old = Self.emptyBuckets(size)
        swap(&old, &buckets)
        let mask = self.mask
        // Moves each object's reference instead of copying it: a copy retained every object
        // and freeing the old table released each again (measured: half of growing the
        // table, which a context holding 10,000 fetched objects does ten times).
        buckets.withUnsafeMutableBufferPointer { new in
            old.withUnsafeMutableBufferPointer { old in
                for j in old.indices where old[j].object != nil {
                    var i = old[j].hash & mask
                    while new[i].object != nil { i = (i + 1) & mask }
                    // `new[i]` holds nil (no reference to release); `old[j]` is left nil.
                    new[i] = Bucket(hash: old[j].hash, object: old[j].object.take())
                }
            }
        }
    }

    /// Every registered object (in no particular order).
    var values: [NSManagedObject] {
        var result: [NSManagedObject] = []
        result.reserveCapacity(count)
        for b in buckets { if let o = b.object { result.append(o) } }
        return result
    }

    /// Empties the registry, first calling `body` with each object, in place, and whether
    /// the registry alone held it then.
    mutating func removeAll(_ body: (_ object: NSManagedObject, _ onlyHeldHere: Bool) -> Void) {
        buckets.withUnsafeMutableBufferPointer { buckets in
            for i in buckets.indices where buckets[i].object != nil {
                let onlyHeldHere = isKnownUniquelyReferenced(&buckets[i].object)
                body(buckets[i].object!, onlyHeldHere)
            }
        }
        self = ObjectRegistry()
    }

}
