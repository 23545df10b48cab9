import Foundation

// Turns simple Foundation predicates into store conditions, so the store can use an
// attribute index or filter rows before any object is made. Handled: `&&` of comparisons
// (`==`, `!=`, `<`, `<=`, `>`, `>=`) between an attribute key path of the fetched object
// and a constant. Anything else (computed properties, relationships, `||`, functions) is
// evaluated on objects instead, so translation only ever speeds a fetch up.

// Each `as? any P` of a type not cast to `P` before scans the conformance records of every
// loaded library: 10–20 µs each here, five of them a third of the first of 100 indexed
// fetches in a process (measured). Where the type to expect is known, the checks below test
// for that concrete type instead, a comparison of type metadata (the first fetch: −30 µs).

/// Finds the attribute a key path of a predicate reads (see
/// `NSEntityDescription.attributeIndex(forKeyPath:writable:)`).
typealias KeyPathResolver = (_ keyPath: AnyKeyPath, _ isWritable: Bool) -> Int?

/// An expression that can describe itself as store conditions.
protocol StoreTranslatable {
    func storeConditions(_ resolve: KeyPathResolver) -> [StoreFilter.Condition]?
}

/// A key path in a predicate.
protocol TranslatableKeyPath {
    var anyKeyPath: AnyKeyPath { get }
    /// Whether the key path is applied to the predicate's variable itself (`$0.name`), not
    /// to another expression (`$0.parent!.name`, whose key path is `\.name` too).
    var isOnVariable: Bool { get }
    /// Whether the key path can write (an `@Attribute` property's can; a get-only computed
    /// property's cannot).
    var isWritable: Bool { get }
    /// The store value of `expression` if it is a constant of the key path's value type
    /// (what `#Predicate` makes of the other side of a comparison); `nil` otherwise.
    func constant(_ expression: Any) -> StoreValue?
}

/// A constant in a predicate.
protocol TranslatableConstant {
    var storeValue: StoreValue? { get }
}

extension PredicateExpressions.KeyPath: TranslatableKeyPath {
    var anyKeyPath: AnyKeyPath { keyPath }
    // Only a key path applied to the predicate's variable is one of the object's own:
    // otherwise `$0.parent!.name == "a"` on an entity related to itself would be translated
    // as the object's own `name`. (The one variable a key path's root can be is a `Variable`
    // of the key path's root type.)
    var isOnVariable: Bool { root is PredicateExpressions.Variable<Root.Output> }
    // As `WritableKeyPathMarker` tells (a managed object's writable key paths are reference
    // writable ones).
    var isWritable: Bool { keyPath is ReferenceWritableKeyPath<Root.Output, Output> }
    func constant(_ expression: Any) -> StoreValue? {
        guard let c = expression as? PredicateExpressions.Value<Output> else { return nil }
        return (c.value as? any AttributeValue)?.storeValue
    }
}

extension PredicateExpressions.Value: TranslatableConstant {
    var storeValue: StoreValue? {
        if let v = value as? any AttributeValue { return v.storeValue }
        return nil
    }
}

/// The property index and constant of `key path <op> constant`, in either order; `swapped`
/// when the constant came first.
private func operands(_ lhs: Any, _ rhs: Any, _ resolve: KeyPathResolver) -> (Int, StoreValue, swapped: Bool)? {
    if let k = lhs as? any TranslatableKeyPath, k.isOnVariable, let v = constant(rhs, for: k),
        let i = resolve(k.anyKeyPath, k.isWritable)
    {
        return (i, v, false)
    }
    if let k = rhs as? any TranslatableKeyPath, k.isOnVariable, let v = constant(lhs, for: k),
        let i = resolve(k.anyKeyPath, k.isWritable)
    {
        return (i, v, true)
    }
    return nil
}

/// The store value of the constant `expression` compared with `k`: of `k`'s value type
/// (the usual case, found without a conformance lookup), or of another attribute type.
private func constant(_ expression: Any, for k: any TranslatableKeyPath) -> StoreValue? {
    if let v = k.constant(expression) { return v }
    return (expression as? any TranslatableConstant)?.storeValue
}

extension PredicateExpressions.Equal: StoreTranslatable {
    func storeConditions(_ resolve: KeyPathResolver) -> [StoreFilter.Condition]? {
        guard let (i, v, _) = operands(lhs, rhs, resolve) else { return nil }
        return [StoreFilter.Condition(property: i, .equal, v)]
    }
}

extension PredicateExpressions.NotEqual: StoreTranslatable {
    func storeConditions(_ resolve: KeyPathResolver) -> [StoreFilter.Condition]? {
        guard let (i, v, _) = operands(lhs, rhs, resolve) else { return nil }
        return [StoreFilter.Condition(property: i, .notEqual, v)]
    }
}

extension PredicateExpressions.Comparison: StoreTranslatable {
    func storeConditions(_ resolve: KeyPathResolver) -> [StoreFilter.Condition]? {
        guard let (i, v, swapped) = operands(lhs, rhs, resolve), !v.isNull else { return nil }
        let op: StoreFilter.Condition.Operator
        switch self.op {
        case .lessThan: op = swapped ? .greater : .less
        case .lessThanOrEqual: op = swapped ? .greaterOrEqual : .lessOrEqual
        case .greaterThan: op = swapped ? .less : .greater
        case .greaterThanOrEqual: op = swapped ? .lessOrEqual : .greaterOrEqual
        @unknown default: return nil
        }
        return [StoreFilter.Condition(property: i, op, v)]
    }
}

extension PredicateExpressions.Conjunction: StoreTranslatable {
    func storeConditions(_ resolve: KeyPathResolver) -> [StoreFilter.Condition]? {
        guard let l = (lhs as? any StoreTranslatable)?.storeConditions(resolve),
            let r = (rhs as? any StoreTranslatable)?.storeConditions(resolve)
        else { return nil }
        return l + r
    }
}

extension NSEntityDescription {
    /// The persistent attribute that a key path on this entity's class reads, found by
    /// reading it from a probe object (which records the slot it was asked for); cached.
    /// `nil` for key paths that are not a stored attribute's property: relationships,
    /// transient attributes (the store holds no value for them), and computed properties.
    ///
    /// `writable`: whether the key path can write, when the caller knows (see
    /// ``TranslatableKeyPath/isWritable``); asked of the key path otherwise.
    func attributeIndex(forKeyPath keyPath: AnyKeyPath, writable: Bool? = nil) -> Int? {
        let key = StorageKeyPath(keyPath)
        if let known = wrappedKeyPathIndex.withLock({ $0[key] }) { return known >= 0 ? known : nil }
        var found: Int?
        // Only a key path that can be an `@Attribute` property is read on the probe: such a
        // property is settable (a get-only computed property's key path is not writable,
        // whatever values it returns; read here, `min(quantity, 99)` would be filtered by the
        // store as the attribute) and of an attribute type. Anything else runs in memory on
        // real objects without being read here, since reading runs the user's getter on a
        // blank object (ported Core Data code such as `Status(rawValue: statusRaw)!` traps on
        // the probe's empty string, though every stored value is valid).
        if writable ?? (keyPath is any WritableKeyPathMarker), type(of: keyPath).valueType is any AttributeValue.Type {
            let probe = managedObjectClass.init(entity: self, insertInto: nil)
            probe.flags.insert(.probe)
            _ = probe[keyPath: keyPath]
            if let slot = probe.probedSlot, let attribute = properties[slot] as? NSAttributeDescription, !attribute.isTransient,
                Self.readsExactly(slot, of: attribute, through: keyPath, on: probe)
            {
                found = slot
            }
        }
        wrappedKeyPathIndex.withLock { $0[key] = found ?? -1 }
        return found
    }

    /// Whether `keyPath` returns attribute `slot`'s value itself, not a value computed from
    /// it (a computed property reads the attribute too, and the probe records that read).
    /// Tried with each sample value, each time with every other attribute set to another one, so
    /// that a property combining attributes (`a + b`, `max(a, b)`) shows, and with values
    /// that common transformations change (otherwise `var doubled: Int64 { n * 2 }`,
    /// `name.lowercased()` or `name.isEmpty ? "(untitled)" : name` would be filtered as the
    /// attribute by the store). A to-one relationship of the probe reads as a blank
    /// object, so a property that reads through one (`parent?.name ?? name`) shows too.
    private static func readsExactly(
        _ slot: Int, of attribute: NSAttributeDescription, through keyPath: AnyKeyPath, on probe: NSManagedObject
    ) -> Bool {
        guard let samples = attribute.attributeType.sampleValues else { return false }
        for trial in samples.indices {
            let mine = samples[trial]
            for (i, p) in probe.entity.properties.enumerated() {
                guard let other = p as? NSAttributeDescription else { continue }
                if i == slot {
                    probe.setAttribute(mine, at: i)
                } else if let theirs = other.attributeType.sampleValues {
                    probe.setAttribute(theirs[(trial + 1) % theirs.count], at: i)
                }
            }
            let value = probe[keyPath: keyPath]
            // An `AttributeValue` (any `@Attribute` type, the user's own included) says how it
            // is stored; anything else converts as `setValue(_:forKey:)` would.
            guard let read = (value as? any AttributeValue)?.storeValue ?? attribute.attributeType.storeValue(from: value),
                read.isSame(as: mine)
            else { return false }
        }
        return true
    }
}

extension FetchFilter {
    /// Store conditions equivalent to the predicate, or `nil` when it cannot be translated.
    func storeFilter(for entity: NSEntityDescription) -> StoreFilter? {
        // Comparisons of the object's own attributes first: the common case, translated
        // without building a predicate tree.
        if let translatable = expression as? any StoreTranslatable,
            let conditions = translatable.storeConditions({ entity.attributeIndex(forKeyPath: $0, writable: $1) })
        {
            return StoreFilter(conditions)
        }
        guard let predicate = translate(entity) else { return nil }
        let (conditions, rest) = predicate.splitConditions()
        return StoreFilter(conditions, predicate: rest)
    }
}

/// Marks key paths that can write: an `@Attribute` property's, or a settable computed
/// property's. (A dynamic check needs a protocol: the generic class cannot be tested for
/// without its type arguments.)
protocol WritableKeyPathMarker {}
extension ReferenceWritableKeyPath: WritableKeyPathMarker {}
