/// A set of primary keys, for the rows of an attribute index that share one value.
///
/// Open addressing with linear probing, Fibonacci hashing and backward-shift deletion (no
/// tombstones); at most three quarters full. Primary keys start at 1 (the store refuses
/// others when it reads a file), so 0 marks an empty slot.
///
/// Why not an array: an index value of a low-cardinality attribute holds a large share of
/// the table, and removing one key from an array meant finding it and copying the rest
/// (measured: changing the indexed flag of 40,000 rows in one save took 0.45 s, and twice
/// the rows four times as long). Here inserting and removing a key cost the same at any size.
struct KeySet {
    private var slots: ContiguousArray<Int64> = []
    /// 64 − log2(slot count): the hash's top bits pick the home slot.
    private var shift: UInt64 = 64
    /// The number of keys.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    @inline(__always)
    private func home(_ key: Int64) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// Adds `key` (at least 1); returns false if it was already there.
    @discardableResult
    mutating func insert(_ key: Int64) -> Bool {
        assert(key >= 1, "KeySet holds primary keys, which start at 1")
        if (count + 1) * 4 > slots.count * 3 { grow() }
        let home = home(key)
        let inserted = slots.withUnsafeMutableBufferPointer { slots in
            let mask = slots.count - 1
            var i = home
            while slots[i] != 0 {
                if slots[i] == key { return false }
                i = (i + 1) & mask
            }
            slots[i] = key
            return true
        }
        if inserted { count += 1 }
        return inserted
    }

    /// Removes `key`; returns false if it was not there.
    @discardableResult
    mutating func remove(_ key: Int64) -> Bool {
        guard count > 0 else { return false }
        let mask = slots.count - 1
        var hole = home(key)
        while slots[hole] != key {
            if slots[hole] == 0 { return false }
            hole = (hole + 1) & mask
        }
        slots[hole] = 0
        count -= 1
        // Backward shift: pull later keys of the probe run into the hole when the hole lies
        // between their home slot and where they sit.
        var j = (hole + 1) & mask
        while slots[j] != 0 {
            let distanceToHole = (hole - home(slots[j])) & mask
            let distanceToJ = (j - home(slots[j])) & mask
            if distanceToHole < distanceToJ {
                slots[hole] = slots[j]
                slots[j] = 0
                hole = j
            }
            j = (j + 1) & mask
        }
        return true
    }

    /// Whether `key` is in the set.
    func contains(_ key: Int64) -> Bool {
        guard count > 0 else { return false }
        let mask = slots.count - 1
        var i = home(key)
        while slots[i] != 0 {
            if slots[i] == key { return true }
            i = (i + 1) & mask
        }
        return false
    }

    /// Appends the keys to `result`, in no particular order.
    func appendElements(to result: inout [Int64]) {
        result.reserveCapacity(result.count + count)
        for k in slots where k != 0 { result.append(k) }
    }

    /// The keys, in no particular order.
    var elements: [Int64] {
        var result: [Int64] = []
        appendElements(to: &result)
        return result
    }

    private mutating func grow() {
        let size = Swift.max(8, slots.count * 2)
        var old = ContiguousArray<Int64>(repeating: 0, count: size)
        swap(&old, &slots)
        shift = UInt64(64 - size.trailingZeroBitCount)
        let shift = shift
        slots.withUnsafeMutableBufferPointer { slots in
            let mask = slots.count - 1
            for key in old where key != 0 {
                var i = Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> shift)
                while slots[i] != 0 { i = (i + 1) & mask }
                slots[i] = key
            }
        }
    }
}
