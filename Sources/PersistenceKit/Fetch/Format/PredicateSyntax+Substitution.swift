import Foundation

extension PredicateSyntax {
    /// This syntax with each `$name` that `variables` has a convertible value for replaced
    /// by the value as a constant. A `SUBQUERY`'s own variable is left alone inside it; a
    /// variable followed by keys (`$b.title`) stays a variable.
    func substituting(_ variables: [String: Any]) -> PredicateSyntax {
        switch self {
        case .constant: return self
        case let .and(parts): return .and(parts.map { $0.substituting(variables) })
        case let .or(parts): return .or(parts.map { $0.substituting(variables) })
        case let .not(p): return .not(p.substituting(variables))
        case var .comparison(c):
            c.left = c.left.substituting(variables)
            c.right = c.right.substituting(variables)
            return .comparison(c)
        }
    }
}

extension PredicateTerm {
    func substituting(_ variables: [String: Any]) -> PredicateTerm {
        switch self {
        case .constant: return self
        case let .aggregate(elements):
            let substituted = elements.map { $0.substituting(variables) }
            var constants: [PredicateValue] = []
            for e in substituted {
                guard case let .constant(v) = e else { return .aggregate(substituted) }
                constants.append(v)
            }
            return .constant(.collection(constants))
        case var .keyPath(path):
            switch path.root {
            case .evaluatedObject:
                return self
            case let .variable(name):
                guard path.steps.isEmpty, let value = variables[name], let constant = PredicateValue(argument: value) else {
                    return self
                }
                return .constant(constant)
            case let .subquery(collection, variable, predicate):
                var inner = variables
                inner[variable] = nil
                path.root = .subquery(
                    collection: collection.substituting(variables), variable: variable, predicate: predicate.substituting(inner))
                return .keyPath(path)
            }
        }
    }
}
