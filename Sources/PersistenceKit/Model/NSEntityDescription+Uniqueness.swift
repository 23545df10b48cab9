import Foundation

// Uniqueness constraints: what the model records of them (their names, in the version hash),
// how they are checked, and the property indexes the save and the stores work with.
extension NSEntityDescription {
    /// The names of each constraint's elements: a `String` as given, an attribute (or any
    /// property) description by its name, anything else `nil` (reported by validation).
    var uniquenessConstraintNames: [[String?]] {
        uniquenessConstraints.map { constraint in
            constraint.map { element -> String? in
                if let name = element as? String { return name }
                return (element as? NSPropertyDescription)?.name
            }
        }
    }

    /// The property indexes of the constraints whose elements all name persistent
    /// attributes, each constraint's indexes in ascending order, repeats removed.
    ///
    /// The super-entities' constraints apply too, as in Core Data (their attributes are
    /// inherited at the same indexes): each is checked among the objects of this entity.
    func resolvedUniquenessConstraints(byName: [String: Int]) -> [[Int]] {
        var result: [[Int]] = []
        var all = uniquenessConstraintNames
        var ancestor = superentity
        while let a = ancestor {
            all += a.uniquenessConstraintNames
            ancestor = a.superentity
        }
        for names in all where !names.isEmpty {
            var columns: [Int] = []
            for name in names {
                guard let name, let i = byName[name], let a = properties[i] as? NSAttributeDescription, !a.isTransient else {
                    columns = []
                    break
                }
                columns.append(i)
            }
            let unique = Array(Set(columns)).sorted()
            if !unique.isEmpty, !result.contains(unique) { result.append(unique) }
        }
        return result
    }

    /// The constraints in the model's canonical form: empty without constraints, so that
    /// models (and stores) without them keep the hashes they had.
    var uniquenessDescription: String {
        guard !uniquenessConstraints.isEmpty else { return "" }
        let constraints = uniquenessConstraintNames.map { names in
            Set(names.map { $0 ?? "?" }).sorted().joined(separator: ",")
        }
        return " unique[\(Set(constraints).sorted().joined(separator: "; "))]"
    }

    /// Checks every constraint of the entity: not empty, and each element names a persistent
    /// attribute of the entity.
    ///
    /// - Throws: ``ModelError`` `.emptyUniquenessConstraint`, `.unknownConstraintProperty`,
    ///   `.relationshipInConstraint` or `.transientAttributeInConstraint` for the first problem.
    func validateUniquenessConstraints() throws(ModelError) {
        for (constraint, names) in zip(uniquenessConstraints, uniquenessConstraintNames) {
            guard !constraint.isEmpty else {
                throw ModelError(
                    .emptyUniquenessConstraint, entity: name,
                    "a uniqueness constraint lists no attribute; list at least one attribute name, or remove it.")
            }
            for (element, propertyName) in zip(constraint, names) {
                guard let propertyName, let p = propertiesByName[propertyName] else {
                    let shown = propertyName ?? String(describing: element)
                    throw ModelError(
                        .unknownConstraintProperty(shown), entity: name, property: shown,
                        "the uniqueness constraint names '\(shown)', which is not an attribute of '\(name)'; use the "
                            + "names (or descriptions) of this entity's attributes.")
                }
                if p is NSRelationshipDescription {
                    throw ModelError(
                        .relationshipInConstraint(p.name), entity: name, property: p.name,
                        "the uniqueness constraint names the relationship '\(p.name)'; only attributes can be constrained.")
                }
                if p.isTransient {
                    throw ModelError(
                        .transientAttributeInConstraint(p.name), entity: name, property: p.name,
                        "the uniqueness constraint names the transient attribute '\(p.name)', which is never saved; "
                            + "constrain persistent attributes only.")
                }
            }
        }
    }
}
