import Foundation

// Dictionary fetches: values and aggregates computed from the store's rows, without making
// managed objects (see `NSFetchRequestResultType.dictionaryResultType`).
extension NSManagedObjectContext {
    /// Runs `request` as a dictionary fetch, whatever its `resultType`, and returns its
    /// results as Swift dictionaries: the values of `propertiesToFetch` (every attribute when
    /// nil) per object, or per group with `propertiesToGroupBy` or aggregates, filtered by
    /// `havingFilter`, without repeats when `returnsDistinctResults`, in the request's sort
    /// order, then offset and limited. Values are as described for
    /// ``NSFetchRequestResultType/dictionaryResultType``; the store's saved values count,
    /// never unsaved changes.
    ///
    /// - Complexity: one pass over the rows the store matches, reading only the fetched,
    ///   grouped and sorted columns (the file store decodes only those); a predicate the
    ///   store cannot run is evaluated on objects first (see Differences).
    /// - Throws: ``CoreDataError`` `.coreData` for an unknown entity, no loaded store, a
    ///   property that cannot be fetched or grouped by, a fetched property neither grouped
    ///   by nor an aggregate while grouping, an unsupported expression or sort, an integer
    ///   sum that overflows; the predicate's and `havingFilter`'s errors; the store's read
    ///   errors.
    public func fetchDictionaries<T>(_ request: NSFetchRequest<T>) throws -> [[String: Any]] {
        assertOnQueue("fetchDictionaries(_:)")
        let entity = try request.resolveEntity(in: coordinator.managedObjectModel)
        let store = try readStore(for: "fetch(_:)")
        let plan = try DictionaryFetchPlan(request, entity: entity)
        var builder = DictionaryResultBuilder(plan: plan)
        if request.filter == nil || request.filter?.storeFilter(for: entity) != nil {
            let filter = request.filter?.storeFilter(for: entity)
            let visited = try (store as? FileStore)?.visitColumns(entity: entity.index, filter: filter, columns: plan.columns) {
                builder.add($0)
            }
            if visited != true {
                for row in try store.fetchRows(entity: entity.index, filter: filter) { builder.add(plan.columns.map { row.value(at: $0) }) }
            }
        } else {
            // The predicate runs on objects: the IDs of those whose saved values match, then
            // their rows.
            let ids = NSFetchRequest<NSManagedObjectID>()
            ids.entity = entity
            ids.filter = request.filter
            ids.includesPendingChanges = false
            ids.resultType = .managedObjectIDResultType
            for id in try fetchObjectIDs(ids) {
                guard let rowID = id.rowID, let row = try store.fetchRow(rowID) else { continue }
                builder.add(plan.columns.map { row.value(at: $0) })
            }
        }
        let number = storeNumber(for: store.identifier)
        let model = coordinator.managedObjectModel
        let names = plan.names
        let targets = plan.outputs.map { output -> NSEntityDescription? in
            if case let .value(_, target) = output { return target }
            return nil
        }
        let composites = plan.outputs.map { output -> NSCompositeAttributeDescription? in
            guard case let .value(column, _) = output else { return nil }
            return entity.properties[plan.columns[column]] as? NSCompositeAttributeDescription
        }
        return try builder.results(
            having: Self.having(request), distinct: request.returnsDistinctResults, offset: request.fetchOffset,
            limit: request.fetchLimit
        ) { cells in
            var dictionary: [String: Any] = [:]
            dictionary.reserveCapacity(cells.count)
            for i in cells.indices {
                if let composite = composites[i] {  // a composite reads as its dictionary
                    dictionary[names[i]] = composite.compositeAnyValue(from: cells[i])
                } else if let value = Self.dictionaryValue(cells[i], target: targets[i], storeNumber: number, model: model) {
                    dictionary[names[i]] = value
                }
            }
            return dictionary
        }
    }

    /// The results of a dictionary fetch as `[T]`: the dictionaries themselves for
    /// `NSFetchRequest<[String: Any]>`, `NSDictionary`s otherwise (`NSDictionary`,
    /// `NSFetchRequestResult`).
    func fetchDictionaryResults<T>(_ request: NSFetchRequest<T>) throws -> [T] {
        let dictionaries = try fetchDictionaries(request)
        if T.self == [String: Any].self, let result = dictionaries as? [T] { return result }
        if let result = dictionaries.map({ NSDictionary(dictionary: $0) }) as? [T] { return result }
        throw CoreDataError(
            .coreData, "dictionaryResultType needs NSFetchRequest<NSDictionary> (or <[String: Any]>); got NSFetchRequest<\(T.self)>.")
    }

    /// A stored value as a dictionary fetch returns it: numbers and booleans as `NSNumber`,
    /// a to-one relationship's target as its object ID, nil for no value.
    private static func dictionaryValue(
        _ value: StoreValue, target: NSEntityDescription?, storeNumber: UInt32, model: NSManagedObjectModel
    ) -> Any? {
        switch value {
        case .null: return nil
        case let .integer(i): return NSNumber(value: i)
        case let .double(d): return NSNumber(value: d)
        case let .float(f): return NSNumber(value: f)
        case let .bool(b): return NSNumber(value: b)
        case let .string(s): return s
        case let .date(d): return d
        case let .data(d): return d
        case let .uuid(u): return u
        case let .uri(u): return u
        case let .decimal(d): return d
        case let .reference(row):
            guard let entity = target.map({ $0.forRow(row) }) ?? model.entity(at: row.entity) else { return nil }
            return NSManagedObjectID(entity: entity, objectKey: ObjectKey(row: row, storeNumber: storeNumber))
        case let .references(rows): return rows.count  // not reached: the plan refuses to-many relationships
        }
    }

    /// The group filter of `request`: its `havingPredicate` (a format predicate evaluated on
    /// each group's dictionary) when set, else its `havingFilter`.
    static func having<T>(_ request: NSFetchRequest<T>) -> (([String: Any]) throws -> Bool)? {
        guard let predicate = request.havingPredicate else { return request.havingFilter }
        let syntax = predicate.formatSyntax
        return { group in
            switch syntax {
            case let .success(tree)?: return try PersistenceKit.evaluate(tree, onValue: group, variables: [:])
            case let .failure(error)?: throw error
            case nil: return predicate.evaluate(with: group)
            }
        }
    }
}
