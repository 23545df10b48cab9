import Foundation

// Turns Foundation predicates into store predicates (`StorePredicate`), so that the store
// evaluates them on its rows: `&&`, `||`, `!`, comparisons, nil checks, `IN` over a constant
// collection (`[1, 2].contains($0.n)`), string `starts(with:)` and `contains` (and
// `localizedLowercase.contains` of a lowercase ASCII constant, as a case-insensitive
// contains), key paths through to-one relationships (`$0.author?.country`), and over to-many
// ones `contains(where:)`, `allSatisfy`, `count` and `isEmpty`. A predicate with any other
// part (a computed property, a function the store does not know) is evaluated on objects,
// as before: translation only ever moves work to the store, never changes a result.

/// A row an expression stands for while translating: a row of `entity`, reached from the row
/// being tested by the to-one steps `through`.
struct TranslationRow {
    var entity: NSEntityDescription
    var through: [Int]
}

/// The variables of a predicate bound to rows (the predicate's own input, and the element
/// variables of `contains(where:)` and `allSatisfy`).
struct TranslationScope {
    var rows: [PredicateExpressions.VariableID: TranslationRow]
}

/// What a value expression stands for in store terms.
enum TranslatedOperand {
    /// A row (the input, or one reached through to-ones).
    case row(TranslationRow)
    /// An attribute's value.
    case value(StorePath)
    /// A stored string's lowercase form (`localizedLowercase`).
    case lowercased(StorePath)
    /// A to-many relationship of a row, leading to rows of `destination`.
    case toMany(StorePath, destination: NSEntityDescription)
    /// The number of rows a to-many relationship leads to.
    case count(StorePath)
    /// Whether a to-many relationship leads to no row (`isEmpty`).
    case emptiness(StorePath)
    /// A constant.
    case constant(StoreValue)
    /// A constant collection (for `contains`).
    case constants([StoreValue])
}

/// A Boolean expression that translates into a store predicate.
protocol StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate?
}

/// A value expression that translates into an operand.
protocol StoreOperandTranslatable {
    func storeOperand(_ scope: TranslationScope) -> TranslatedOperand?
}

/// The operand of any expression: a translatable one, or a Boolean expression used as a
/// value (never here).
private func operand(_ expression: Any, _ scope: TranslationScope) -> TranslatedOperand? {
    (expression as? any StoreOperandTranslatable)?.storeOperand(scope)
}

/// The predicate of a Boolean expression.
func storePredicate(_ expression: Any, _ scope: TranslationScope) -> StorePredicate? {
    if let p = (expression as? any StorePredicateTranslatable)?.storePredicate(scope) { return p }
    switch operand(expression, scope) {
    case let .value(path)?: return .compare(path, .equal, .bool(true))  // a Boolean attribute (`$0.isDone`)
    case let .emptiness(path)?: return .count(path, .equal, 0)
    default: return nil
    }
}

extension PredicateExpressions.Variable: StoreOperandTranslatable {
    func storeOperand(_ scope: TranslationScope) -> TranslatedOperand? {
        scope.rows[key].map { .row($0) }
    }
}

extension PredicateExpressions.KeyPath: StoreOperandTranslatable {
    func storeOperand(_ scope: TranslationScope) -> TranslatedOperand? {
        switch operand(root, scope) {
        case let .row(row)?:
            let entity = row.entity
            if let i = entity.attributeIndex(forKeyPath: keyPath, writable: keyPath is ReferenceWritableKeyPath<Root.Output, Output>) {
                return .value(StorePath(through: row.through, property: i))
            }
            guard let i = entity.relationshipIndex(forKeyPath: keyPath),
                let r = entity.properties[i] as? NSRelationshipDescription, let destination = r.destinationEntity
            else { return nil }
            if r.isToMany { return .toMany(StorePath(through: row.through, property: i), destination: destination) }
            return .row(TranslationRow(entity: destination, through: row.through + [i]))
        case let .toMany(path, _)?:
            guard let counted = Root.Output.self as? any CountedRelationship.Type else { return nil }
            if keyPath == counted.countKeyPath { return .count(path) }
            if keyPath == counted.isEmptyKeyPath { return .emptiness(path) }
            return nil
        case let .value(path)?:
            if (keyPath as AnyKeyPath) == (\String.localizedLowercase as AnyKeyPath) { return .lowercased(path) }
            return nil
        default:
            return nil
        }
    }
}

/// The to-many sets of managed objects, whose `count` a predicate may test.
protocol CountedRelationship {
    static var countKeyPath: AnyKeyPath { get }
    static var isEmptyKeyPath: AnyKeyPath { get }
}

extension Set: CountedRelationship where Element: NSManagedObject {
    // Formed in a function generic over `Hashable`: written here, in the extension
    // constrained to managed objects, the key paths crash the 6.3 compiler.
    static var countKeyPath: AnyKeyPath { setCountKeyPath(Element.self) }
    static var isEmptyKeyPath: AnyKeyPath { setIsEmptyKeyPath(Element.self) }
}

private func setCountKeyPath<E: Hashable>(_: E.Type) -> AnyKeyPath { \Set<E>.count }
private func setIsEmptyKeyPath<E: Hashable>(_: E.Type) -> AnyKeyPath { \Set<E>.isEmpty }

extension PredicateExpressions.Value: StoreOperandTranslatable {
    func storeOperand(_ scope: TranslationScope) -> TranslatedOperand? {
        if let v = value as? any AttributeValue { return .constant(v.storeValue) }
        if let vs = value as? any Sequence, let values = Self.storeValues(vs) { return .constants(values) }
        return nil
    }

    private static func storeValues(_ sequence: any Sequence) -> [StoreValue]? {
        var out: [StoreValue] = []
        for element in sequence {
            guard let v = element as? any AttributeValue else { return nil }
            out.append(v.storeValue)
        }
        return out
    }
}

extension PredicateExpressions.NilLiteral: StoreOperandTranslatable {
    func storeOperand(_ scope: TranslationScope) -> TranslatedOperand? { .constant(.null) }
}

extension PredicateExpressions.OptionalFlatMap: StoreOperandTranslatable {
    func storeOperand(_ scope: TranslationScope) -> TranslatedOperand? {
        guard case let .row(row)? = operand(wrapped, scope) else { return nil }
        var inner = scope
        inner.rows[variable.key] = row
        return operand(transform, inner)
    }
}

extension PredicateExpressions.OptionalFlatMap: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        // `$0.author?.isBestseller == true` is a comparison; `($0.author?.isBestseller)!`
        // or a flat map used as a Boolean is not translated.
        nil
    }
}

/// A comparison of two operands, in either order.
private func comparison(_ lhs: Any, _ op: StoreFilter.Condition.Operator, _ rhs: Any, _ scope: TranslationScope) -> StorePredicate? {
    guard let l = operand(lhs, scope), let r = operand(rhs, scope) else { return nil }
    switch (l, r) {
    case let (_, .constant(c)): return compare(l, op, c)
    case let (.constant(c), _): return compare(r, op.swapped, c)
    default: return nil
    }
}

private func compare(_ operand: TranslatedOperand, _ op: StoreFilter.Condition.Operator, _ constant: StoreValue) -> StorePredicate? {
    switch operand {
    case let .value(path):
        return .compare(path, op, constant)
    case let .count(path):
        guard case let .integer(n) = constant else { return nil }
        return .count(path, op, n)
    case let .row(row):
        // `$0.author == nil` / `!= nil`: the to-one column holds a reference or null.
        guard constant.isNull, let last = row.through.last, op == .equal || op == .notEqual else { return nil }
        return .compare(StorePath(through: Array(row.through.dropLast()), property: last), op, .null)
    default:
        return nil
    }
}

extension StoreFilter.Condition.Operator {
    /// The operator that holds for `b op' a` exactly when `a op b` holds.
    var swapped: Self {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        }
    }
}

extension PredicateExpressions.Equal: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? { comparison(lhs, .equal, rhs, scope) }
}

extension PredicateExpressions.NotEqual: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? { comparison(lhs, .notEqual, rhs, scope) }
}

extension PredicateExpressions.Comparison: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        let op: StoreFilter.Condition.Operator
        switch self.op {
        case .lessThan: op = .less
        case .lessThanOrEqual: op = .lessOrEqual
        case .greaterThan: op = .greater
        case .greaterThanOrEqual: op = .greaterOrEqual
        @unknown default: return nil
        }
        guard let p = comparison(lhs, op, rhs, scope) else { return nil }
        // A null constant orders nothing in Swift (such a predicate does not compile); keep
        // the store from ordering it either.
        if case let .compare(_, _, c) = p, c.isNull { return nil }
        return p
    }
}

extension PredicateExpressions.Conjunction: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        guard let l = PersistenceKit.storePredicate(lhs, scope), let r = PersistenceKit.storePredicate(rhs, scope) else { return nil }
        return .and([l, r])
    }
}

extension PredicateExpressions.Disjunction: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        guard let l = PersistenceKit.storePredicate(lhs, scope), let r = PersistenceKit.storePredicate(rhs, scope) else { return nil }
        return .or([l, r])
    }
}

extension PredicateExpressions.Negation: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        PersistenceKit.storePredicate(wrapped, scope).map { .not($0) }
    }
}

extension PredicateExpressions.SequenceContains: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        guard case let .constants(values)? = operand(sequence, scope), case let .value(path)? = operand(element, scope) else {
            return nil
        }
        return .oneOf(path, values)
    }
}

extension PredicateExpressions.SequenceContainsWhere: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        guard case let .toMany(path, destination)? = operand(sequence, scope) else { return nil }
        var inner = scope
        inner.rows[variable.key] = TranslationRow(entity: destination, through: [])
        return PersistenceKit.storePredicate(test, inner).map { .each(path, .any, $0) }
    }
}

extension PredicateExpressions.SequenceAllSatisfy: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        guard case let .toMany(path, destination)? = operand(sequence, scope) else { return nil }
        var inner = scope
        inner.rows[variable.key] = TranslationRow(entity: destination, through: [])
        return PersistenceKit.storePredicate(test, inner).map { .each(path, .all, $0) }
    }
}

extension PredicateExpressions.SequenceStartsWith: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        guard case let .value(path)? = operand(base, scope), case let .constant(.string(prefix))? = operand(prefix, scope) else {
            return nil
        }
        return .text(path, StoreTextTest(.beginsWith, prefix))
    }
}

extension PredicateExpressions.CollectionContainsCollection: StorePredicateTranslatable {
    func storePredicate(_ scope: TranslationScope) -> StorePredicate? {
        guard case let .constant(.string(needle))? = operand(other, scope) else { return nil }
        switch operand(base, scope) {
        case let .value(path)?:
            return .text(path, StoreTextTest(.contains, needle))
        case let .lowercased(path)?:
            // Lowercasing the string and looking for a lowercase ASCII needle finds what a
            // case-insensitive search finds; other needles stay in memory.
            guard needle.utf8.allSatisfy({ $0 < 0x80 }), needle == needle.lowercased() else { return nil }
            return .text(path, StoreTextTest(.contains, needle, caseInsensitive: true))
        default:
            return nil
        }
    }
}

extension NSEntityDescription {
    /// The relationship a key path on this entity's class reads (a `@Relationship`
    /// property's), found by reading it from a probe object; cached. `nil` for anything else.
    func relationshipIndex(forKeyPath keyPath: AnyKeyPath) -> Int? {
        let key = StorageKeyPath(keyPath)
        if let known = relationshipKeyPathIndex.withLock({ $0[key] }) { return known >= 0 ? known : nil }
        var found: Int?
        // Only a settable key path whose value is a relationship's Swift type is read on the
        // probe (the same care as for attributes: see `attributeIndex(forKeyPath:)`).
        if keyPath is any WritableKeyPathMarker, let valueType = type(of: keyPath).valueType as? any RelationshipValue.Type {
            let probe = managedObjectClass.init(entity: self, insertInto: nil)
            probe.flags.insert(.probe)
            _ = probe[keyPath: keyPath]
            if let slot = probe.probedSlot, let r = properties[slot] as? NSRelationshipDescription, r.isToMany == valueType.isToMany {
                found = slot
            }
        }
        relationshipKeyPathIndex.withLock { $0[key] = found ?? -1 }
        return found
    }
}

/// `predicate` as a store predicate over rows of `entity`, or nil when some part of it must
/// run on objects.
func storePredicate<Root: NSManagedObject>(of predicate: Predicate<Root>, for entity: NSEntityDescription) -> StorePredicate? {
    let scope = TranslationScope(rows: [predicate.variable.key: TranslationRow(entity: entity, through: [])])
    return storePredicate(predicate.expression, scope)
}

extension StorePredicate {
    /// The predicate split into the comparisons of the row's own attributes with constants
    /// at its top level (which an index may answer) and the rest; nil for a part that is
    /// empty.
    func splitConditions() -> ([StoreFilter.Condition], StorePredicate?) {
        var conditions: [StoreFilter.Condition] = []
        var rest: [StorePredicate] = []
        func visit(_ p: StorePredicate) {
            switch p {
            case let .and(parts): parts.forEach(visit)
            case let .compare(path, op, value) where path.through.isEmpty && !value.isNull:
                conditions.append(StoreFilter.Condition(property: path.property, op, value))
            case .constant(true): break
            default: rest.append(p)
            }
        }
        visit(self)
        return (conditions, rest.isEmpty ? nil : (rest.count == 1 ? rest[0] : .and(rest)))
    }
}
