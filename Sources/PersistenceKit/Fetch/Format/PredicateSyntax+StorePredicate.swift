import Foundation

// Format predicates as store predicates: comparisons of key paths (through to-one
// relationships) with constants, string operators with their options, IN over a constant
// list, BETWEEN, nil checks, `@count` of a to-many, and ANY / ALL / NONE over a to-many's
// rows. Anything else — variables, SUBQUERY, `@sum` and the other aggregates, SELF,
// comparisons of two key paths, object constants — leaves the whole predicate to run on
// objects. Constants are converted to the attribute's type when that is exact (`pages > 10`
// on an integer, `price > 10` on a double), so that the store compares what the objects
// would; one that does not convert (`pages > 10.5`) also leaves the predicate on objects.

extension PredicateSyntax {
    /// The predicate as a store predicate over rows of `entity`, or nil when some part must
    /// run on objects.
    func storePredicate(for entity: NSEntityDescription) -> StorePredicate? {
        switch self {
        case let .constant(b): return .constant(b)
        case let .and(parts): return Self.all(parts.map { $0.storePredicate(for: entity) }).map { .and($0) }
        case let .or(parts): return Self.all(parts.map { $0.storePredicate(for: entity) }).map { .or($0) }
        case let .not(inner): return inner.storePredicate(for: entity).map { .not($0) }
        case let .comparison(c): return c.storePredicate(for: entity)
        }
    }

    private static func all(_ parts: [StorePredicate?]) -> [StorePredicate]? {
        var out: [StorePredicate] = []
        for p in parts {
            guard let p else { return nil }
            out.append(p)
        }
        return out
    }
}

/// Where a key path of a format predicate leads in the model.
private enum ResolvedKeyPath {
    /// An attribute (or a to-one relationship's column) of a row reached through to-ones.
    case value(StorePath, NSPropertyDescription)
    /// A to-many relationship, and the key path's steps after it.
    case toMany(StorePath, destination: NSEntityDescription, rest: [PredicateKeyPath.Step])
    /// The number of rows a to-many relationship leads to.
    case count(StorePath)
}

private func resolve(_ steps: [PredicateKeyPath.Step], in entity: NSEntityDescription) -> ResolvedKeyPath? {
    var through: [Int] = []
    var current = entity
    for (n, step) in steps.enumerated() {
        guard case let .key(name) = step, let i = current.propertyIndex(named: name) else { return nil }
        let property = current.properties[i]
        let last = n == steps.count - 1
        if let r = property as? NSRelationshipDescription {
            guard let destination = r.destinationEntity else { return nil }
            if r.isToMany {
                let rest = Array(steps[(n + 1)...])
                if rest == [.count] { return .count(StorePath(through: through, property: i)) }
                return .toMany(StorePath(through: through, property: i), destination: destination, rest: rest)
            }
            if last { return .value(StorePath(through: through, property: i), r) }
            through.append(i)
            current = destination
        } else {
            guard last, !property.isTransient else { return nil }
            return .value(StorePath(through: through, property: i), property)
        }
    }
    return nil
}

extension PredicateComparison {
    fileprivate func storePredicate(for entity: NSEntityDescription) -> StorePredicate? {
        // The key path on the left, the constant on the right; swapped when written the
        // other way round (`5 < pages`), which only ordering comparisons allow here.
        let keyPath: PredicateKeyPath
        let constant: PredicateTerm
        let flipped: Bool
        switch (left, right) {
        case let (.keyPath(k), other):
            (keyPath, constant, flipped) = (k, other, false)
        case let (other, .keyPath(k)) where op.storeOperator != nil:
            (keyPath, constant, flipped) = (k, other, true)
        default:
            return nil
        }
        guard case .evaluatedObject = keyPath.root else { return nil }
        switch resolve(keyPath.steps, in: entity) {
        case let .value(path, property)?:
            guard modifier == .direct else { return nil }
            return test(path, property, op, constant, flipped: flipped)
        case let .count(path)?:
            guard modifier == .direct, case let .constant(v) = constant, let n = v.exactInteger, let o = op.storeOperator else { return nil }
            return .count(path, flipped ? o.swapped : o, n)
        case let .toMany(path, destination, rest)?:
            let quantifier: StoreQuantifier
            switch modifier {
            case .any: quantifier = .any
            case .all: quantifier = .all
            case .none: quantifier = .none
            case .direct: return nil
            }
            var inner = self
            inner.modifier = .direct
            inner.left = .keyPath(PredicateKeyPath(root: .evaluatedObject, steps: rest, stepLocations: [], location: keyPath.location))
            inner.right = constant
            if flipped, let o = op.storeOperator { inner.op = Self.operator(o.swapped) }
            return inner.storePredicate(for: destination).map { .each(path, quantifier, $0) }
        case nil:
            return nil
        }
    }

    /// The format operator of a store comparison.
    private static func `operator`(_ o: StoreFilter.Condition.Operator) -> Operator {
        switch o {
        case .equal: .equal
        case .notEqual: .notEqual
        case .less: .less
        case .lessOrEqual: .lessOrEqual
        case .greater: .greater
        case .greaterOrEqual: .greaterOrEqual
        }
    }

    /// The test of the value at `path` (of `property`) against `term`; `flipped` when the
    /// constant was written first (`5 < pages`).
    private func test(
        _ path: StorePath, _ property: NSPropertyDescription, _ op: Operator, _ term: PredicateTerm, flipped: Bool
    ) -> StorePredicate? {
        let values: [PredicateValue]
        switch term {
        case let .constant(.collection(vs)): values = vs
        case let .constant(v): values = [v]
        default: return nil
        }
        func convert(_ v: PredicateValue) -> StoreValue? { v.storeValue(for: property) }
        switch op {
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard values.count == 1, case let .constant(single) = term, !single.isCollection else { return nil }
            if !options.isEmpty {
                guard op == .equal || op == .notEqual, case let .string(s) = single else { return nil }
                let t = StorePredicate.text(path, textTest(.equals, s))
                return op == .equal ? t : .not(t)
            }
            guard let v = convert(single), let o = op.storeOperator else { return nil }
            if v.isNull && o != .equal && o != .notEqual { return nil }
            return .compare(path, flipped ? o.swapped : o, v)
        case .between:
            guard values.count == 2, options.isEmpty, let lo = convert(values[0]), let hi = convert(values[1]) else { return nil }
            return .and([.compare(path, .greaterOrEqual, lo), .compare(path, .lessOrEqual, hi)])
        case .in:
            guard case .constant(.collection) = term, options.isEmpty else { return nil }
            var converted: [StoreValue] = []
            for v in values {
                guard let c = convert(v) else { return nil }
                converted.append(c)
            }
            return .oneOf(path, converted)
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard values.count == 1, case let .string(s) = values[0] else { return nil }
            let kind: StoreTextTest.Kind
            switch op {
            case .beginsWith: kind = .beginsWith
            case .endsWith: kind = .endsWith
            case .contains: kind = .contains
            case .like: kind = .like
            default: kind = .matches
            }
            return .text(path, textTest(kind, s))
        }
    }

    private func textTest(_ kind: StoreTextTest.Kind, _ pattern: String) -> StoreTextTest {
        StoreTextTest(
            kind, pattern, caseInsensitive: options.contains(.caseInsensitive),
            diacriticInsensitive: options.contains(.diacriticInsensitive))
    }
}

extension PredicateComparison.Operator {
    /// The store's comparison for this operator, for the plain comparisons.
    fileprivate var storeOperator: StoreFilter.Condition.Operator? {
        switch self {
        case .equal: .equal
        case .notEqual: .notEqual
        case .less: .less
        case .lessOrEqual: .lessOrEqual
        case .greater: .greater
        case .greaterOrEqual: .greaterOrEqual
        default: nil
        }
    }
}

extension PredicateValue {
    fileprivate var isCollection: Bool {
        if case .collection = self { return true }
        return false
    }

    /// The value as an integer, when it is one exactly.
    fileprivate var exactInteger: Int64? {
        switch self {
        case let .integer(i): i
        case let .double(d): d.rounded() == d && abs(d) < 9e18 ? Int64(d) : nil
        default: nil
        }
    }

    /// The value as the store holds values of `property`, when the conversion is exact;
    /// `.null` for nil. A to-one relationship's column takes only nil here (object
    /// constants stay on objects).
    fileprivate func storeValue(for property: NSPropertyDescription) -> StoreValue? {
        if case .null = self { return .null }
        guard let a = property as? NSAttributeDescription else { return nil }
        switch (a.attributeType, self) {
        case (.integer16AttributeType, _), (.integer32AttributeType, _), (.integer64AttributeType, _):
            if case let .bool(b) = self { return .integer(b ? 1 : 0) }
            return exactInteger.map { .integer($0) }
        case (.doubleAttributeType, let .integer(i)): return .double(Double(i))
        case (.doubleAttributeType, let .double(d)): return .double(d)
        case (.floatAttributeType, let .integer(i)): return .float(Float(i))
        case (.floatAttributeType, let .double(d)): return Double(Float(d)) == d ? .float(Float(d)) : nil
        case (.decimalAttributeType, let .integer(i)): return .decimal(Decimal(i))
        case (.decimalAttributeType, let .decimal(d)): return .decimal(d)
        case (.booleanAttributeType, let .bool(b)): return .bool(b)
        case (.booleanAttributeType, let .integer(i)) where i == 0 || i == 1: return .bool(i == 1)
        case (.stringAttributeType, let .string(s)): return .string(s)
        case (.dateAttributeType, let .date(d)): return .date(d)
        case (.binaryDataAttributeType, let .data(d)): return .data(d)
        case (.UUIDAttributeType, let .uuid(u)): return .uuid(u)
        case (.URIAttributeType, let .url(u)): return .uri(u)
        default: return nil
        }
    }
}
