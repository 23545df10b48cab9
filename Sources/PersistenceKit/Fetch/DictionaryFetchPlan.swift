import Foundation

/// A dictionary fetch request resolved against its entity: the columns to read from each
/// row, what each result holds, how rows are grouped and how results are ordered.
struct DictionaryFetchPlan {
    /// An aggregate function of a dictionary fetch.
    enum Function {
        case count, sum, average, min, max

        init?(name: String) {
            switch name {
            case "count:": self = .count
            case "sum:": self = .sum
            case "average:": self = .average
            case "min:": self = .min
            case "max:": self = .max
            default: return nil
            }
        }
    }

    /// One value of each result, in the order of `propertiesToFetch`.
    enum Output {
        /// The value of read column `column`; `target` is the destination entity of a to-one
        /// relationship (its value becomes an object ID).
        case value(column: Int, target: NSEntityDescription?)
        /// Aggregate `aggregate` (an index in ``aggregates``).
        case aggregate(Int)
    }

    /// An aggregate: its function, the read column it takes (nil: the rows themselves, for
    /// `count:`) and the type its value is converted to.
    struct Aggregate {
        var function: Function
        var column: Int?
        var resultType: NSAttributeType
    }

    /// A sort rule over results: by output `output`, or by read column `column` (an
    /// attribute not fetched, for fetches that neither group nor aggregate).
    struct Sort {
        var output: Int?
        var column: Int?
        var key: SortKey
    }

    /// The keys of the results' values, in output order.
    private(set) var names: [String] = []
    private(set) var outputs: [Output] = []
    private(set) var aggregates: [Aggregate] = []
    /// The entity's property indices to read from each row; every other column refers to a
    /// position in this list.
    private(set) var columns: [Int] = []
    /// The read columns rows are grouped by.
    private(set) var groupBy: [Int] = []
    private(set) var sorts: [Sort] = []

    /// Whether rows are folded into groups (an aggregate is fetched or a group-by is set);
    /// otherwise each row is a result.
    var groups: Bool { !aggregates.isEmpty || !groupBy.isEmpty }

    /// Resolves `request` for `entity`.
    ///
    /// - Throws: ``CoreDataError`` `.coreData` for a property that is not the entity's, a
    ///   to-many relationship, an expression that is not one of the supported aggregates of
    ///   an attribute, a fetched property that is neither grouped by nor an aggregate while
    ///   rows are grouped, and a sort rule that is neither a fetched name nor (without
    ///   grouping) an attribute.
    init<T>(_ request: NSFetchRequest<T>, entity: NSEntityDescription) throws {
        let fetched: [Any] = request.propertiesToFetch ?? entity.properties.filter { $0 is NSAttributeDescription && !$0.isTransient }
        var plainOutputs: [(name: String, property: Int)] = []
        for item in fetched {
            if let expression = item as? NSExpressionDescription {
                names.append(expression.name)
                outputs.append(.aggregate(aggregates.count))
                aggregates.append(try aggregate(expression, entity: entity))
                continue
            }
            let (name, property) = try Self.property(item, of: entity, role: "propertiesToFetch")
            let target = (entity.properties[property] as? NSRelationshipDescription)?.destinationEntity
            names.append(name)
            outputs.append(.value(column: column(property), target: target))
            plainOutputs.append((name, property))
        }
        for item in request.propertiesToGroupBy ?? [] {
            if item is NSExpressionDescription {
                throw Self.error("propertiesToGroupBy holds an expression description; group by attributes or to-one relationships.")
            }
            groupBy.append(column(try Self.property(item, of: entity, role: "propertiesToGroupBy").index))
        }
        if groups {
            for (name, property) in plainOutputs where !groupBy.contains(column(property)) {
                throw Self.error(
                    "'\(name)' is fetched but neither grouped by nor an aggregate; add it to propertiesToGroupBy or fetch it "
                        + "through an NSExpressionDescription.", key: name)
            }
        }
        for rule in request.sortRules { sorts.append(try sort(rule, entity: entity)) }
    }

    /// The position of `property` in ``columns``, added when new.
    private mutating func column(_ property: Int) -> Int {
        if let i = columns.firstIndex(of: property) { return i }
        columns.append(property)
        return columns.count - 1
    }

    private mutating func aggregate(_ description: NSExpressionDescription, entity: NSEntityDescription) throws -> Aggregate {
        let name = description.name
        guard let expression = description.expression else {
            throw Self.error("expression description '\(name)' has no expression.", key: name)
        }
        guard case let .function(functionName, arguments) = expression.node, let function = Function(name: functionName),
            arguments.count == 1
        else {
            throw Self.error(
                "expression '\(expression)' of '\(name)' is not supported; use count:, sum:, average:, min: or max: of one "
                    + "attribute.", key: name)
        }
        switch arguments[0].node {
        case .evaluatedObject where function == .count:
            return Aggregate(function: function, column: nil, resultType: description.expressionResultType)
        case let .keyPath(keyPath):
            guard let property = entity.propertyIndex(named: keyPath) else {
                throw Self.error("'\(name)' reads '\(keyPath)', which is not a property of entity '\(entity.name)'.", key: name)
            }
            let p = entity.properties[property]
            let allowed = (p is NSAttributeDescription && !p.isTransient)
                || (function == .count && (p as? NSRelationshipDescription)?.isToMany == false)
            guard allowed else {
                throw Self.error(
                    "'\(name)' reads '\(keyPath)', which \(function) cannot take; aggregate stored attributes (count: also a "
                        + "to-one relationship).", key: name)
            }
            return Aggregate(function: function, column: column(property), resultType: description.expressionResultType)
        default:
            throw Self.error("expression '\(expression)' of '\(name)' is not supported; aggregate an attribute by key path.", key: name)
        }
    }

    private mutating func sort(_ rule: FetchSortRule, entity: NSEntityDescription) throws -> Sort {
        let key: SortKey
        switch rule {
        case let .key(k):
            key = k
        case let .descriptor(d):
            guard let i = entity.attributeIndex(forKeyPath: d.keyPath) else {
                throw Self.error("a sort descriptor of a dictionary fetch reads no attribute of entity '\(entity.name)'.")
            }
            key = SortKey(entity.properties[i].name, ascending: d.ascending)
        case .comparator:
            throw Self.error("a dictionary fetch cannot sort with a SortDescriptor over objects; use sortKeys or sortDescriptors.")
        }
        if let output = names.firstIndex(of: key.key) { return Sort(output: output, column: nil, key: key) }
        if !groups, let property = entity.propertyIndex(named: key.key), entity.properties[property] is NSAttributeDescription {
            return Sort(output: nil, column: column(property), key: key)
        }
        throw Self.error(
            "a dictionary fetch sorts by '\(key.key)', which is \(groups ? "not among the fetched properties" : "no attribute of entity '\(entity.name)'").",
            key: key.key)
    }

    /// The name and index of the entity's property that `item` names (a name or a
    /// description), or a typed error; to-many relationships are refused.
    private static func property(_ item: Any, of entity: NSEntityDescription, role: String) throws -> (name: String, index: Int) {
        let name: String
        if let s = item as? String {
            name = s
        } else if let p = item as? NSPropertyDescription {
            guard p.entity === entity else {
                throw error("\(role) holds property '\(p.name)', which is not a property of entity '\(entity.name)'.", key: p.name)
            }
            name = p.name
        } else {
            throw error("\(role) holds \(type(of: item)); give property names or property descriptions.")
        }
        guard let index = entity.propertyIndex(named: name) else {
            throw error("\(role) names '\(name)', which is not a property of entity '\(entity.name)'.", key: name)
        }
        let p = entity.properties[index]
        if let r = p as? NSRelationshipDescription, r.isToMany {
            throw error("\(role) names to-many relationship '\(name)'; only attributes and to-one relationships can be fetched.", key: name)
        }
        if p.isTransient { throw error("\(role) names transient property '\(name)', which the store does not hold.", key: name) }
        return (name, index)
    }

    private static func error(_ message: String, key: String? = nil) -> CoreDataError {
        CoreDataError(.coreData, key: key, "dictionary fetch: " + message)
    }
}
