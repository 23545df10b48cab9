import Foundation

/// The new value a batch update gives one attribute: a constant, the same for every row,
/// or an expression computed from each row's stored values.
enum BatchUpdateValue {
    case constant(StoreValue)
    case computed(BatchRowExpression)

    /// The value of `propertiesToUpdate[attribute.name]` for `entity`.
    ///
    /// - Throws: ``CoreDataError`` `.managedObjectValidation` for a constant that does not
    ///   convert to the attribute's type or an expression the store cannot compute;
    ///   `.validationMissingMandatoryProperty` for nil given to a required attribute.
    init(_ value: Any?, for attribute: NSAttributeDescription, entity: NSEntityDescription) throws {
        let place = "batch update of '\(entity.name)'"
        if let expression = value as? FetchExpression {
            let compiled = try BatchRowExpression(expression, entity: entity, key: attribute.name)
            if case let .constant(v) = compiled.node {
                self = .constant(try attribute.batchStoreValue(v.swiftValue, entity: entity, at: place))
            } else {
                self = .computed(compiled)
            }
        } else {
            self = .constant(try attribute.batchStoreValue(value, entity: entity, at: place))
        }
    }
}

/// An expression of a batch update, ready to compute on stored rows: constants, the row's
/// own attributes, and the arithmetic functions `add:to:`, `from:subtract:`,
/// `multiply:by:` and `divide:by:`. A `nil` operand gives `nil`, as in SQL.
struct BatchRowExpression {
    enum Operator: String {
        case add = "add:to:"
        case subtract = "from:subtract:"
        case multiply = "multiply:by:"
        case divide = "divide:by:"
    }

    indirect enum Node {
        case constant(StoreValue)
        case attribute(Int)
        case arithmetic(Operator, Node, Node)
    }

    let node: Node

    /// `expression` compiled against `entity`, for the value of `key`.
    ///
    /// - Throws: ``CoreDataError`` `.managedObjectValidation` when it reads something other
    ///   than a stored attribute of `entity`, calls another function, or holds a constant of
    ///   a type no attribute has.
    init(_ expression: FetchExpression, entity: NSEntityDescription, key: String) throws {
        func refuse(_ why: String) -> CoreDataError {
            CoreDataError(
                .managedObjectValidation, key: key,
                "batch update of '\(entity.name)': the expression \(expression) for '\(key)' \(why); a batch update computes "
                    + "constants, attributes of the row, and add:to:, from:subtract:, multiply:by:, divide:by: of them.")
        }
        func compile(_ e: FetchExpression) throws -> Node {
            switch e.node {
            case let .constant(value):
                guard let value, let stored = value.batchStoreValue else { throw refuse("holds a constant of an unsupported type") }
                return .constant(stored)
            case let .keyPath(name):
                guard let i = entity.propertyIndex(named: name), let a = entity.properties[i] as? NSAttributeDescription,
                    !a.isTransient
                else { throw refuse("reads '\(name)', which is not a stored attribute of '\(entity.name)'") }
                return .attribute(i)
            case let .function(name, arguments):
                guard let op = Operator(rawValue: name), arguments.count == 2 else { throw refuse("calls \(name)") }
                return .arithmetic(op, try compile(arguments[0]), try compile(arguments[1]))
            case .evaluatedObject:
                throw refuse("reads the object itself")
            }
        }
        node = try compile(expression)
    }

    /// The expression's value on `row`.
    ///
    /// - Throws: ``CoreDataError`` `.managedObjectValidation` for arithmetic on a value that
    ///   is not a number, an integer overflow, or an integer division by zero.
    func value(on row: StoreRow) throws -> StoreValue {
        try Self.value(node, row)
    }

    private static func value(_ node: Node, _ row: StoreRow) throws -> StoreValue {
        switch node {
        case let .constant(v): return v
        case let .attribute(i): return row.value(at: i)
        case let .arithmetic(op, l, r): return try apply(op, try value(l, row), try value(r, row), row: row.id)
        }
    }

    private static func apply(_ op: Operator, _ l: StoreValue, _ r: StoreValue, row: StoreRowID) throws -> StoreValue {
        func fail(_ why: String) -> CoreDataError {
            CoreDataError(.managedObjectValidation, "batch update, \(row): \(op.rawValue) of \(l) and \(r) \(why); nothing was written.")
        }
        if l.isNull || r.isNull { return .null }
        switch (l, r) {
        case let (.integer(a), .integer(b)):
            let (v, overflow): (Int64, Bool)
            switch op {
            case .add: (v, overflow) = a.addingReportingOverflow(b)
            case .subtract: (v, overflow) = a.subtractingReportingOverflow(b)
            case .multiply: (v, overflow) = a.multipliedReportingOverflow(by: b)
            case .divide:
                if b == 0 { throw fail("divides by zero") }
                (v, overflow) = a.dividedReportingOverflow(by: b)
            }
            if overflow { throw fail("overflows a 64-bit integer") }
            return .integer(v)
        default:
            if case .decimal = l, let a = l.decimal, let b = r.decimal { return .decimal(decimal(op, a, b)) }
            if case .decimal = r, let a = l.decimal, let b = r.decimal { return .decimal(decimal(op, a, b)) }
            guard let a = l.double, let b = r.double else { throw fail("is not arithmetic on numbers") }
            switch op {
            case .add: return .double(a + b)
            case .subtract: return .double(a - b)
            case .multiply: return .double(a * b)
            case .divide: return .double(a / b)
            }
        }
    }

    private static func decimal(_ op: Operator, _ a: Decimal, _ b: Decimal) -> Decimal {
        switch op {
        case .add: a + b
        case .subtract: a - b
        case .multiply: a * b
        case .divide: a / b
        }
    }
}

extension StoreValue {
    /// A number's value as a `Double`; nil for other values.
    fileprivate var double: Double? {
        switch self {
        case let .integer(v): Double(v)
        case let .double(v): v
        case let .float(v): Double(v)
        case let .decimal(v): NSDecimalNumber(decimal: v).doubleValue
        default: nil
        }
    }

    /// A number's value as a `Decimal`; nil for other values.
    fileprivate var decimal: Decimal? {
        switch self {
        case let .integer(v): Decimal(v)
        case let .double(v): Decimal(v)
        case let .float(v): Decimal(Double(v))
        case let .decimal(v): v
        default: nil
        }
    }

    /// The Swift value an attribute converts from (see `NSAttributeType.storeValue(from:)`).
    var swiftValue: Any? {
        switch self {
        case .null, .reference, .references: nil
        case let .integer(v): v
        case let .double(v): v
        case let .float(v): v
        case let .bool(v): v
        case let .string(v): v
        case let .date(v): v
        case let .data(v): v
        case let .uuid(v): v
        case let .uri(v): v
        case let .decimal(v): v
        }
    }
}

extension PredicateValue {
    /// The constant as a store value; nil for an object or a collection.
    var batchStoreValue: StoreValue? {
        switch self {
        case .null: .null
        case let .string(v): .string(v)
        case let .integer(v): .integer(v)
        case let .double(v): .double(v)
        case let .bool(v): .bool(v)
        case let .date(v): .date(v)
        case let .uuid(v): .uuid(v)
        case let .url(v): .uri(v)
        case let .data(v): .data(v)
        case let .decimal(v): .decimal(v)
        case .object, .collection: nil
        }
    }
}
