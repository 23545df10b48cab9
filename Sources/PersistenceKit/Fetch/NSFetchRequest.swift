import Foundation

/// What a fetch request returns.
public enum NSFetchRequestResultType: UInt, Sendable {
    /// Managed objects (`NSFetchRequest<SomeEntityClass>` or `<NSManagedObject>`).
    case managedObjectResultType = 0
    /// Object IDs (`NSFetchRequest<NSManagedObjectID>`).
    case managedObjectIDResultType = 1
    /// Dictionaries (`NSFetchRequest<NSDictionary>`, or `<[String: Any]>`) of the values of
    /// ``NSFetchRequest/propertiesToFetch``, read from the store: unsaved changes are not
    /// seen, whatever `includesPendingChanges` says. Numbers and booleans are `NSNumber`s
    /// (read them `as? Int`, `as? Double`, `as? Bool`), strings `String`, and `Date`, `Data`,
    /// `UUID`, `URL`, `Decimal`; a to-one relationship is its target's `NSManagedObjectID`.
    /// A nil value has no key. Aggregates: `count:` an `Int64`, `sum:` an `Int64` over
    /// integers (a `Double` over floating-point values, a `Decimal` over decimals),
    /// `average:` a `Double` (a `Decimal` over decimals), `min:`/`max:` the attribute's
    /// value; over no values only `count:` has a value (0).
    case dictionaryResultType = 2
    /// One `NSNumber` holding the count (`NSFetchRequest<NSNumber>`).
    case countResultType = 4
}

/// Describes a fetch: an entity, an optional predicate, sort order, paging and result type.
///
/// ```swift
/// let request = Book.fetchRequest()
/// request.predicate = #Predicate<Book> { $0.pages > 100 }
/// request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: true)]
/// request.fetchLimit = 20
/// let books = try context.fetch(request)
/// ```
///
/// Predicates are `NSPredicate`s (Core Data's format strings) or Foundation `Predicate`s
/// over the entity's class. Sort with `NSSortDescriptor(key:ascending:)` or
/// `(keyPath:ascending:)`, Foundation `SortDescriptor`s (``sortBy``), or ``sortKeys``.
///
/// Not `Sendable`: build and use a request on one thread.
public final class NSFetchRequest<ResultType>: CustomStringConvertible {
    /// The name of the entity the request fetches: ``entity``'s name when that is set (it
    /// takes precedence), else the name set here, else — for a request made by
    /// `Entity.fetchRequest()` — the class's name; `nil` when none is known.
    public var entityName: String? {
        get {
            // The entity's name first, as it decides the fetch: a request given only an
            // `entity` must not read nil here.
            if let entity { return entity.name }
            // Made on first read: `String(describing:)` of a class demangles its name, about
            // 6,000 instructions — a fiftieth of a small indexed fetch, for a name that
            // resolving the entity by class does not need.
            if case .none = storedEntityName { storedEntityName = .some(entityClass.map { String(describing: $0) }) }
            return storedEntityName ?? nil
        }
        // Naming an entity replaces one set before, which would otherwise decide the fetch
        // and this getter. (Core Data's `entityName` is read-only.)
        set {
            entity = nil
            storedEntityName = .some(newValue)
        }
    }
    /// The entity name as set, or as made from ``entityClass``; `.none` until either happens.
    private var storedEntityName: String??
    /// The entity to fetch; takes precedence over ``entityName``.
    public var entity: NSEntityDescription?
    /// The class whose entity to fetch, when created by `Entity.fetchRequest()`.
    var entityClass: NSManagedObject.Type?

    /// Filters objects; `nil` fetches every object of the entity.
    var filter: FetchFilter?
    /// The sort rules, applied in order.
    var sortRules: [FetchSortRule] = []

    /// The most results to return; 0 means no limit.
    public var fetchLimit: Int = 0
    /// How many leading results to skip.
    public var fetchOffset: Int = 0
    /// Whether unsaved changes count: inserted objects match, deleted objects do not, and
    /// changed values are matched as they are in memory. Defaults to `true`.
    public var includesPendingChanges: Bool = true
    /// Whether returned objects may be faults (values loaded on first access). Defaults to
    /// `true`; objects read by a predicate are loaded anyway.
    public var returnsObjectsAsFaults: Bool = true
    /// Whether the fetch keeps the values of the rows it reads for the objects it returns.
    /// Defaults to `true`. With `false` the objects come back as faults that read their
    /// values from the store when first touched (so they see saves made in between), which
    /// keeps memory down when only the objects themselves are needed — for example to
    /// delete them. Objects with unsaved changes, and pending inserts, are returned as they
    /// are; `returnsObjectsAsFaults` is ignored.
    public var includesPropertyValues: Bool = true
    /// Whether objects of the entity's sub-entities (``NSEntityDescription/subentities``,
    /// and theirs, all the way down) match too. Defaults to `true`, as in Core Data; `false`
    /// fetches and counts the objects of the named entity alone.
    public var includesSubentities: Bool = true
    /// How many of the returned objects keep the values the fetch read; the rest come back
    /// as faults that read their values from the store when first touched. `0` (the
    /// default) keeps all. Core Data loads each further batch of that size when one of its
    /// objects is touched; here each object loads on its own (see Differences).
    public var fetchBatchSize: Int = 0
    /// Whether objects this context had already loaded take the store's current values when
    /// a fetch returns them again (their unsaved changes kept on top, as
    /// `refresh(_:mergeChanges: true)` does). Defaults to `false`: a registered object keeps
    /// the values it has, and only the predicate sees the newer row.
    public var shouldRefreshRefetchedObjects: Bool = false
    /// What the fetch returns. Defaults to managed objects.
    public var resultType: NSFetchRequestResultType = .managedObjectResultType
    /// Relationship key paths (`"author"`, `"books"`, `"shelf.books"`) whose targets the
    /// fetch loads along with the objects it returns, as Core Data prefetches them. Each
    /// relationship step reads the store once for all of the step's targets (not once per
    /// object when each is first touched); the targets are registered as faults holding
    /// their rows, so reading them reads no store, and the to-many relationships of returned
    /// objects that have values are resolved. Key paths sharing a prefix share its steps.
    /// `nil` (the default) or empty: nothing is prefetched. Ignored when
    /// `includesPropertyValues` is `false`, and for the objects past `fetchBatchSize`
    /// (neither keeps the rows that name the targets).
    ///
    /// A component that names no relationship of the entity it is read on makes the fetch
    /// throw ``CoreDataError`` `.coreData`, naming the key path and the entity.
    public var relationshipKeyPathsForPrefetching: [String]?
    /// What a dictionary fetch (``NSFetchRequestResultType/dictionaryResultType``) returns
    /// for each result: attribute names (`String`) or the entity's `NSAttributeDescription`s,
    /// to-one `NSRelationshipDescription`s (the target's `NSManagedObjectID`), and
    /// ``NSExpressionDescription``s (a computed value keyed by its name). `nil` (the default)
    /// returns every attribute. Ignored by the other result types.
    public var propertiesToFetch: [Any]?
    /// The properties a dictionary fetch groups by — attribute names, attribute or to-one
    /// relationship descriptions — giving one result per distinct combination of their
    /// values. Every fetched property that is not an aggregate must then be among them (the
    /// fetch throws otherwise, as Core Data's store refuses such SQL). `nil` (the default)
    /// makes one group of all rows when an aggregate is fetched, none otherwise.
    public var propertiesToGroupBy: [Any]?
    /// Which results of a dictionary fetch to keep, tested on each result dictionary (for a
    /// grouped fetch, each group, keyed by property and expression names) before distinct
    /// results, sort and window apply: Core Data's `havingPredicate`, as a closure. An error
    /// it throws ends the fetch. `nil` (the default) keeps every result.
    public var havingFilter: (([String: Any]) throws -> Bool)?
    /// Core Data's spelling of ``havingFilter``: a predicate over each group's dictionary,
    /// whose keys are the fetched properties' and expression descriptions' names
    /// (`NSPredicate(format: "total > 100")`). Used when set; a format that does not parse
    /// makes the fetch throw its ``PredicateFormatError``.
    public var havingPredicate: NSPredicate?
    /// Whether a dictionary fetch leaves out results equal to an earlier one. Defaults to
    /// `false`; ignored by the other result types.
    public var returnsDistinctResults: Bool = false

    /// Creates a request for the entity named `entityName`.
    public init(entityName: String) {
        self.storedEntityName = .some(entityName)
    }

    /// Creates a request with no entity; set ``entity`` or ``entityName`` before use.
    public init() {}

    init(entityClass: NSManagedObject.Type) {
        self.entityClass = entityClass
    }

    /// Sort descriptors made with `NSSortDescriptor(keyPath:ascending:)`. The key path's
    /// value must be an attribute type (`String`, numbers, `Date`, …, or optionals of them).
    /// Setting this replaces every other sort order.
    public var sortDescriptors: [NSSortDescriptor]? {
        get {
            let list = sortRules.compactMap { rule -> NSSortDescriptor? in
                switch rule {
                case let .descriptor(d): d
                case let .key(k) where k.comparison == .plain: NSSortDescriptor(key: k.key, ascending: k.ascending)
                default: nil
                }
            }
            return list.isEmpty ? nil : list
        }
        set {
            sortRules = (newValue ?? []).map { d in
                // A descriptor made from a key (`NSSortDescriptor(key:ascending:)`) sorts as
                // that key does; one made from a key path, by the key path.
                if let key = d.stringKey { return .key(SortKey(key, ascending: d.ascending)) }
                return .descriptor(d)
            }
        }
    }

    /// String-keyed sort order, the close equivalent of Core Data's
    /// `NSSortDescriptor(key:ascending:)` (unavailable on Linux, which has no key-value
    /// coding). Keys name attributes of the fetched entity. Setting this replaces every
    /// other sort order.
    public var sortKeys: [SortKey] {
        get {
            sortRules.compactMap { rule -> SortKey? in
                if case let .key(k) = rule { return k }
                return nil
            }
        }
        set { sortRules = newValue.map { FetchSortRule.key($0) } }
    }

    /// Sets a Foundation `SortDescriptor` order over the entity's class, replacing every
    /// other sort order.
    public func sortBy<Root: NSManagedObject>(_ descriptors: [SortDescriptor<Root>]) {
        sortRules = descriptors.map { d in
            FetchSortRule.comparator { a, b in
                guard let a = a as? Root, let b = b as? Root else { return .orderedSame }
                return d.compare(a, b)
            }
        }
    }

    /// Sets the predicate for requests whose result type is not the entity's class (for
    /// example `NSFetchRequest<NSManagedObjectID>`). `nil` removes it.
    public func setPredicate<Root: NSManagedObject>(_ predicate: Predicate<Root>?) {
        filter = predicate.map { FetchFilter($0) }
    }

    /// A readable summary for logs and messages.
    public var description: String {
        "NSFetchRequest(entity: \(entity?.name ?? entityName ?? "?"), limit: \(fetchLimit), offset: \(fetchOffset))"
    }

    /// A copy that fetches `entity` alone, with this request's predicate, sorts and
    /// pending-changes rule, and a window of the first `limit` objects (0: all): one part
    /// of a fetch over an entity and its sub-entities.
    func part(for entity: NSEntityDescription, limit: Int) -> NSFetchRequest<ResultType> {
        let part = NSFetchRequest<ResultType>()
        part.entity = entity
        part.filter = filter
        part.sortRules = sortRules
        part.fetchLimit = limit
        part.includesPendingChanges = includesPendingChanges
        part.includesSubentities = false
        return part
    }

    /// The entity to fetch, resolved in `model`, or a typed error; also when the predicate
    /// is over a class that the entity's objects are not (it could match no object).
    func resolveEntity(in model: NSManagedObjectModel) throws -> NSEntityDescription {
        let e = try resolveEntityByName(in: model)
        try filter?.check(e)
        if let filter, !filter.accepts(e.managedObjectClass) {
            throw CoreDataError(
                .coreData,
                "the fetch request's predicate is over \(filter.rootName), but its entity '\(e.name)' has objects of "
                    + "class \(e.managedObjectClassName); write the predicate over that class.")
        }
        return e
    }

    private func resolveEntityByName(in model: NSManagedObjectModel) throws -> NSEntityDescription {
        if let entity {
            guard entity.managedObjectModel === model else {
                throw CoreDataError(
                    .coreData,
                    "fetch request entity '\(entity.name)' belongs to another model than the context's; use the "
                        + "context's model's entity.")
            }
            return entity
        }
        if let entityClass, let e = model.entity(for: entityClass) { return e }
        guard let name = entityName, let e = model.entitiesByName[name] else {
            throw CoreDataError(
                .coreData,
                "fetch request names entity '\(entityName ?? "nil")', which is not in the model; known entities: "
                    + "\(model.entities.map(\.name).sorted().joined(separator: ", ")).")
        }
        return e
    }
}

extension NSFetchRequest where ResultType: NSManagedObject {
    /// The predicate objects must satisfy, as a Foundation `Predicate` over the entity's
    /// class; `nil` fetches every object of the entity. Reads `nil` when the predicate was
    /// set as an `NSPredicate`.
    ///
    /// (Disfavored beside the `NSPredicate` property of the same name, so that
    /// `request.predicate = nil` and an untyped read pick that one; assigning a
    /// `#Predicate` picks this one by its type.)
    @_disfavoredOverload
    public var predicate: Predicate<ResultType>? {
        get { filter?.typed as? Predicate<ResultType> }
        set { filter = newValue.map { FetchFilter($0) } }
    }
}

extension NSFetchRequest {
    /// The predicate objects must satisfy, as Core Data spells it: an `NSPredicate`, usually
    /// made from a format string (`NSPredicate(format: "pages > %d", 100)`); `nil` fetches
    /// every object of the entity. Reads `nil` when the predicate was set as a Foundation
    /// `Predicate`.
    ///
    /// A format predicate runs in the store when every part of it can (see Differences:
    /// comparisons, string operators, IN, BETWEEN, key paths through to-ones, `@count` and
    /// ANY/ALL/NONE over to-manys); otherwise on objects. A format string that does not
    /// parse, or names a key the entity does not have, makes the fetch throw its
    /// ``PredicateFormatError``. A block predicate (`NSPredicate(block:)`) runs on objects.
    public var predicate: NSPredicate? {
        get { filter?.typed as? NSPredicate }
        set { filter = newValue.map { FetchFilter($0) } }
    }
}

/// A type-erased predicate over one entity class.
struct FetchFilter {
    let typed: Any
    /// The predicate's expression tree, for translation into store conditions.
    let expression: Any
    let evaluate: (NSManagedObject) throws -> Bool
    /// Whether objects of a class can be the predicate's input (the class or a subclass of
    /// its root).
    let accepts: (NSManagedObject.Type) -> Bool
    /// The predicate's root class, named only when a message needs it: naming it when a
    /// predicate was set (`String(describing:)`, a reflection walk) was 3% of a loop of
    /// indexed fetches that each set a new predicate.
    let root: NSManagedObject.Type
    /// The predicate as a store predicate over an entity's rows, or nil when some part of it
    /// must run on objects.
    let translate: (NSEntityDescription) -> StorePredicate?
    /// Throws when the predicate cannot be used on an entity (a format string that did not
    /// parse, a key the entity does not have).
    let check: (NSEntityDescription) throws -> Void

    /// The root class's name, for messages.
    var rootName: String { String(describing: root) }

    init(
        typed: Any, expression: Any, evaluate: @escaping (NSManagedObject) throws -> Bool,
        accepts: @escaping (NSManagedObject.Type) -> Bool, root: NSManagedObject.Type,
        translate: @escaping (NSEntityDescription) -> StorePredicate? = { _ in nil },
        check: @escaping (NSEntityDescription) throws -> Void = { _ in }
    ) {
        self.typed = typed
        self.expression = expression
        self.evaluate = evaluate
        self.accepts = accepts
        self.root = root
        self.translate = translate
        self.check = check
    }

    init(_ predicate: NSPredicate) {
        let syntax = predicate.formatSyntax
        self.init(
            typed: predicate, expression: (),
            evaluate: { object in
                switch syntax {
                case let .success(tree)?: return try PersistenceKit.evaluate(tree, on: object, variables: [:])
                case let .failure(error)?: throw error
                case nil: return predicate.evaluate(with: object)
                }
            },
            accepts: { _ in true }, root: NSManagedObject.self,
            translate: { entity in
                guard case let .success(tree)? = syntax else { return nil }
                return tree.storePredicate(for: entity)
            },
            check: { entity in
                switch syntax {
                case let .success(tree)?: try validate(tree, for: entity)
                case let .failure(error)?: throw error
                case nil: break
                }
            })
    }

    init<Root: NSManagedObject>(_ predicate: Predicate<Root>) {
        self.init(
            typed: predicate, expression: predicate.expression,
            evaluate: { object in
                guard let root = object as? Root else { return false }
                return try predicate.evaluate(root)
            },
            accepts: { $0 is Root.Type }, root: Root.self,
            translate: { entity in storePredicate(of: predicate, for: entity) })
    }
}
