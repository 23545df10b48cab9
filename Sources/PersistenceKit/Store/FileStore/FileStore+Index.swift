import Foundation

/// An index of one attribute: value → primary keys, plus the distinct values in order for
/// range conditions (rebuilt lazily after changes).
struct AttributeIndex {
    var keysByValue: [StoreValue: KeySet] = [:]
    var sortedValues: [StoreValue]?

    /// The key a value is indexed under. A URL with a base is keyed by its absolute form:
    /// the file holds and compares URIs by their absolute string, but `URL`'s `==` tells a
    /// relative URL from the same address spelled absolutely. Keyed as given, an index built
    /// by a save misses a relative URL that the index rebuilt after a reopen finds.
    static func key(_ value: StoreValue) -> StoreValue {
        if case let .uri(u) = value, u.baseURL != nil, let absolute = URL(string: u.absoluteString) { return .uri(absolute) }
        return value
    }

    mutating func add(_ value: StoreValue, _ pk: Int64) {
        let value = Self.key(value)
        // NaN is not indexed: no "==" or range condition matches it, and as a key it is
        // unequal even to itself (each add made a new entry, and sorting the values broke).
        if value.isNaN { return }
        // One hash and lookup: the default's autoclosure runs only for a new value.
        var isNewValue = false
        keysByValue[value, default: { isNewValue = true; return KeySet() }()].insert(pk)
        if isNewValue { sortedValues = nil }
    }

    mutating func remove(_ value: StoreValue, _ pk: Int64) {
        let value = Self.key(value)
        if value.isNaN { return }  // never added
        // In place: copying the key set out and back in copied all of its keys.
        guard keysByValue[value]?.remove(pk) == true else { return }
        if keysByValue[value]?.isEmpty == true {
            keysByValue[value] = nil
            sortedValues = nil
        }
    }

    /// Primary keys whose value satisfies `condition` (which must be on this attribute).
    mutating func keys(matching condition: StoreFilter.Condition) -> [Int64]? {
        switch condition.op {
        case .equal:
            return keysByValue[Self.key(condition.value)]?.elements ?? []  // shared, not copied
        case .notEqual:
            return nil
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if sortedValues == nil {
                sortedValues = keysByValue.keys.sorted { StoreValue.compare($0, $1) == .orderedAscending }
            }
            let values = sortedValues ?? []
            // First value not below the bound (binary search).
            func lowerBound(_ inclusive: Bool) -> Int {
                var lo = 0, hi = values.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    let c = StoreValue.compare(values[mid], condition.value)
                    if c == .orderedAscending || (!inclusive && c == .orderedSame) { lo = mid + 1 } else { hi = mid }
                }
                return lo
            }
            let range: Range<Int>
            switch condition.op {
            case .less: range = 0..<lowerBound(true)
            case .lessOrEqual: range = 0..<lowerBound(false)
            case .greater: range = lowerBound(false)..<values.count
            default: range = lowerBound(true)..<values.count
            }
            var result: [Int64] = []
            for v in values[range] where !v.isNull { keysByValue[v]?.appendElements(to: &result) }
            return result
        }
    }
}

extension AttributeIndex {
    /// The positions in `sortedValues` of the values that satisfy every one of `conditions`
    /// (each on this attribute, none "not equal"): the intersection of their ranges, so
    /// `year >= 1900 && year <= 1909` reads one range. Null values, which sort first, are
    /// left out (no range condition holds for them).
    mutating func valueRange(_ conditions: [StoreFilter.Condition]) -> Range<Int> {
        if sortedValues == nil {
            sortedValues = keysByValue.keys.sorted { StoreValue.compare($0, $1) == .orderedAscending }
        }
        let values = sortedValues ?? []
        // The first position whose value is not below `v` (`inclusive`) or above it.
        func bound(_ v: StoreValue, inclusive: Bool) -> Int {
            var lo = 0, hi = values.count
            while lo < hi {
                let mid = (lo + hi) / 2
                let c = StoreValue.compare(values[mid], v)
                if c == .orderedAscending || (!inclusive && c == .orderedSame) { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        var lo = 0, hi = values.count
        while lo < hi, values[lo].isNull { lo += 1 }
        for c in conditions {
            switch c.op {
            case .equal:
                lo = max(lo, bound(c.value, inclusive: true))
                hi = min(hi, bound(c.value, inclusive: false))
            case .less: hi = min(hi, bound(c.value, inclusive: true))
            case .lessOrEqual: hi = min(hi, bound(c.value, inclusive: false))
            case .greater: lo = max(lo, bound(c.value, inclusive: false))
            case .greaterOrEqual: lo = max(lo, bound(c.value, inclusive: true))
            case .notEqual: break
            }
        }
        return lo..<max(lo, hi)
    }

    /// Every indexed value, in ``StoreValue/compare(_:_:)`` order (nil first).
    mutating func orderedValues() -> [StoreValue] {
        if sortedValues == nil {
            sortedValues = keysByValue.keys.sorted { StoreValue.compare($0, $1) == .orderedAscending }
        }
        return sortedValues ?? []
    }

    /// The primary keys whose value satisfies every one of `conditions` (see `valueRange`).
    mutating func keys(matchingAll conditions: [StoreFilter.Condition]) -> [Int64] {
        if conditions.count == 1, let keys = keys(matching: conditions[0]) { return keys }
        let range = valueRange(conditions)
        var result: [Int64] = []
        for v in sortedValues![range] { keysByValue[v]?.appendElements(to: &result) }
        return result
    }

    /// How many rows have a value that satisfies every one of `conditions`, read from the
    /// index alone.
    mutating func count(matchingAll conditions: [StoreFilter.Condition]) -> Int {
        if conditions.count == 1, conditions[0].op == .equal { return keysByValue[Self.key(conditions[0].value)]?.count ?? 0 }
        let range = valueRange(conditions)
        var n = 0
        for v in sortedValues![range] { n += keysByValue[v]?.count ?? 0 }
        return n
    }
}

/// A table's attribute indexes, by property index.
///
/// An array rather than a `[Int: AttributeIndex]`: a save updates every indexed column of
/// every row it writes, and hashing the column number for each was a fiftieth of saving
/// 100,000 rows (measured with callgrind).
struct ColumnIndexes {
    private var byColumn: ContiguousArray<AttributeIndex> = []

    /// The index of property `column`; empty until values are added.
    subscript(column: Int) -> AttributeIndex {
        get { column < byColumn.count ? byColumn[column] : AttributeIndex() }
        _modify {
            if column >= byColumn.count {
                byColumn.append(contentsOf: repeatElement(AttributeIndex(), count: column + 1 - byColumn.count))
            }
            yield &byColumn[column]
        }
    }
}

extension FileStore.Table {
    mutating func index(pk: Int64, ref: FileStore.RowRef, columns: [Int], buf: UnsafeRawBufferPointer, path: String) throws(FileStoreError) {
        for c in columns {
            // Attribute columns only: no entity index is read, so the file's numbering is not needed.
            var r = ByteReader(buf, range: ref.offset..<(ref.offset + ref.length), path: path, numbering: nil)
            let v = try FileStoreFormat.decodeValue(at: c, &r)
            indexes[c].add(v, pk)
        }
    }

    /// Moves row `pk` in the indexes from the values of its old record `old` to `row`'s. A
    /// column whose value did not change is left alone: most updates change no indexed
    /// value, and taking a key out of a value's set and putting it back cost more than the
    /// rest of committing the row (measured: a save of one changed object, 20%).
    mutating func reindex(
        pk: Int64, from old: FileStore.RowRef, to row: StoreRow, columns: [Int], buf: UnsafeRawBufferPointer, path: String
    ) {
        for c in columns {
            let new = row.value(at: c)
            // Attribute columns only: no entity index is read, so the file's numbering is not needed.
            var r = ByteReader(buf, range: old.offset..<(old.offset + old.length), path: path, numbering: nil)
            // The old row was indexed when it was put, so it decodes; if not, nothing was indexed.
            if let previous = try? FileStoreFormat.decodeValue(at: c, &r) {
                if previous.isSame(as: new) { continue }
                indexes[c].remove(previous, pk)
            }
            indexes[c].add(new, pk)
        }
    }

    mutating func unindex(pk: Int64, ref: FileStore.RowRef, columns: [Int], buf: UnsafeRawBufferPointer, path: String) {
        for c in columns {
            // Attribute columns only: no entity index is read, so the file's numbering is not needed.
            var r = ByteReader(buf, range: ref.offset..<(ref.offset + ref.length), path: path, numbering: nil)
            // The row was indexed when it was put, so it decodes; if not, nothing was indexed.
            guard let v = try? FileStoreFormat.decodeValue(at: c, &r) else { continue }
            indexes[c].remove(v, pk)
        }
    }
}
