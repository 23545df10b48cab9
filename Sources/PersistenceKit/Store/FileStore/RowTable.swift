/// Primary key → row location for one entity.
///
/// Keys are handed out in ascending order from 1, so an array indexed by key is both the
/// fastest lookup and already in key order (measured: replacing a `Dictionary` made store
/// opening and scans markedly faster — no hashing per row, no sorting per scan). Keys far
/// beyond the live rows — after heavy deletion, or read from a damaged file — go to an
/// overflow dictionary, so memory stays proportional to the live rows.
///
/// Invariant: every overflow key is at least `dense.count`.
struct RowTable {
    private var dense: [FileStore.RowRef?] = [nil]  // index 0 is never a key
    private var overflow: [Int64: FileStore.RowRef] = [:]
    /// The number of rows.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The array may grow to this many slots: four per live row plus a fixed allowance.
    private var denseLimit: Int64 { Int64(count) * 4 + (1 << 20) }

    subscript(pk: Int64) -> FileStore.RowRef? {
        if pk >= 0 && pk < dense.count { return dense[Int(pk)] }
        return overflow[pk]
    }

    /// Sets the row for `pk`; returns the row it replaced.
    @discardableResult
    @inline(__always)
    mutating func updateValue(_ ref: FileStore.RowRef, forKey pk: Int64) -> FileStore.RowRef? {
        if pk >= 0 && pk < dense.count {
            let old = dense.withUnsafeMutableBufferPointer { slots in
                let old = slots[Int(pk)]
                slots[Int(pk)] = ref
                return old
            }
            if old == nil { count += 1 }
            return old
        }
        return updateValueSlowPath(ref, forKey: pk)
    }

    private mutating func updateValueSlowPath(_ ref: FileStore.RowRef, forKey pk: Int64) -> FileStore.RowRef? {
        if pk >= 0 && pk < denseLimit {
            // Growing moves an overflow entry for `pk`, if there is one, into the array: this
            // is then an update, not an insert. Taken for an insert, a key far above the live
            // rows, updated after the table grew past it, is counted twice and its old index
            // entries are never removed.
            grow(toCover: pk)
            let old = dense[Int(pk)]
            dense[Int(pk)] = ref
            if old == nil { count += 1 }
            return old
        }
        let old = overflow.updateValue(ref, forKey: pk)
        if old == nil { count += 1 }
        return old
    }

    /// Removes the row for `pk`; returns it.
    @discardableResult
    mutating func removeValue(forKey pk: Int64) -> FileStore.RowRef? {
        if pk >= 0 && pk < dense.count {
            let old = dense[Int(pk)]
            dense[Int(pk)] = nil
            if old != nil { count -= 1 }
            return old
        }
        let old = overflow.removeValue(forKey: pk)
        if old != nil { count -= 1 }
        return old
    }

    /// Calls `body` for every row, in ascending key order.
    func forEachRow(_ body: (Int64, FileStore.RowRef) throws(FileStoreError) -> Void) throws(FileStoreError) {
        for (pk, ref) in dense.enumerated() {
            if let ref { try body(Int64(pk), ref) }
        }
        for pk in overflow.keys.sorted() {
            if let ref = overflow[pk] { try body(pk, ref) }
        }
    }

    /// A cursor over the rows in ascending key order, for loops that must not capture state
    /// in a closure (see `FileStore.forEachMatch`).
    func makeCursor() -> Cursor { Cursor(table: self) }

    /// Steps through a table's rows in ascending key order.
    struct Cursor {
        private let dense: [FileStore.RowRef?]
        private var index = 1
        private var overflowKeys: [Int64]?
        private let overflow: [Int64: FileStore.RowRef]

        fileprivate init(table: RowTable) {
            dense = table.dense
            overflow = table.overflow
        }

        /// The next row, or nil after the last.
        mutating func next() -> (Int64, FileStore.RowRef)? {
            while index < dense.count {
                defer { index += 1 }
                if let ref = dense[index] { return (Int64(index), ref) }
            }
            if overflowKeys == nil { overflowKeys = overflow.keys.sorted().reversed() }
            while let pk = overflowKeys?.popLast() {
                if let ref = overflow[pk] { return (pk, ref) }
            }
            return nil
        }
    }

    /// Makes room for keys below `end` in the array at once, when that stays within the
    /// growth limit. Opening a store calls this with the entity's next key, so the array is
    /// allocated once instead of doubling (measured: the copies and page faults of doubling
    /// were a tenth of reopening a 100,000-row store).
    mutating func reserveKeys(below end: Int64) {
        guard end > Int64(dense.count), end <= denseLimit else { return }
        resize(to: Int(end))
    }

    private mutating func grow(toCover pk: Int64) {
        resize(to: Int(min(max(pk + 1, Int64(dense.count) * 2), max(pk + 1, denseLimit))))
    }

    private mutating func resize(to newCount: Int) {
        dense.reserveCapacity(newCount)
        dense.append(contentsOf: repeatElement(nil, count: newCount - dense.count))
        // Keep the invariant: overflow keys now inside the array move into it.
        for (key, ref) in overflow where key < newCount {
            dense[Int(key)] = ref
            overflow[key] = nil
        }
    }
}

