import Foundation

/// What an ``NSBatchUpdateRequest`` returns in its ``NSBatchUpdateResult``.
public enum NSBatchUpdateRequestResultType: UInt, Sendable, Hashable {
    /// `true` once the rows are written.
    case statusOnlyResultType = 0
    /// The IDs of the rows updated.
    case updatedObjectIDsResultType = 1
    /// The number of rows updated.
    case updatedObjectsCountResultType = 2
}

/// Sets attributes of every row of one entity that matches a predicate, straight in the
/// store, in one commit, without making managed objects: Core Data's batch update.
///
/// ```swift
/// let request = NSBatchUpdateRequest(entityName: "Book")
/// request.predicate = NSPredicate(format: "pages < %d", 100)
/// request.propertiesToUpdate = ["title": "Short", "pages": NSExpression(forFunction: "multiply:by:",
///     arguments: [NSExpression(forKeyPath: "pages"), NSExpression(forConstantValue: 2)])]
/// request.resultType = .updatedObjectIDsResultType
/// ```
///
/// The predicate must be one the store can run (see ``predicate``). Each value is a constant,
/// which must convert exactly to its attribute's type, or a ``FetchExpression`` computed from
/// the row's stored values (see ``propertiesToUpdate``). Every matched row is written, with a
/// new version, whether or not a value changes; a value that does not fit one row writes
/// nothing. Validation does not run, as in Core Data.
///
/// Contexts are not told: merge the IDs (``NSBatchUpdateRequestResultType/updatedObjectIDsResultType``)
/// under `NSUpdatedObjectIDsKey` to refresh the objects they hold.
///
/// When another writer changes a matched row between the request's read and its commit,
/// the request reads the rows again and recomputes (up to 16 times); it never overwrites a
/// change it did not read.
public final class NSBatchUpdateRequest: NSPersistentStoreRequest {
    /// The name of the entity whose rows are updated: ``entity``'s name when that is set.
    public var entityName: String { entity?.name ?? storedEntityName }
    private let storedEntityName: String
    /// The entity whose rows are updated, when the request was made with one.
    public let entity: NSEntityDescription?
    /// Which rows to update; `nil` (the default) updates every row of the entity.
    var filter: FetchFilter?
    /// Attribute name to new value: a constant (`nil` or `NSNull` clears an optional
    /// attribute), or a ``FetchExpression`` — a constant
    /// (`NSExpression(forConstantValue:)`), another attribute of the row
    /// (`NSExpression(forKeyPath:)`), or `add:to:`, `from:subtract:`, `multiply:by:`,
    /// `divide:by:` of those. Relationships cannot be set. Must not be empty when executed.
    public var propertiesToUpdate: [String: Any]?
    /// What the result holds. Defaults to ``NSBatchUpdateRequestResultType/statusOnlyResultType``.
    public var resultType: NSBatchUpdateRequestResultType = .statusOnlyResultType
    /// Whether rows of sub-entities are updated too. Defaults to `true`; there is no entity
    /// inheritance here, so it changes nothing.
    public var includesSubentities: Bool = true

    /// A request updating rows of the entity named `entityName`.
    public init(entityName: String) {
        storedEntityName = entityName
        entity = nil
    }

    /// A request updating rows of `entity`.
    public init(entity: NSEntityDescription) {
        storedEntityName = entity.name
        self.entity = entity
    }

    /// The rows to update, as Core Data spells it: an `NSPredicate`, usually from a format
    /// string; `nil` updates every row. Reads `nil` when the predicate was set with
    /// ``setPredicate(_:)``. It must run in the store: comparisons of attributes with
    /// constants, string operators, IN, BETWEEN, key paths through to-ones, `@count` and
    /// ANY/ALL/NONE over to-manys; executing the request throws otherwise.
    public var predicate: NSPredicate? {
        get { filter?.typed as? NSPredicate }
        set { filter = newValue.map { FetchFilter($0) } }
    }

    /// Sets the rows to update with a Foundation `Predicate` over the entity's class (it
    /// must translate into store conditions: comparisons of the object's own attributes with
    /// constants, joined by `&&`); `nil` updates every row.
    public func setPredicate<Root: NSManagedObject>(_ predicate: Predicate<Root>?) {
        filter = predicate.map { FetchFilter($0) }
    }

    /// ``NSPersistentStoreRequestType/batchUpdateRequestType``.
    public override var requestType: NSPersistentStoreRequestType { .batchUpdateRequestType }

    /// A readable summary for logs and messages.
    public override var description: String {
        "NSBatchUpdateRequest(entity: \(entityName), properties: \((propertiesToUpdate ?? [:]).keys.sorted()), resultType: \(resultType))"
    }

    override func run(in context: NSManagedObjectContext) throws -> NSPersistentStoreResult {
        let pass = try BatchStorePass(context: context, request: "batch update")
        let entity = try pass.entity(entity, named: storedEntityName)
        guard let properties = propertiesToUpdate, !properties.isEmpty else {
            throw CoreDataError(.coreData, "the batch update of '\(entity.name)' has no propertiesToUpdate; set at least one.")
        }
        var changes: [(index: Int, attribute: NSAttributeDescription, value: BatchUpdateValue)] = []
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            guard let i = entity.propertyIndex(named: key), let a = entity.properties[i] as? NSAttributeDescription, !a.isTransient
            else {
                throw CoreDataError(
                    .managedObjectValidation, key: key,
                    "batch update of '\(entity.name)': '\(key)' is not a stored attribute of the entity (relationships cannot be "
                        + "set by a batch update); nothing was written.")
            }
            changes.append((i, a, try BatchUpdateValue(value, for: a, entity: entity)))
        }
        let filter = try pass.storeFilter(filter, on: entity)
        let transaction = try pass.commit {
            var t = StoreTransaction()
            t.updates = try pass.store.fetchRows(entity: entity.index, filter: filter)
            // Only attributes change below: every relationship is written as read.
            t.updatesKeepOwningEnds = true
            let width = entity.properties.count
            for r in t.updates.indices {
                // A row written before a property existed ends early: it is written whole.
                if t.updates[r].values.count < width {
                    t.updates[r].values += Array(repeating: .null, count: width - t.updates[r].values.count)
                }
                for change in changes {
                    switch change.value {
                    case let .constant(v): t.updates[r].values[change.index] = v
                    case let .computed(e):
                        let v = try e.value(on: t.updates[r])
                        t.updates[r].values[change.index] = try Self.fitted(v, change.attribute, entity, t.updates[r].id, pass)
                    }
                }
            }
            return t
        }
        let ids = resultType == .updatedObjectIDsResultType ? pass.objectIDs(transaction.updates.map(\.id)) : []
        return NSBatchUpdateResult(resultType, count: transaction.updates.count, ids: ids)
    }

    /// A computed value as `attribute` stores it.
    ///
    /// - Throws: as `NSAttributeDescription.batchStoreValue`, naming the row.
    private static func fitted(
        _ v: StoreValue, _ attribute: NSAttributeDescription, _ entity: NSEntityDescription, _ row: StoreRowID, _ pass: BatchStorePass
    ) throws -> StoreValue {
        if !v.isNull && attribute.attributeType.accepts(v) { return v }
        let id = pass.objectIDs([row])[0]
        return try attribute.batchStoreValue(v.swiftValue, entity: entity, at: "batch update of \(id)", objectID: id)
    }
}
