import Foundation

/// Turns the objects of a batch insert into rows of one entity: values converted to their
/// attributes' types, left-out attributes at their defaults, required ones present.
struct BatchRowEncoder {
    let entity: NSEntityDescription
    let pass: BatchStorePass
    /// A row of defaults: each attribute's default value, empty relationships.
    private let template: [StoreValue]
    /// Required stored attributes, whose value must not be `.null` in any row.
    private let required: [NSAttributeDescription]
    /// Rows a to-one value named that are known to exist (each is looked up once).
    private var existing: Set<StoreRowID> = []

    init(entity: NSEntityDescription, pass: BatchStorePass) {
        self.entity = entity
        self.pass = pass
        template = entity.properties.map { p in
            switch p {
            case let a as NSAttributeDescription where !a.isTransient: a.defaultStoreValue ?? .null
            case let r as NSRelationshipDescription where r.isToMany && !r.isTransient: .references([])
            default: .null
            }
        }
        required = entity.properties.compactMap { p in
            guard let a = p as? NSAttributeDescription, !a.isTransient, !a.isOptional else { return nil }
            return a
        }
    }

    /// The row of `object`, the `row`-th object of the request.
    ///
    /// - Throws: ``CoreDataError`` `.managedObjectValidation` for a key that is not a stored
    ///   attribute or settable to-one relationship of the entity, a value that does not
    ///   convert, or a target row the store does not hold; `.validationMissingMandatoryProperty`
    ///   for a required attribute without a value.
    mutating func encode(_ object: [String: Any], row: Int) throws -> [StoreValue] {
        var values = template
        for (key, value) in object {
            guard let i = entity.propertyIndex(named: key) else {
                throw CoreDataError(
                    .managedObjectValidation, key: key,
                    "\(place(row)): '\(key)' is not a property of entity '\(entity.name)'; nothing was written.")
            }
            switch entity.properties[i] {
            case let a as NSAttributeDescription where !a.isTransient:
                values[i] = try a.batchStoreValue(value, entity: entity, at: place(row))
            case let r as NSRelationshipDescription where !r.isTransient && !r.isToMany && r.inverseRelationship?.isToMany != false:
                values[i] = try reference(value, relationship: r, row: row)
            default:
                throw CoreDataError(
                    .managedObjectValidation, key: key,
                    "\(place(row)): '\(entity.name).\(key)' cannot be set by a batch insert (it is transient, to-many, or a "
                        + "to-one whose inverse is to-one); set it with a save. Nothing was written.")
            }
        }
        try checkRequired(values, row: row)
        return values
    }

    /// The row of the attributes of `object` (a new object in no context).
    ///
    /// - Throws: as ``encode(_:row:)``.
    func encode(attributesOf object: NSManagedObject, row: Int) throws -> [StoreValue] {
        var values = template
        for case let a as NSAttributeDescription in entity.properties where !a.isTransient {
            values[a.index] = try a.batchStoreValue(object.value(forKey: a.name), entity: entity, at: place(row))
        }
        try checkRequired(values, row: row)
        return values
    }

    private func checkRequired(_ values: [StoreValue], row: Int) throws {
        for a in required { try a.checkPresent(values[a.index], entity: entity, at: place(row)) }
    }

    /// How messages name the `row`-th object.
    private func place(_ row: Int) -> String { "batch insert into '\(entity.name)', object \(row)" }

    /// The stored value of to-one `r` set to `value`: a row of its destination the store holds.
    private mutating func reference(_ value: Any, relationship r: NSRelationshipDescription, row: Int) throws -> StoreValue {
        let id: NSManagedObjectID?
        switch value {
        case is NSNull: return .null
        case let o as NSManagedObject: id = o.objectID
        case let i as NSManagedObjectID: id = i
        default: id = nil
        }
        guard let id, let target = id.rowID, id.entity === r.destinationEntity,
            id.persistentStoreIdentifier == pass.store.identifier
        else {
            throw CoreDataError(
                .managedObjectValidation, key: r.name,
                "\(place(row)): '\(entity.name).\(r.name)' takes the NSManagedObjectID of a saved \(r.destinationEntity?.name ?? "?") "
                    + "of this store, not \(value); nothing was written.")
        }
        if !existing.contains(target) {
            guard try pass.store.containsRow(target) else {
                throw CoreDataError(
                    .managedObjectReferentialIntegrity, objectID: id, key: r.name,
                    "\(place(row)): '\(entity.name).\(r.name)' names \(id), which the store does not hold; nothing was written.")
            }
            existing.insert(target)
        }
        return .reference(target)
    }
}
