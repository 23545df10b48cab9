import Foundation

/// What an ``NSBatchInsertRequest`` returns in its ``NSBatchInsertResult``.
public enum NSBatchInsertRequestResultType: UInt, Sendable, Hashable {
    /// `true` once the rows are written.
    case statusOnly = 0
    /// The IDs of the rows inserted.
    case objectIDs = 1
    /// The number of rows inserted.
    case count = 2
}

/// Inserts rows of one entity straight into the store, in one commit, without making
/// managed objects: Core Data's batch insert.
///
/// Each object is a dictionary keyed by attribute name, given as an array, or filled one at
/// a time by a handler:
///
/// ```swift
/// let request = NSBatchInsertRequest(entityName: "Book", objects: [["title": "A", "pages": 100]])
/// request.resultType = .objectIDs
/// let ids = (try context.execute(request) as? NSBatchInsertResult)?.result as? [NSManagedObjectID]
/// ```
///
/// Every value must convert exactly to its attribute's type (as `setValue(_:forKey:)`
/// converts); an attribute left out takes its default value; `nil` or `NSNull` stands for
/// no value. A to-one relationship whose inverse is to-many (or that has none) may be set
/// too, to an `NSManagedObjectID` (or a saved `NSManagedObject`) of a row the store holds:
/// the other end lists the new row once the commit is done. Every row is checked before
/// anything is written: one bad value writes nothing. Custom validation
/// (`validateForInsert()`) does not run, as in Core Data.
///
/// Contexts are not told: merge the IDs (result type ``NSBatchInsertRequestResultType/objectIDs``)
/// under `NSInsertedObjectIDsKey` to make them see the rows.
public final class NSBatchInsertRequest: NSPersistentStoreRequest {
    /// The name of the entity to insert rows of: ``entity``'s name when that is set.
    public var entityName: String { entity?.name ?? storedEntityName }
    private let storedEntityName: String
    /// The entity to insert rows of, when the request was made with one.
    public let entity: NSEntityDescription?
    /// The objects to insert, each a dictionary of property name to value; `nil` when a
    /// handler supplies them.
    public var objectsToInsert: [[String: Any]]?
    /// Fills the dictionary it is handed with the next object's values and returns `false`,
    /// or returns `true` when there are no more objects (the dictionary of that call is not
    /// inserted). Core Data hands an `NSMutableDictionary`; here the handler fills an
    /// `inout [String: Any]`, empty on every call.
    public var dictionaryHandler: ((inout [String: Any]) -> Bool)?
    /// Sets the next object's values on the managed object it is handed (a new object in no
    /// context, its attributes at their defaults) and returns `false`, or returns `true` when
    /// there are no more objects (that call's object is not inserted). Its attributes are
    /// inserted; relationships set on it are ignored.
    public var managedObjectHandler: ((NSManagedObject) -> Bool)?
    /// What the result holds. Defaults to ``NSBatchInsertRequestResultType/statusOnly``.
    public var resultType: NSBatchInsertRequestResultType = .statusOnly

    /// A request inserting `dictionaries` as rows of the entity named `entityName`.
    public init(entityName: String, objects dictionaries: [[String: Any]]) {
        storedEntityName = entityName
        entity = nil
        objectsToInsert = dictionaries
    }

    /// A request inserting `dictionaries` as rows of `entity`.
    public init(entity: NSEntityDescription, objects dictionaries: [[String: Any]]) {
        storedEntityName = entity.name
        self.entity = entity
        objectsToInsert = dictionaries
    }

    /// A request inserting the rows `handler` fills, one call each, until it returns `true`
    /// (see ``dictionaryHandler``).
    public init(entityName: String, dictionaryHandler handler: @escaping (inout [String: Any]) -> Bool) {
        storedEntityName = entityName
        entity = nil
        dictionaryHandler = handler
    }

    /// A request inserting rows of `entity` that `handler` fills, one call each, until it
    /// returns `true` (see ``dictionaryHandler``).
    public init(entity: NSEntityDescription, dictionaryHandler handler: @escaping (inout [String: Any]) -> Bool) {
        storedEntityName = entity.name
        self.entity = entity
        dictionaryHandler = handler
    }

    /// A request inserting rows of the entity named `entityName` from the objects `handler`
    /// sets up, one call each, until it returns `true` (see ``managedObjectHandler``).
    public init(entityName: String, managedObjectHandler handler: @escaping (NSManagedObject) -> Bool) {
        storedEntityName = entityName
        entity = nil
        managedObjectHandler = handler
    }

    /// A request inserting rows of `entity` from the objects `handler` sets up, one call
    /// each, until it returns `true` (see ``managedObjectHandler``).
    public init(entity: NSEntityDescription, managedObjectHandler handler: @escaping (NSManagedObject) -> Bool) {
        storedEntityName = entity.name
        self.entity = entity
        managedObjectHandler = handler
    }

    /// ``NSPersistentStoreRequestType/batchInsertRequestType``.
    public override var requestType: NSPersistentStoreRequestType { .batchInsertRequestType }

    /// A readable summary for logs and messages.
    public override var description: String { "NSBatchInsertRequest(entity: \(entityName), resultType: \(resultType))" }

    override func run(in context: NSManagedObjectContext) throws -> NSPersistentStoreResult {
        let pass = try BatchStorePass(context: context, request: "batch insert")
        let entity = try pass.entity(entity, named: storedEntityName)
        var encoder = BatchRowEncoder(entity: entity, pass: pass)
        var values: [[StoreValue]] = []
        if let objects = objectsToInsert {
            values.reserveCapacity(objects.count)
            for (i, object) in objects.enumerated() { values.append(try encoder.encode(object, row: i)) }
        } else if let handler = dictionaryHandler {
            while true {
                var object: [String: Any] = [:]
                if handler(&object) { break }
                values.append(try encoder.encode(object, row: values.count))
            }
        } else if let handler = managedObjectHandler {
            while true {
                let object = entity.managedObjectClass.init(entity: entity, insertInto: nil)
                if handler(object) { break }
                values.append(try encoder.encode(attributesOf: object, row: values.count))
            }
        }
        guard !values.isEmpty else { return NSBatchInsertResult(resultType, count: 0, ids: []) }
        let keys = try pass.store.allocatePrimaryKeys(entity: entity.index, count: values.count)
        var transaction = StoreTransaction()
        transaction.inserts.reserveCapacity(values.count)
        var key = keys.lowerBound
        for row in values {
            transaction.inserts.append(StoreRow(id: StoreRowID(entity: entity.index, primaryKey: key), version: 1, values: row))
            key += 1
        }
        values = []
        _ = try pass.commit { transaction }  // inserts never conflict
        let ids = resultType == .objectIDs ? pass.objectIDs(transaction.inserts.map(\.id)) : []
        return NSBatchInsertResult(resultType, count: transaction.inserts.count, ids: ids)
    }
}
