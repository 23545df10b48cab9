import Foundation

extension NSManagedObject {
    /// Validates one value for `key` without setting it: the key must exist and the value
    /// must convert to the attribute's type (or be an object of the destination entity),
    /// a required property may not be `nil`, and a value must satisfy the property's
    /// validation predicates.
    ///
    /// - Throws: ``CoreDataError`` naming the object and key: `.managedObjectValidation` for
    ///   an unknown key or wrong type, `.validationMissingMandatoryProperty` for `nil`, the
    ///   code a failing predicate's warning names (several: `.validationMultipleErrors`).
    public func validateValue(_ value: Any?, forKey key: String) throws {
        guard let i = entity.propertyIndex(named: key) else {
            throw CoreDataError(
                .managedObjectValidation, objectID: objectID, key: key,
                "entity '\(entity.name)' has no property '\(key)'; use one of: \(entity.properties.map(\.name).joined(separator: ", ")).")
        }
        let p = entity.properties[i]
        let isNil = value == nil || value is NSNull || (value as? any _OptionalProtocol).map { $0._wrappedAny == nil } == true
        if isNil {
            if !p.isOptional {
                throw CoreDataError(
                    .validationMissingMandatoryProperty, objectID: objectID, key: key,
                    "'\(entity.name).\(key)' is required and cannot be nil; give it a value.")
            }
            return
        }
        if let a = p as? NSAttributeDescription {
            guard a.storeValue(from: value) != nil else {
                throw CoreDataError(
                    .managedObjectValidation, objectID: objectID, key: key,
                    "'\(entity.name).\(key)' expects a \(a.attributeType) value, got \(value.map { "\(type(of: $0))" } ?? "nil").")
            }
        } else if let r = p as? NSRelationshipDescription {
            let objects: [NSManagedObject]?
            if r.isToMany {
                objects = (value as? Set<NSManagedObject>).map(Array.init) ?? (value as? [NSManagedObject])
            } else {
                objects = (value as? NSManagedObject).map { [$0] }
            }
            guard let objects, objects.allSatisfy({ r.accepts($0.entity) }) else {
                throw CoreDataError(
                    .managedObjectValidation, objectID: objectID, key: key,
                    "'\(entity.name).\(key)' expects \(r.isToMany ? "a set of" : "an") '\(r.destinationEntity?.name ?? "?")' "
                        + "object\(r.isToMany ? "s" : ""), got \(value.map { "\(type(of: $0))" } ?? "nil").")
            }
        }
        if let value, let error = CoreDataError.combining(Self.validationPredicateErrors(of: value, for: p, entity: entity.name, objectID: objectID)) {
            throw error
        }
    }

    /// Built-in checks shared by insert and update validation.
    func validatePropertyConstraints() throws {
        prepareForAccess("validateForInsert/Update()")
        if valueStorage == .snapshot { moveValuesOutOfSnapshot() }
        if valueStorage == .defaults { takeDefaultValues() }
        // An entity of attributes only, with the values in one array (a new object's usual
        // state): when no required value is missing, one pass over the array decides it.
        // (The general loop below was a thirtieth of inserting and saving 100,000 objects.)
        if valueStorage == .values {
            let required = entity.constrainedSlots
            let complete = storedValues.withUnsafeBufferPointer { values in
                !required.contains { $0.isAttribute && (values.count <= $0.index || values[$0.index].isNull) }
            }
            if complete {
                if let error = CoreDataError.combining(validationPredicateErrors()) { throw error }
                return
            }
        }
        var errors: [CoreDataError] = []
        let properties = entity.properties
        let checked = entity.isSealed ? entity.constrainedSlots : NSEntityDescription.constrainedSlots(in: properties)
        for (i, isAttribute) in checked {
            if isAttribute {
                if attributeIsNull(at: i) {
                    let p = properties[i]
                    errors.append(
                        CoreDataError(
                            .validationMissingMandatoryProperty, objectID: objectID, key: p.name,
                            "'\(entity.name).\(p.name)' is required but has no value; set it before saving."))
                }
                continue
            }
            guard let r = properties[i] as? NSRelationshipDescription else { continue }
            let p = r
            if r.isToMany {
                let n = toManyCount(at: i)
                // The counts apply to a relationship that has objects: an optional one may be
                // empty whatever its minimum, as in Core Data.
                if n == 0 ? !r.isOptional : n < r.minCount {
                    errors.append(
                        CoreDataError(
                            .validationRelationshipLacksMinimumCount, objectID: objectID, key: p.name, value: toManyTargetIDs(at: i),
                            "'\(entity.name).\(p.name)' has \(n) object(s) but needs at least \(max(r.minCount, 1))."))
                }
                if r.maxCount > 0, n > r.maxCount {
                    errors.append(
                        CoreDataError(
                            .validationRelationshipExceedsMaximumCount, objectID: objectID, key: p.name, value: toManyTargetIDs(at: i),
                            "'\(entity.name).\(p.name)' has \(n) object(s) but allows at most \(r.maxCount)."))
                }
            } else if !r.isOptional {
                let empty: Bool
                switch slots[i] {
                case let .toOne(o): empty = o == nil
                case let .unresolvedToOne(row): empty = row == nil
                default: empty = true
                }
                if empty {
                    errors.append(
                        CoreDataError(
                            .validationMissingMandatoryProperty, objectID: objectID, key: p.name,
                            "'\(entity.name).\(p.name)' is a required relationship but is empty; set it before saving."))
                }
            }
        }
        errors += validationPredicateErrors()
        if !errors.isEmpty, let error = CoreDataError.combining(errors) { throw error }
    }

    /// The IDs of the targets at to-many slot `i`, for an error's value.
    private func toManyTargetIDs(at i: Int) -> Set<NSManagedObjectID> {
        Set(resolvedToMany(at: i).map(\.objectID))
    }

    /// Built-in check for deletion: deny rules.
    func validateDenyRules() throws {
        var errors: [CoreDataError] = []
        for case let r as NSRelationshipDescription in entity.properties where r.deleteRule == .denyDeleteRule {
            let i = r.index
            let n: Int
            if r.isToMany {
                n = toManyCount(at: i)
            } else {
                switch slots.isEmpty ? Slot.toOne(nil) : slots[i] {
                case let .toOne(o): n = o == nil ? 0 : 1
                case let .unresolvedToOne(row): n = row == nil ? 0 : 1
                default: n = 0
                }
            }
            if n > 0 {
                errors.append(
                    CoreDataError(
                        .validationRelationshipDeniedDelete, objectID: objectID, key: r.name,
                        value: r.isToMany ? toManyTargetIDs(at: i) : Set(resolvedToOne(at: i).map { [$0.objectID] } ?? []),
                        "\(objectID) cannot be deleted: '\(entity.name).\(r.name)' has the deny delete rule and still "
                            + "has \(n) object(s). Remove them first."))
            }
        }
        if let error = CoreDataError.combining(errors) { throw error }
    }
}
