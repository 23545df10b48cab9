import Foundation

/// The running state of one aggregate over the rows of one group: values are offered one
/// at a time, nil values are left out (as SQL's aggregates leave out NULL).
struct AggregateAccumulator {
    /// The non-nil values seen (the rows, for a `count:` of the rows themselves).
    private(set) var count: Int64 = 0
    private var integerSum: Int64 = 0
    private var doubleSum: Double = 0
    private var decimalSum: Decimal = 0
    private var sawDouble = false
    private var sawDecimal = false
    private var overflowed = false
    /// The least (`min:`) or greatest (`max:`) value seen; `.null` until one is.
    private var extreme: StoreValue = .null

    /// Takes one value into the aggregate of `function`.
    @inline(__always)
    mutating func add(_ value: StoreValue, _ function: DictionaryFetchPlan.Function) {
        if case .null = value { return }
        count += 1
        switch function {
        case .count:
            return
        case .sum, .average:
            switch value {
            case let .integer(i): addInteger(i)
            case let .double(d): doubleSum += d; sawDouble = true
            case let .float(f): doubleSum += Double(f); sawDouble = true
            case let .bool(b): addInteger(b ? 1 : 0)
            case let .decimal(d): decimalSum += d; sawDecimal = true
            default: count -= 1  // not a number (a string, a date): left out
            }
        case .min:
            if case .null = extreme { extreme = value } else if StoreValue.compare(value, extreme) == .orderedAscending { extreme = value }
        case .max:
            if case .null = extreme { extreme = value } else if StoreValue.compare(value, extreme) == .orderedDescending { extreme = value }
        }
    }

    @inline(__always)
    private mutating func addInteger(_ i: Int64) {
        let (sum, overflow) = integerSum.addingReportingOverflow(i)
        integerSum = sum
        if overflow { overflowed = true }
    }

    /// The aggregate's value, converted to `type` (see
    /// ``NSExpressionDescription/expressionResultType``); `.null` when no value was seen,
    /// except for `count:` (0).
    ///
    /// - Throws: ``CoreDataError`` `.coreData` when an integer sum overflows `Int64`.
    func result(_ function: DictionaryFetchPlan.Function, as type: NSAttributeType, name: String) throws -> StoreValue {
        let value: StoreValue
        switch function {
        case .count:
            value = .integer(count)
        case .min, .max:
            value = extreme
        case .sum, .average:
            if count == 0 { return .null }
            if overflowed {
                throw CoreDataError(.coreData, key: name, "dictionary fetch: the sum of '\(name)' overflows Int64.")
            }
            if sawDecimal && !sawDouble {
                let sum = decimalSum + Decimal(integerSum)
                value = .decimal(function == .sum ? sum : sum / Decimal(count))
            } else if sawDouble || sawDecimal || function == .average {
                let sum = doubleSum + Double(integerSum) + NSDecimalNumber(decimal: decimalSum).doubleValue
                value = .double(function == .sum ? sum : sum / Double(count))
            } else {
                value = .integer(integerSum)
            }
        }
        return Self.convert(value, to: type)
    }

    /// `value` as a value of `type`, for the numeric types; otherwise unchanged.
    static func convert(_ value: StoreValue, to type: NSAttributeType) -> StoreValue {
        switch type {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            switch value {
            case let .double(d): return Int64(exactly: d.rounded(.towardZero)).map(StoreValue.integer) ?? .null
            case let .float(f): return Int64(exactly: Double(f).rounded(.towardZero)).map(StoreValue.integer) ?? .null
            case let .decimal(d): return .integer(NSDecimalNumber(decimal: d).int64Value)
            case let .bool(b): return .integer(b ? 1 : 0)
            default: return value
            }
        case .doubleAttributeType, .floatAttributeType:
            switch value {
            case let .integer(i): return .double(Double(i))
            case let .float(f): return .double(Double(f))
            case let .decimal(d): return .double(NSDecimalNumber(decimal: d).doubleValue)
            case let .bool(b): return .double(b ? 1 : 0)
            default: return value
            }
        case .decimalAttributeType:
            switch value {
            case let .integer(i): return .decimal(Decimal(i))
            case let .double(d): return .decimal(Decimal(d))
            case let .float(f): return .decimal(Decimal(Double(f)))
            default: return value
            }
        default:
            return value
        }
    }
}
