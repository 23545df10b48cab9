import Foundation

// In-memory evaluation of a predicate's syntax, with Core Data's semantics: key paths read
// through `value(forKey:)`, a nil to-one makes the rest of the path nil, a key read of a
// to-many gives the collection of the elements' values, `ANY`/`ALL`/`NONE` compare each
// element of their left side.

/// Why a predicate could not be evaluated on an object (Core Data raises for these).
struct PredicateEvaluationError: Error, CustomStringConvertible {
    let description: String
}

/// Whether `syntax` holds for `object`, with `variables` giving the values of `$name`s.
///
/// - Throws: ``PredicateEvaluationError`` for a key the object's entity lacks, a variable
///   without a value, an invalid `MATCHES` pattern, or a `BETWEEN` without two bounds.
func evaluate(_ syntax: PredicateSyntax, on object: NSManagedObject, variables: [String: Any]) throws -> Bool {
    try PredicateEvaluation(root: .object(object), variables: variables).holds(syntax)
}

/// Whether `syntax` holds for `value` (a managed object, or a plain value `SELF` stands for).
func evaluate(_ syntax: PredicateSyntax, onValue value: Any?, variables: [String: Any]) throws -> Bool {
    try PredicateEvaluation(root: PredicateOperand(value), variables: variables).holds(syntax)
}

/// A value met while evaluating: a constant, an object, or a collection of values.
enum PredicateOperand {
    case null
    /// A constant; never `.null` nor `.collection` (those are `.null` and `.many`).
    case value(PredicateValue)
    case object(NSManagedObject)
    case many([PredicateOperand])
    /// A dictionary result (a group of a dictionary fetch): keys read its entries.
    case record([String: Any])

    init(_ constant: PredicateValue) {
        switch constant {
        case .null: self = .null
        case let .collection(values): self = .many(values.map(PredicateOperand.init))
        default: self = .value(constant)
        }
    }

    /// The operand a value read from an object, or given for a variable, stands for.
    init(_ any: Any?) {
        guard let any else {
            self = .null
            return
        }
        if let o = any as? NSManagedObject {
            self = .object(o)
        } else if let record = any as? [String: Any] {
            self = .record(record)
        } else if let set = any as? Set<NSManagedObject> {
            self = .many(set.map { .object($0) })
        } else if let ordered = any as? NSOrderedSet {
            // An ordered to-many relationship's value.
            self = .many(ordered.array.compactMap { ($0 as? NSManagedObject).map(PredicateOperand.object) })
        } else if let constant = PredicateValue(argument: any), case .collection = constant,
            let elements = PredicateValue.elements(of: any)
        {
            self = .many(elements.map { PredicateOperand($0) })
        } else if let constant = PredicateValue(argument: any) {
            self = PredicateOperand(constant)
        } else if let elements = PredicateValue.elements(of: any) {
            self = .many(elements.map { PredicateOperand($0) })
        } else {
            self = .null
        }
    }

    /// The elements a modifier or an aggregate goes over: a collection's, none for `nil`,
    /// and a single value as the one element.
    var elements: [PredicateOperand] {
        switch self {
        case .null: return []
        case let .many(xs): return xs
        default: return [self]
        }
    }
}

/// Evaluates predicates for one evaluated object.
struct PredicateEvaluation {
    let root: PredicateOperand
    var variables: [String: Any]

    func holds(_ syntax: PredicateSyntax) throws -> Bool {
        switch syntax {
        case let .constant(b): return b
        case let .and(parts):
            for p in parts where try !holds(p) { return false }
            return true
        case let .or(parts):
            for p in parts where try holds(p) { return true }
            return false
        case let .not(p): return try !holds(p)
        case let .comparison(c): return try holds(c)
        }
    }

    private func holds(_ c: PredicateComparison) throws -> Bool {
        let left = try operand(c.left)
        let right = try operand(c.right)
        let compare = { (l: PredicateOperand) throws -> Bool in try PredicateOperand.compare(l, c.op, right, c.options) }
        switch c.modifier {
        case .direct: return try compare(left)
        case .any: return try left.elements.contains(where: compare)
        case .all: return try left.elements.allSatisfy(compare)
        case .none: return try !left.elements.contains(where: compare)
        }
    }

    func operand(_ e: PredicateTerm) throws -> PredicateOperand {
        switch e {
        case let .constant(v): return PredicateOperand(v)
        case let .aggregate(elements): return .many(try elements.map { try operand($0) })
        case let .keyPath(path): return try operand(path)
        }
    }

    private func operand(_ path: PredicateKeyPath) throws -> PredicateOperand {
        let start: PredicateOperand
        switch path.root {
        case .evaluatedObject:
            start = root
        case let .variable(name):
            guard let value = variables[name] else {
                throw PredicateEvaluationError(description: "no value for the variable $\(name)")
            }
            start = PredicateOperand(value)
        case let .subquery(collection, variable, predicate):
            var inner = self
            var matching: [PredicateOperand] = []
            for element in try operand(collection).elements {
                inner.variables[variable] = element.anyValue
                if try inner.holds(predicate) { matching.append(element) }
            }
            start = .many(matching)
        }
        return try Self.apply(path.steps[...], to: start)
    }

    /// `steps` read from `operand` in turn.
    private static func apply(_ steps: ArraySlice<PredicateKeyPath.Step>, to operand: PredicateOperand) throws -> PredicateOperand {
        var current = operand
        var rest = steps
        while let step = rest.popFirst() {
            switch step {
            case let .key(key):
                current = try value(of: current, forKey: key)
            case .count:
                switch current {
                case .null: current = .value(.integer(0))
                case let .many(xs): current = .value(.integer(Int64(xs.count)))
                default: throw PredicateEvaluationError(description: "@count follows a value that is not a collection")
                }
            case .sum, .avg, .min, .max:
                let values = try current.elements.map { try apply(rest, to: $0) }.flatMap(\.elements)
                return try aggregate(step, of: values)
            }
        }
        return current
    }

    /// The value of `key` of an object; of each element of a collection (nested collections
    /// flattened); `nil` of `nil`.
    private static func value(of operand: PredicateOperand, forKey key: String) throws -> PredicateOperand {
        switch operand {
        case .null:
            return .null
        case let .object(o):
            guard o.entity.propertyIndex(named: key) != nil else {
                throw PredicateEvaluationError(description: "entity '\(o.entity.name)' has no property '\(key)'")
            }
            return PredicateOperand(o.value(forKey: key))
        case let .many(xs):
            return .many(try xs.flatMap { x -> [PredicateOperand] in
                let v = try value(of: x, forKey: key)
                if case let .many(inner) = v { return inner }
                return [v]
            })
        case let .record(entries):
            return PredicateOperand(entries[key])
        case let .value(.string(text)) where key == "length":
            // A string's `length`, as NSString counts it (UTF-16 code units): what a string
            // attribute's validation predicates test (`length <= 40`).
            return .value(.integer(Int64(text.utf16.count)))
        case .value:
            throw PredicateEvaluationError(description: "the key '\(key)' follows a value that is not an object")
        }
    }

    /// `@sum`, `@avg`, `@min` or `@max` of `values` (nils left out): the sum of none is 0,
    /// the others of none are nil.
    private static func aggregate(_ op: PredicateKeyPath.Step, of values: [PredicateOperand]) throws -> PredicateOperand {
        let present = values.filter { if case .null = $0 { return false } else { return true } }
        switch op {
        case .min, .max:
            var best: PredicateOperand?
            for v in present {
                guard let b = best else {
                    best = v
                    continue
                }
                guard let order = PredicateOperand.order(v, b, []) else {
                    throw PredicateEvaluationError(description: "@min and @max need values that compare with each other")
                }
                if op == .min ? order == .orderedAscending : order == .orderedDescending { best = v }
            }
            return best ?? .null
        default:
            var numbers: [PredicateNumber] = []
            for v in present {
                guard let n = PredicateNumber(v) else {
                    throw PredicateEvaluationError(description: "@sum and @avg need numbers")
                }
                numbers.append(n)
            }
            if op == .avg, numbers.isEmpty { return .null }
            let sum = numbers.reduce(PredicateNumber.integer(0), +)
            return .value(op == .avg ? (sum / numbers.count).constant : sum.constant)
        }
    }
}

extension PredicateOperand {
    /// The value a variable is bound to for this operand (a `SUBQUERY`'s element).
    var anyValue: Any? {
        switch self {
        case .null: return nil
        case let .value(v): return v
        case let .object(o): return o
        case let .many(xs): return xs.map(\.anyValue)
        case let .record(entries): return entries
        }
    }
}
