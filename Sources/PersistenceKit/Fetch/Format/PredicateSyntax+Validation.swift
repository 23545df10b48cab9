import Foundation

/// Checks that every key path of `syntax` names properties of `entity`: attributes and
/// relationships, through relationships to their destination entities; that collection
/// operators (`@count`, `@sum`, ...) follow to-many relationships; and that nothing follows
/// an attribute. Key paths starting at a variable other than a `SUBQUERY`'s are not checked.
///
/// - Parameter format: the format string `syntax` was parsed from, for the error.
/// - Throws: ``PredicateFormatError`` of kind `.key`, at the column of the offending key,
///   naming the entity it was looked up on.
func validate(_ syntax: PredicateSyntax, for entity: NSEntityDescription, format: String = "") throws(PredicateFormatError) {
    try PredicateValidation(format: format, root: entity, variables: [:]).check(syntax)
}

/// Validates predicates against one root entity.
private struct PredicateValidation {
    let format: String
    let root: NSEntityDescription
    /// The entities of the `SUBQUERY` variables in scope.
    var variables: [String: NSEntityDescription]

    /// What a key path reads after some of its steps.
    enum Reading {
        /// Objects of `entity`: one, or a collection of them.
        case objects(NSEntityDescription, isCollection: Bool)
        /// Values of the attribute `name` of `entity`: one, or a collection of them.
        case attribute(String, of: NSEntityDescription, isCollection: Bool)
        /// A number (after `@count`, `@sum`, ...).
        case number
        /// Not known (a variable given on evaluation).
        case unknown
    }

    func check(_ syntax: PredicateSyntax) throws(PredicateFormatError) {
        switch syntax {
        case .constant: return
        case let .and(parts), let .or(parts):
            for p in parts { try check(p) }
        case let .not(p): try check(p)
        case let .comparison(c):
            try check(c.left)
            try check(c.right)
        }
    }

    private func check(_ e: PredicateTerm) throws(PredicateFormatError) {
        switch e {
        case .constant: return
        case let .aggregate(elements):
            for element in elements { try check(element) }
        case let .keyPath(path): _ = try reading(path)
        }
    }

    private func error(_ problem: String, _ location: PredicateLocation, _ entity: NSEntityDescription) -> PredicateFormatError {
        PredicateFormatError(.key, problem, format: format, column: location.column, entityName: entity.name)
    }

    private func reading(_ path: PredicateKeyPath) throws(PredicateFormatError) -> Reading {
        var current: Reading
        switch path.root {
        case .evaluatedObject:
            current = .objects(root, isCollection: false)
        case let .variable(name):
            current = variables[name].map { .objects($0, isCollection: false) } ?? .unknown
        case let .subquery(collection, variable, predicate):
            guard case let .keyPath(collectionPath) = collection else { return .unknown }
            let elements = try reading(collectionPath)
            guard case let .objects(entity, isCollection: true) = elements else {
                if case .unknown = elements { return .unknown }
                throw error("the collection of SUBQUERY must be a to-many relationship", collectionPath.location, root)
            }
            var inner = self
            inner.variables[variable] = entity
            try inner.check(predicate)
            current = .objects(entity, isCollection: true)
        }
        for (step, location) in zip(path.steps, path.stepLocations) {
            current = try read(step, at: location, after: current)
        }
        return current
    }

    private func read(
        _ step: PredicateKeyPath.Step, at location: PredicateLocation, after current: Reading
    ) throws(PredicateFormatError) -> Reading {
        switch (step, current) {
        case (_, .unknown):
            return .unknown
        case let (.key(key), .objects(entity, isCollection)):
            guard let i = entity.propertyIndex(named: key) else {
                throw error(
                    "entity '\(entity.name)' has no attribute or relationship '\(key)' (it has: "
                        + entity.properties.map(\.name).joined(separator: ", ") + ")", location, entity)
            }
            let property = entity.properties[i]
            if let r = property as? NSRelationshipDescription {
                // A relationship whose destination is not resolved (a model not yet built)
                // cannot be followed further; what comes after it is not checked.
                guard let destination = r.destinationEntity else { return .unknown }
                return .objects(destination, isCollection: isCollection || r.isToMany)
            }
            return .attribute(key, of: entity, isCollection: isCollection)
        case let (.key(key), .attribute(name, entity, isCollection))
        where entity.propertyIndex(named: name).flatMap({ entity.properties[$0] as? NSCompositeAttributeDescription })?
            .elements.contains { $0.name == key } == true:
            return .attribute("\(name).\(key)", of: entity, isCollection: isCollection)  // an element of a composite
        case let (.key(key), .attribute(name, entity, _)):
            throw error(
                "'\(name)' of entity '\(entity.name)' is an attribute, so the key path cannot go on to '\(key)'", location, entity)
        case let (.key(key), .number):
            throw error("a collection operator gives a number, so the key path cannot go on to '\(key)'", location, root)
        case (.count, .objects(_, isCollection: true)), (.count, .attribute(_, _, isCollection: true)):
            return .number
        case (.sum, .objects(let entity, isCollection: true)), (.avg, .objects(let entity, isCollection: true)),
            (.min, .objects(let entity, isCollection: true)), (.max, .objects(let entity, isCollection: true)):
            return .objects(entity, isCollection: false)
        case (.sum, .attribute(_, _, isCollection: true)), (.avg, .attribute(_, _, isCollection: true)),
            (.min, .attribute(_, _, isCollection: true)), (.max, .attribute(_, _, isCollection: true)):
            return .number
        case let (op, .objects(entity, _)), let (op, .attribute(_, entity, _)):
            throw error("@\(Self.name(of: op)) must follow a to-many relationship; here it follows a single value", location, entity)
        case let (op, .number):
            throw error("@\(Self.name(of: op)) must follow a to-many relationship; here it follows a number", location, root)
        }
    }

    private static func name(of step: PredicateKeyPath.Step) -> String {
        switch step {
        case let .key(k): return k
        case .count: return "count"
        case .sum: return "sum"
        case .avg: return "avg"
        case .min: return "min"
        case .max: return "max"
        }
    }
}
