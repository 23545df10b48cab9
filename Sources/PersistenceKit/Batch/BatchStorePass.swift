import Foundation

/// The store a batch request runs against and the model it is read with; made on the
/// executing context's queue.
struct BatchStorePass {
    let coordinator: NSPersistentStoreCoordinator
    let store: any PersistentStore
    /// The request's name for messages (`"batch update"`).
    let request: String
    /// The executing context's `transactionAuthor` and `name`, for persistent history.
    let author: String?
    let contextName: String?

    /// How many times a batch update or delete reads its rows again after another writer
    /// changed one of them between its read and its commit, before it gives up.
    static let attempts = 16

    init(context: NSManagedObjectContext, request: String) throws {
        coordinator = context.coordinator
        store = try coordinator.primaryStore(for: request)
        try coordinator.refuseWrites(to: store, request)
        self.request = request
        author = context.transactionAuthor
        contextName = context.name
    }

    var model: NSManagedObjectModel { coordinator.managedObjectModel }

    /// The entity a request names: `entity` when set (it must be of this model), else the
    /// entity named `name`.
    func entity(_ entity: NSEntityDescription?, named name: String?) throws -> NSEntityDescription {
        if let entity {
            guard entity.managedObjectModel === model else {
                throw CoreDataError(
                    .coreData, "the \(request)'s entity '\(entity.name)' belongs to another model than the context's; use the "
                        + "context's model's entity.")
            }
            return entity
        }
        guard let name, let e = model.entitiesByName[name] else {
            throw CoreDataError(
                .coreData,
                "the \(request) names entity '\(name ?? "nil")', which is not in the model; known entities: "
                    + "\(model.entities.map(\.name).sorted().joined(separator: ", ")).")
        }
        return e
    }

    /// The store filter of `filter` on `entity` (`nil` for no filter: every row). A predicate
    /// the store cannot run is refused, as a SQL store refuses what SQL cannot express.
    ///
    /// - Throws: the predicate's ``PredicateFormatError`` when its format does not parse or
    ///   names a key `entity` lacks; ``CoreDataError`` `.coreData` when it is over another
    ///   class, or the store cannot run it.
    func storeFilter(_ filter: FetchFilter?, on entity: NSEntityDescription) throws -> StoreFilter? {
        guard let filter else { return nil }
        try filter.check(entity)
        guard filter.accepts(entity.managedObjectClass) else {
            throw CoreDataError(
                .coreData,
                "the \(request)'s predicate is over \(filter.rootName), but entity '\(entity.name)' has objects of class "
                    + "\(entity.managedObjectClassName); write the predicate over that class.")
        }
        guard let storeFilter = filter.storeFilter(for: entity) else {
            throw CoreDataError(
                .coreData,
                "the \(request)'s predicate on '\(entity.name)' cannot run in the store (it calls code, or compares in a way "
                    + "the store has no operator for); a batch request only runs predicates the store can: comparisons of "
                    + "attributes with constants, string operators, IN, BETWEEN, key paths through to-ones, @count and "
                    + "ANY/ALL/NONE over to-manys.")
        }
        return storeFilter
    }

    /// Commits what `build` makes of the rows it reads, reading them again whenever another
    /// writer changed one of them in between (the store refuses a transaction whose
    /// versions are stale), up to ``attempts`` times. Returns the transaction committed;
    /// `build` returning an empty transaction commits nothing.
    ///
    /// - Throws: what `build` throws; ``CoreDataError`` `.managedObjectMerge` when every
    ///   attempt met a conflict; the store's error when its commit fails.
    func commit(_ build: () throws -> StoreTransaction) throws -> StoreTransaction {
        for _ in 0..<Self.attempts {
            var transaction = try build()
            if transaction.isEmpty { return transaction }
            transaction.author = author
            transaction.contextName = contextName
            let (result, _) = try coordinator.commit(transaction, to: store)
            if case .committed = result { return transaction }
        }
        throw CoreDataError(
            .managedObjectMerge,
            "the \(request) met rows changed by other writers on each of its \(Self.attempts) attempts; nothing was written. "
                + "Run it again when the other writers are done.")
    }

    /// The IDs of `rows`, in order.
    func objectIDs(_ rows: [StoreRowID]) -> [NSManagedObjectID] {
        let identifier = store.identifier
        var last: NSEntityDescription?
        return rows.map { row in
            let entity = last.flatMap { $0.index == row.entity ? $0 : nil } ?? entity(at: row.entity)
            last = entity
            return NSManagedObjectID(entity: entity, row: row, store: identifier)
        }
    }

    /// The entity of rows of entity index `index` (rows a store holds are of the model's
    /// entities).
    func entity(at index: Int32) -> NSEntityDescription {
        guard let entity = model.entity(at: index) else {
            programmerError("PersistenceKit internal error: the store holds a row of entity index \(index), which the model lacks")
        }
        return entity
    }
}

extension NSAttributeDescription {
    /// `value` as this attribute stores it, for row `row` of a batch request (`where`: how
    /// a message names that row).
    ///
    /// - Throws: ``CoreDataError`` `.managedObjectValidation` when the value does not convert
    ///   exactly to the attribute's type; `.validationMissingMandatoryProperty` when it is
    ///   nil (or `NSNull`) and the attribute is required.
    ///
    /// `row` is evaluated only for a message: a batch insert converts every value of every
    /// row, and building the row's name for each (before: always) was 45% of the
    /// instructions of a batch insert of 10,000 rows of four attributes and a to-one
    /// (callgrind: 488M before, 269M after).
    func batchStoreValue(
        _ value: Any?, entity: NSEntityDescription, at row: @autoclosure () -> String, objectID: NSManagedObjectID? = nil
    ) throws -> StoreValue {
        let converted: StoreValue?
        if let direct = Self.directStoreValue(value, attributeType), attributeType.accepts(direct) {
            converted = direct
        } else if value is NSNull {
            converted = .null
        } else {
            converted = attributeType.storeValue(from: value)
        }
        guard let converted else {
            throw CoreDataError(
                .managedObjectValidation, objectID: objectID, key: name,
                "\(row()): '\(entity.name).\(name)' is \(attributeType), and \(String(reflecting: value.map { type(of: $0) })) "
                    + "value \(value.map { "\($0)" } ?? "nil") does not convert to it exactly; nothing was written.")
        }
        try checkPresent(converted, entity: entity, at: row(), objectID: objectID)
        return converted
    }

    /// The stored value of `value` when it is of the Swift type `type` stores most often
    /// (`Int64`, `Int`, `Double`, `String`, `Bool`, `Date`); nil otherwise. A cast to a
    /// concrete type is a fraction of the cast to a protocol that `storeValue(from:)` starts
    /// with, which a batch insert of many rows pays per value.
    @inline(__always)
    private static func directStoreValue(_ value: Any?, _ type: NSAttributeType) -> StoreValue? {
        switch type {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            if let v = value as? Int64 { return .integer(v) }
            if let v = value as? Int { return .integer(Int64(v)) }
        case .doubleAttributeType: if let v = value as? Double { return .double(v) }
        case .stringAttributeType: if let v = value as? String { return .string(v) }
        case .booleanAttributeType: if let v = value as? Bool { return .bool(v) }
        case .dateAttributeType: if let v = value as? Date { return .date(v) }
        default: break
        }
        return nil
    }

    /// Throws when `value` is `.null` and the attribute is required.
    ///
    /// - Throws: ``CoreDataError`` `.validationMissingMandatoryProperty`.
    func checkPresent(
        _ value: StoreValue, entity: NSEntityDescription, at row: @autoclosure () -> String, objectID: NSManagedObjectID? = nil
    ) throws {
        if value.isNull && !isOptional {
            throw CoreDataError(
                .validationMissingMandatoryProperty, objectID: objectID, key: name,
                "\(row()): '\(entity.name).\(name)' is required and would be nil; nothing was written.")
        }
    }
}
