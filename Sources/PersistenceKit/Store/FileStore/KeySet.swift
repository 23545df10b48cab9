/// A set of primary keys, for the rows of an attribute index that share one value.
///
/// The keys live in an array, in the order they were added (ascending, as rows are usually
/// added) until a removal swaps the last key into the gap. The first removal also builds a
/// table from each key to its position (open addressing with linear probing, Fibonacci
/// hashing, backward-shift deletion, at most three quarters full), kept from then on, so
/// that every later removal finds its key at once. Primary keys start at 1 (the store
/// refuses others when it reads a file), so 0 marks an empty slot of the table.
///
/// Why not a plain array: an index value of a low-cardinality attribute holds a large share
/// of the table, and removing one key meant finding it and copying the rest (measured:
/// changing the indexed flag of 40,000 rows in one save took 0.45 s, and twice the rows
/// four times as long). Why not a hash set alone: adding to an array is cheaper, a save of
/// new rows only adds, and a fetch wants the keys in order, which the array mostly keeps
/// (measured with callgrind: a hash set made saving 100,000 new rows 1% slower and 100
/// indexed fetches 3%).
struct KeySet {
    /// The keys.
    private(set) var elements: [Int64] = []
    /// Up to this many keys, a removal searches the array instead of building `positions`.
    static let scanLimit = 64
    /// Key → position in `elements`; built by the first removal.
    private var positions: KeyPositions?

    /// The number of keys.
    var count: Int { elements.count }
    var isEmpty: Bool { elements.isEmpty }

    /// Adds `key` (at least 1), which must not be in the set yet (an index removes a row's
    /// key before adding it again).
    mutating func insert(_ key: Int64) {
        assert(key >= 1, "KeySet holds primary keys, which start at 1")
        if positions != nil {
            assert(positions!.position(of: key) == nil, "KeySet: key \(key) added twice")
            positions!.set(key, to: elements.count)
        }
        elements.append(key)
    }

    /// Removes `key`; returns false if it was not there.
    @discardableResult
    mutating func remove(_ key: Int64) -> Bool {
        if positions == nil {
            // A small set is searched: building the table costs more than a few scans.
            if elements.count <= Self.scanLimit {
                guard let i = elements.firstIndex(of: key) else { return false }
                elements.swapAt(i, elements.count - 1)
                elements.removeLast()
                return true
            }
            positions = KeyPositions(elements)
        }
        guard let i = positions!.remove(key) else { return false }
        let last = elements.removeLast()
        if i < elements.count {
            elements[i] = last
            positions!.set(last, to: i)
        }
        return true
    }

    /// Whether `key` is in the set.
    func contains(_ key: Int64) -> Bool {
        if let positions { return positions.position(of: key) != nil }
        return elements.contains(key)
    }

    /// Appends the keys to `result`.
    func appendElements(to result: inout [Int64]) {
        result.append(contentsOf: elements)
    }
}

/// An open-addressing table from primary key to an `Int` position (see `KeySet`).
struct KeyPositions {
    private var keys: ContiguousArray<Int64>
    private var values: ContiguousArray<Int>
    /// 64 − log2(slot count): the hash's top bits pick the home slot.
    private var shift: UInt64
    private var count = 0

    /// A table of `elements`, each at its index.
    init(_ elements: [Int64]) {
        var size = 8
        while size * 3 < elements.count * 4 + 4 { size *= 2 }
        keys = ContiguousArray(repeating: 0, count: size)
        values = ContiguousArray(repeating: 0, count: size)
        shift = UInt64(64 - size.trailingZeroBitCount)
        for (i, key) in elements.enumerated() { set(key, to: i) }
    }

    @inline(__always)
    private func home(_ key: Int64) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The position of `key`, if it is in the table.
    func position(of key: Int64) -> Int? {
        let mask = keys.count - 1
        var i = home(key)
        while keys[i] != 0 {
            if keys[i] == key { return values[i] }
            i = (i + 1) & mask
        }
        return nil
    }

    /// Records `key` at `position` (adding it, or moving it).
    mutating func set(_ key: Int64, to position: Int) {
        if (count + 1) * 4 > keys.count * 3 { grow() }
        let mask = keys.count - 1
        var i = home(key)
        while keys[i] != 0 && keys[i] != key { i = (i + 1) & mask }
        if keys[i] == 0 { count += 1 }
        keys[i] = key
        values[i] = position
    }

    /// Removes `key`; returns its position, or nil if it was not there.
    mutating func remove(_ key: Int64) -> Int? {
        let mask = keys.count - 1
        var hole = home(key)
        while keys[hole] != key {
            if keys[hole] == 0 { return nil }
            hole = (hole + 1) & mask
        }
        let position = values[hole]
        keys[hole] = 0
        count -= 1
        // Backward shift: pull later keys of the probe run into the hole when the hole lies
        // between their home slot and where they sit.
        var j = (hole + 1) & mask
        while keys[j] != 0 {
            let home = home(keys[j])
            if (hole - home) & mask < (j - home) & mask {
                keys[hole] = keys[j]
                values[hole] = values[j]
                keys[j] = 0
                hole = j
            }
            j = (j + 1) & mask
        }
        return position
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldValues = values
        let size = keys.count * 2
        keys = ContiguousArray(repeating: 0, count: size)
        values = ContiguousArray(repeating: 0, count: size)
        shift = UInt64(64 - size.trailingZeroBitCount)
        count = 0
        for (key, value) in zip(oldKeys, oldValues) where key != 0 { set(key, to: value) }
    }
}
