/// The objects a context holds, by object ID: one object per ID (uniquing).
///
/// An open-addressing table keyed by each object's own `objectID`, using the ID's cached
/// hash. `Dictionary` hashed every ID again with SipHash on every lookup and insert, which
/// showed up as a fifth of an insert-heavy save. Linear probing with backward-shift
/// deletion (no tombstones); at most half full.
///
/// Invariant: an object's `objectID` does not change while it is in the table (the context
/// removes it, changes the ID, and adds it again).
struct ObjectRegistry: ExpressibleByDictionaryLiteral {
    private var buckets: ContiguousArray<NSManagedObject?>
    private(set) var count = 0

    init() {
        buckets = ContiguousArray(repeating: nil, count: 16)
    }

    init(dictionaryLiteral elements: (NSManagedObjectID, NSManagedObject)...) {
        self.init()
        for (id, object) in elements { self[id] = object }
    }

    var isEmpty: Bool { count == 0 }

    private var mask: Int { buckets.count - 1 }

    /// The bucket holding `id`, or the empty bucket where it would go.
    @inline(__always)
    private func find(_ id: NSManagedObjectID) -> (index: Int, found: Bool) {
        var i = id.hashCode & mask
        while let o = buckets[i] {
            if o.objectID === id || o.objectID == id { return (i, true) }
            i = (i + 1) & mask
        }
        return (i, false)
    }

    subscript(id: NSManagedObjectID) -> NSManagedObject? {
        get {
            let (i, found) = find(id)
            return found ? buckets[i] : nil
        }
        set {
            if let newValue {
                assert(newValue.objectID == id, "an object is registered under its own objectID")
                let (i, found) = find(id)
                buckets[i] = newValue
                if !found {
                    count += 1
                    if count * 2 > buckets.count { grow() }
                }
            } else {
                remove(id)
            }
        }
    }

    private mutating func remove(_ id: NSManagedObjectID) {
        var (hole, found) = find(id)
        guard found else { return }
        buckets[hole] = nil
        count -= 1
        // Backward-shift: move later entries of the probe run into the hole when their home
        // bucket allows it, so lookups never stop early at a gap.
        var j = (hole + 1) & mask
        while let o = buckets[j] {
            let home = o.objectID.hashCode & mask
            let distanceToHole = (hole - home) & mask
            let distanceToJ = (j - home) & mask
            if distanceToHole < distanceToJ {
                buckets[hole] = o
                buckets[j] = nil
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
        let old = buckets
        var size = old.count * 2
        while size < minimum { size *= 2 }
        buckets = ContiguousArray(repeating: nil, count: size)
        for case let o? in old {
            var i = o.objectID.hashCode & mask
            while buckets[i] != nil { i = (i + 1) & mask }
            buckets[i] = o
        }
    }

    /// Every registered object (in no particular order).
    var values: [NSManagedObject] {
        var result: [NSManagedObject] = []
        result.reserveCapacity(count)
        for case let o? in buckets { result.append(o) }
        return result
    }

    /// Every registered object ID.
    var keys: [NSManagedObjectID] { values.map(\.objectID) }
}
