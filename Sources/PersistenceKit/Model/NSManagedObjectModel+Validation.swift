import Foundation

extension NSManagedObjectModel {
    /// Checks the model and resolves relationship destinations and inverses given by name.
    ///
    /// Reports, with the entity and property named: empty or duplicate names, unsupported
    /// attribute types, default values of the wrong type, unknown destinations, sub-entities
    /// that are not in the model, missing, unknown or mismatched inverses, inconsistent counts, and uniqueness constraints that
    /// name no attribute, an unknown property, a relationship or a transient attribute.
    ///
    /// - Throws: ``ModelError`` for the first problem found (entities and properties are
    ///   checked in name order, so the report is deterministic).
    public func validate() throws(ModelError) {
        let sortedEntities = entities.sorted { $0.name < $1.name }
        var names = Set<String>()
        for entity in sortedEntities {
            guard !entity.name.isEmpty else {
                throw ModelError(.emptyName, entity: "", "an entity has an empty name; give every entity a name.")
            }
            guard names.insert(entity.name).inserted else {
                throw ModelError(
                    .duplicateEntity, entity: entity.name,
                    "two entities are named '\(entity.name)'; entity names must be unique in a model.")
            }
        }
        let byName = Dictionary(sortedEntities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for entity in sortedEntities {
            for sub in entity.subentities where byName[sub.name] !== sub {
                throw ModelError(
                    .unknownSubentity(sub.name), entity: entity.name,
                    "the sub-entity '\(sub.name)' is not part of this model; add it to the model's entities.")
            }
        }
        // Resolve names first so inverse checks below see resolved destinations.
        for entity in sortedEntities {
            for case let r as NSRelationshipDescription in entity.ownProperties {
                if r.destinationEntity == nil, let n = r.destinationEntityName {
                    guard let d = byName[n] else {
                        throw ModelError(
                            .unknownDestination(n), entity: entity.name, property: r.name,
                            "the destination entity '\(n)' is not in the model; add its class to the model.")
                    }
                    r.destinationEntity = d
                }
            }
        }
        for entity in sortedEntities {
            var propertyNames = Set<String>()
            for p in entity.properties.sorted(by: { $0.name < $1.name }) {
                guard !p.name.isEmpty else {
                    throw ModelError(.emptyName, entity: entity.name, "a property has an empty name; give every property a name.")
                }
                guard propertyNames.insert(p.name).inserted else {
                    throw ModelError(
                        .duplicateProperty, entity: entity.name, property: p.name,
                        "two properties are named '\(p.name)'; property names must be unique in an entity.")
                }
                // An inherited property is checked once, in the entity that declares it.
                guard p.entity === entity else { continue }
                if let a = p as? NSAttributeDescription {
                    try check(a, in: entity)
                } else if let r = p as? NSRelationshipDescription {
                    try check(r, in: entity, byName: byName)
                }
            }
            try entity.validateUniquenessConstraints()
        }
    }

    private func check(_ a: NSAttributeDescription, in entity: NSEntityDescription) throws(ModelError) {
        guard a.attributeType.isSupported else {
            throw ModelError(
                .unsupportedType(a.attributeType), entity: entity.name, property: a.name,
                "attribute type '\(a.attributeType)' is not supported; use one of Integer 16/32/64, Double, Float, "
                    + "Boolean, String, Date, Binary Data, UUID, URI, Decimal or Transformable.")
        }
        if a.attributeType == .transformableAttributeType && a.valueTransformerName == nil {
            throw ModelError(
                .unsupportedType(a.attributeType), entity: entity.name, property: a.name,
                "a transformable attribute needs a valueTransformerName naming a ValueTransformer registered with "
                    + "ValueTransformer.setValueTransformer(_:forName:) (there is no default transformer).")
        }
        if let c = a as? NSCompositeAttributeDescription { try c.validateElements(in: entity) }
        if let d = a as? NSDerivedAttributeDescription { try d.resolveDerivation(in: entity) }
        a.resolveDefault()
        if a.defaultStoreValue == nil {
            throw ModelError(
                .invalidDefaultValue, entity: entity.name, property: a.name,
                "the default value \(String(describing: a.defaultValue)) is not a valid \(a.attributeType) value; "
                    + "give a value of the attribute's type.")
        }
    }

    private func check(
        _ r: NSRelationshipDescription, in entity: NSEntityDescription, byName: [String: NSEntityDescription]
    ) throws(ModelError) {
        guard let destination = r.destinationEntity else {
            throw ModelError(
                .unknownDestination("nil"), entity: entity.name, property: r.name,
                "the relationship has no destination entity; set destinationEntity.")
        }
        guard byName[destination.name] === destination else {
            throw ModelError(
                .unknownDestination(destination.name), entity: entity.name, property: r.name,
                "the destination entity '\(destination.name)' is not part of this model; add it to the model's entities.")
        }
        if r.inverseRelationship == nil, let n = r.inverseName {
            guard let inv = destination.relationshipsByName[n] else {
                throw ModelError(
                    .unknownInverse(n), entity: entity.name, property: r.name,
                    "the inverse '\(n)' does not exist on '\(destination.name)'; declare it there or fix the name.")
            }
            r.inverseRelationship = inv
        }
        guard let inverse = r.inverseRelationship else {
            throw ModelError(
                .missingInverse, entity: entity.name, property: r.name,
                "the relationship has no inverse; every relationship needs one so the object graph stays consistent.")
        }
        // The inverse may be inherited by the destination from one of its super-entities.
        guard let inverseEntity = inverse.entity, destination.isKindOf(entity: inverseEntity) else {
            throw ModelError(
                .mismatchedInverse(inverse.name), entity: entity.name, property: r.name,
                "the inverse '\(inverse.name)' belongs to '\(inverse.entity?.name ?? "no entity")', not to the "
                    + "destination '\(destination.name)'.")
        }
        if inverse.inverseRelationship == nil, let n = inverse.inverseName, n == r.name {
            inverse.inverseRelationship = r
        }
        guard inverse.inverseRelationship === r || (inverse.inverseRelationship == nil && inverse.inverseName == nil) else {
            throw ModelError(
                .mismatchedInverse(inverse.name), entity: entity.name, property: r.name,
                "the inverse '\(destination.name).\(inverse.name)' points back at "
                    + "'\(inverse.inverseRelationship?.name ?? inverse.inverseName ?? "nothing")' instead of '\(r.name)'.")
        }
        if inverse.inverseRelationship == nil { inverse.inverseRelationship = r }
        guard inverse.destinationEntity.map({ entity.isKindOf(entity: $0) }) ?? true
            || inverse.destinationEntityName == entity.name
        else {
            throw ModelError(
                .mismatchedInverse(inverse.name), entity: entity.name, property: r.name,
                "the inverse '\(destination.name).\(inverse.name)' has destination "
                    + "'\(inverse.destinationEntity?.name ?? "?")' instead of '\(entity.name)'.")
        }
        // A `Set` property must be to-many: with maxCount 1 it would describe a to-one, and
        // reading it would trap.
        if let declaredAsSet = r.declaredAsSet, declaredAsSet != r.isToMany {
            throw ModelError(
                .invalidCount, entity: entity.name, property: r.name,
                "the property is a set, but maxCount 1 makes the relationship to-one; use maxCount 0 (no limit) or "
                    + "at least 2, or declare the property as an optional object.")
        }
        guard r.minCount >= 0, r.maxCount >= 0, r.maxCount == 0 || r.minCount <= r.maxCount else {
            throw ModelError(
                .invalidCount, entity: entity.name, property: r.name,
                "minCount \(r.minCount) and maxCount \(r.maxCount) are inconsistent; use 0 ≤ minCount ≤ maxCount (0 = no limit).")
        }
    }
}
