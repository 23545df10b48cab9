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
    /// What a key of a dictionary sets, by property index: resolved once per request, not
    /// once per value.
    private let columns: [Column]
    /// The keys of the last dictionary, in its order, with their property indexes. The
    /// dictionaries of one request usually hold the same keys in the same order, and
    /// comparing a key with the one at the same place is a fraction of hashing it
    /// (callgrind, 10,000 rows of five keys: the name lookups were 16M of 105M
    /// instructions of encoding).
    private var lastKeys: [(key: String, index: Int)] = []

    /// What a property of the entity takes in a batch insert.
    private enum Column {
        case attribute(NSAttributeDescription)
        case toOne(NSRelationshipDescription)
        /// Transient, to-many, or a to-one whose inverse is to-one.
        case refused
    }

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
        columns = entity.properties.map { p in
            switch p {
            case let a as NSAttributeDescription where !a.isTransient: .attribute(a)
            case let r as NSRelationshipDescription where !r.isTransient && !r.isToMany && r.inverseRelationship?.isToMany != false:
                .toOne(r)
            default: .refused
            }
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
        for (k, (key, value)) in object.enumerated() {
            let i: Int
            if k < lastKeys.count, lastKeys[k].key == key {
                i = lastKeys[k].index
            } else {
                guard let found = entity.propertyIndex(named: key) else {
                    throw CoreDataError(
                        .managedObjectValidation, key: key,
                        "\(place(row)): '\(key)' is not a property of entity '\(entity.name)'; nothing was written.")
                }
                i = found
                if k < lastKeys.count {
                    lastKeys[k] = (key, i)
                } else {
                    lastKeys.append((key, i))
                }
            }
            switch columns[i] {
            case let .attribute(a):
                values[i] = try a.batchStoreValue(value, entity: entity, at: place(row))
            case let .toOne(r):
                values[i] = try reference(value, relationship: r, row: row)
            case .refused:
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
        // The ID first: it is what a batch insert is usually handed, and a cast that fails
        // costs several that succeed (callgrind: `is NSNull` and `as NSManagedObject` tried
        // first, on IDs, were 32M instructions of 10,000 rows' 105M of encoding). The three
        // classes are unrelated, so the order decides nothing else.
        let id: NSManagedObjectID?
        switch value {
        case let i as NSManagedObjectID: id = i
        case let o as NSManagedObject: id = o.objectID
        case is NSNull: return .null
        default: id = nil
        }
        guard let id, let target = id.rowID, r.accepts(id.entity),
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
