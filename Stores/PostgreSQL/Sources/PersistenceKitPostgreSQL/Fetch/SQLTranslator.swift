import Foundation
import PersistenceKit

/// Translates a fetch's filter and order into SQL for one entity's table, with every
/// constant as a parameter.
///
/// What it cannot translate exactly it leaves out, and says so (`exact` false): the SQL then
/// selects a superset of the matching rows, and the store evaluates the whole filter on them
/// in memory (``StorePredicateEvaluator``), so every predicate is answered as the built-in
/// stores answer it. Translated: comparisons of attributes and to-ones with constants (Swift's
/// optional semantics for nil, NaN unordered), `IN`, case- and diacritic-sensitive string
/// tests (`==`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`), `&&`, `||`, `!`, key paths
/// through to-ones (as left joins, across a family's tables for a to-one into one),
/// `ANY`/`ALL`/`NONE` over to-manys (as `EXISTS`) and
/// to-many counts (ends without a column, as `EXISTS` and `count(*)` subqueries on the
/// owning end's column or join table). Left to memory: case- or diacritic-insensitive and
/// `MATCHES` string tests, comparisons of values of another kind than the column's, and what
/// contains them under `!` or `ALL`.
struct SQLTranslator {
    let layouts: [TableLayout]
    private(set) var parameters: [SQLParameter] = []
    private var aliasCount = 0

    init(layouts: [TableLayout]) { self.layouts = layouts }

    /// One table in a query, with the to-one joins its key paths needed.
    struct Scope {
        var alias: String
        var entity: Int32
        var joins: [String] = []
        var joined: [[Int]: (alias: String, entity: Int32)] = [:]
        /// Aliases of joins into an entity family (see `SQLTranslator+Family.swift`): their
        /// rows may be of any entity of it, so ends read for them are left to memory.
        var familyAliases: Set<String> = []
    }

    /// The SQL of a condition, and whether it is exactly the condition (else a superset).
    struct Translated {
        var sql: String
        var exact: Bool
    }

    mutating func newScope(_ entity: Int32) -> Scope {
        aliasCount += 1
        return Scope(alias: "t\(aliasCount)", entity: entity)
    }

    mutating func bind(_ p: SQLParameter) -> String {
        parameters.append(p)
        return "$\(parameters.count)"
    }

    /// The WHERE condition for `filter` on rows of `scope`.
    mutating func filter(_ filter: StoreFilter?, _ scope: inout Scope) -> Translated {
        guard let filter else { return Translated(sql: "TRUE", exact: true) }
        var parts: [String] = []
        var exact = true
        for c in filter.conditions {
            if let t = compare(StorePath(property: c.property), c.op, c.value, &scope, negated: false) {
                parts.append(t)
            } else {
                exact = false
            }
        }
        if let p = filter.predicate {
            if let t = predicate(p, &scope, negated: false) {
                parts.append(t.sql)
                exact = exact && t.exact
            } else {
                exact = false
            }
        }
        return Translated(sql: parts.isEmpty ? "TRUE" : parts.map { "(\($0))" }.joined(separator: " AND "), exact: exact)
    }

    /// `p` as SQL; nil when no SQL selects a superset of its rows. Under `negated`, the SQL
    /// is two-valued (never NULL), so that `NOT` of it is the negation.
    mutating func predicate(_ p: StorePredicate, _ scope: inout Scope, negated: Bool) -> Translated? {
        switch p {
        case let .constant(b):
            return Translated(sql: b ? "TRUE" : "FALSE", exact: true)
        case let .and(parts):
            var sqls: [String] = []
            var exact = true
            for part in parts {
                if let t = predicate(part, &scope, negated: negated) {
                    sqls.append("(\(t.sql))")
                    exact = exact && t.exact
                } else {
                    exact = false
                }
            }
            // Under negation a dropped part would turn a superset into a subset.
            if negated && !exact { return nil }
            return Translated(sql: sqls.isEmpty ? "TRUE" : sqls.joined(separator: " AND "), exact: exact)
        case let .or(parts):
            var sqls: [String] = []
            var exact = true
            for part in parts {
                guard let t = predicate(part, &scope, negated: negated) else { return nil }
                sqls.append("(\(t.sql))")
                exact = exact && t.exact
            }
            if negated && !exact { return nil }
            return Translated(sql: sqls.isEmpty ? "FALSE" : sqls.joined(separator: " OR "), exact: exact)
        case let .not(inner):
            guard let t = predicate(inner, &scope, negated: !negated), t.exact else { return nil }
            return Translated(sql: "NOT (\(t.sql))", exact: true)
        case let .compare(path, op, value):
            return compare(path, op, value, &scope, negated: negated).map { Translated(sql: $0, exact: true) }
        case let .oneOf(path, values):
            return oneOf(path, values, &scope, negated: negated).map { Translated(sql: $0, exact: true) }
        case let .text(path, test):
            return text(path, test, &scope, negated: negated).map { Translated(sql: $0, exact: true) }
        case let .each(path, quantifier, inner):
            return each(path, quantifier, inner, &scope).map { Translated(sql: $0, exact: true) }
        case let .count(path, op, n):
            if let (key, end) = derivedEnd(path, &scope) {
                // Counted where the links are kept, not listed first.
                return Translated(sql: "\(end.count(of: key)) \(sqlOperator(op)) \(bind(.text(String(n))))", exact: true)
            }
            guard let (expr, kind) = column(path, &scope), case .toMany = kind else { return nil }
            return Translated(sql: "COALESCE(cardinality(\(expr)), 0) \(sqlOperator(op)) \(bind(.text(String(n))))", exact: true)
        }
    }

    /// The column `path` reads, joining the to-ones it goes through; nil when a step is not
    /// a stored to-one or the property has no column.
    mutating func column(_ path: StorePath, _ scope: inout Scope) -> (String, ColumnKind)? {
        guard let (alias, entity) = table(path, &scope) else { return nil }
        if let end = layouts[Int(entity)].derivedEnd(path.property) {
            // A family's links are listed as packed keys with their entities, and a joined
            // family row's end matches its own entity: left to memory.
            if end.listsEntities || scope.familyAliases.contains(alias) { return nil }
            // A derived end's keys, listed from the owning column (`= ANY` and `cardinality`
            // read them as a stored list's).
            return (end.keys(of: "\(alias).\"_pk\""), .toMany(destination: end.destination))
        }
        guard let col = layouts[Int(entity)].column(path.property) else { return nil }
        // A to-one or list into a family holds entities with its keys: left to memory.
        switch col.kind {
        case .familyToOne, .familyToMany: return nil
        default: break
        }
        return ("\(alias).\(col.quoted)", col.kind)
    }

    /// The derived end `path` names, and the SQL key of the row it is read for, joining the
    /// to-ones it goes through; nil when the property is not a derived end.
    mutating func derivedEnd(_ path: StorePath, _ scope: inout Scope) -> (key: String, end: DerivedEnd)? {
        guard let (alias, entity) = table(path, &scope), !scope.familyAliases.contains(alias),
            let end = layouts[Int(entity)].derivedEnd(path.property)
        else { return nil }
        return ("\(alias).\"_pk\"", end)
    }

    /// The alias and entity of the table holding `path`'s property, joining the to-ones it
    /// goes through (a to-one into a family joins the family's tables, under the
    /// destination's entity); nil when a step is not a stored to-one.
    mutating func table(_ path: StorePath, _ scope: inout Scope) -> (String, Int32)? {
        var alias = scope.alias
        var entity = scope.entity
        for (i, step) in path.through.enumerated() {
            let prefix = Array(path.through[...i])
            if let j = scope.joined[prefix] {
                alias = j.alias
                entity = j.entity
                continue
            }
            guard let col = layouts[Int(entity)].column(step) else { return nil }
            aliasCount += 1
            let next = "j\(aliasCount)"
            let destination: Int32
            switch col.kind {
            case let .toOne(d):
                destination = d
                scope.joins.append("LEFT JOIN \(layouts[Int(d)].table) \(next) ON \(next).\"_pk\" = \(alias).\(col.quoted)")
            case let .familyToOne(d):
                destination = d
                scope.joins.append(familyJoin(next, destination: d, from: alias, in: entity, key: col))
                scope.familyAliases.insert(next)
            default:
                return nil
            }
            scope.joined[prefix] = (next, destination)
            alias = next
            entity = destination
        }
        return (alias, entity)
    }

    private func sqlOperator(_ op: StoreFilter.Condition.Operator) -> String {
        switch op {
        case .equal: "="
        case .notEqual: "<>"
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        }
    }

    private mutating func compare(
        _ path: StorePath, _ op: StoreFilter.Condition.Operator, _ value: StoreValue, _ scope: inout Scope, negated: Bool
    ) -> String? {
        if let sql = familyToOneCompare(path, op, value, &scope, negated: negated) { return sql }
        guard let (expr, kind) = column(path, &scope) else { return nil }
        if case .toMany = kind { return nil }
        // nil equals nil, differs from every value, and is ordered before none of them.
        if value.isNull {
            switch op {
            case .equal: return "\(expr) IS NULL"
            case .notEqual: return "\(expr) IS NOT NULL"
            default: return "FALSE"
            }
        }
        // NaN is unordered: only "not equal" holds for it.
        if value.isNaNValue { return op == .notEqual ? "TRUE" : "FALSE" }
        guard let p = ValueCoding.encode(value, kind) else { return nil }
        let param = "\(bind(p))::\(kind.sqlType)"
        if op == .notEqual { return "\(expr) IS DISTINCT FROM \(param)" }
        let lhs = kind == .string || kind == .uri ? "\(expr) COLLATE \"C\"" : expr
        var sql = "\(lhs) \(sqlOperator(op)) \(param)"
        // PostgreSQL orders NaN above every number; Swift orders it with none.
        if kind.isFloating && (op == .greater || op == .greaterOrEqual) { sql += " AND \(expr) <> 'NaN'" }
        return negated ? "COALESCE(\(sql), FALSE)" : sql
    }

    private mutating func oneOf(_ path: StorePath, _ values: [StoreValue], _ scope: inout Scope, negated: Bool) -> String? {
        guard let (expr, kind) = column(path, &scope) else { return nil }
        if case .toMany = kind { return nil }
        if kind == .data { return nil }
        var elements: [String] = []
        var hasNull = false
        for v in values {
            if v.isNull {
                hasNull = true
                continue
            }
            if v.isNaNValue { continue }
            guard case let .text(t)? = ValueCoding.encode(v, kind) else { return nil }
            elements.append("\"" + t.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"")
        }
        var parts: [String] = []
        if !elements.isEmpty {
            let sql = "\(expr) = ANY(\(bind(.text("{" + elements.joined(separator: ",") + "}")))::\(kind.sqlType)[])"
            parts.append(negated ? "COALESCE(\(sql), FALSE)" : sql)
        }
        if hasNull { parts.append("\(expr) IS NULL") }
        return parts.isEmpty ? "FALSE" : parts.joined(separator: " OR ")
    }

    private mutating func text(_ path: StorePath, _ test: StoreTextTest, _ scope: inout Scope, negated: Bool) -> String? {
        guard let (expr, kind) = column(path, &scope) else { return nil }
        // A value that is not a string passes no text test.
        guard kind == .string else { return "FALSE" }
        guard !test.caseInsensitive, !test.diacriticInsensitive else { return nil }
        let sql: String
        switch test.kind {
        case .equals: sql = "\(expr) = \(bind(.text(test.pattern)))"
        case .beginsWith: sql = "starts_with(\(expr), \(bind(.text(test.pattern))))"
        case .endsWith:
            let p = bind(.text(test.pattern))
            sql = "right(\(expr), char_length(\(p)::text)) = \(p)"
        case .contains: sql = "strpos(\(expr), \(bind(.text(test.pattern)))) > 0"
        case .like:
            var pattern = ""
            for ch in test.pattern {
                switch ch {
                case "*": pattern += "%"
                case "?": pattern += "_"
                case "%", "_", "\\": pattern += "\\" + String(ch)
                default: pattern.append(ch)
                }
            }
            sql = "\(expr) LIKE \(bind(.text(pattern)))"
        case .matches: return nil
        }
        return negated ? "COALESCE(\(sql), FALSE)" : sql
    }

    private mutating func each(_ path: StorePath, _ q: StoreQuantifier, _ inner: StorePredicate, _ scope: inout Scope) -> String? {
        let derived = derivedEnd(path, &scope)
        guard let (expr, kind) = column(path, &scope), case let .toMany(destination) = kind else { return nil }
        var sub = newScope(destination)
        guard let t = predicate(inner, &sub, negated: q == .all), t.exact else { return nil }
        let test = q == .all ? "NOT (\(t.sql))" : "(\(t.sql))"
        let from = ([layouts[Int(destination)].table + " " + sub.alias] + sub.joins).joined(separator: " ")
        // A derived end's rows are those whose owning column links here: tested on them
        // directly (an index lookup), not through a list of their keys.
        let member = derived.map { $0.end.links(sub.alias, to: $0.key) } ?? "\(sub.alias).\"_pk\" = ANY(\(expr))"
        let exists = "EXISTS (SELECT 1 FROM \(from) WHERE \(member) AND \(test))"
        return q == .any ? exists : "NOT \(exists)"
    }

    /// The ORDER BY terms for `order` on `scope`, ending with the primary key; nil when a key
    /// cannot be sorted by in SQL (a string comparison other than plain, a to-many).
    mutating func orderBy(_ order: [StoreSortKey], _ scope: inout Scope) -> String? {
        var terms: [String] = []
        for key in order {
            guard key.comparison == .plain, let (expr, kind) = column(StorePath(property: key.property), &scope) else { return nil }
            if case .toMany = kind { return nil }
            let dir = key.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST"
            if kind.isFloating {
                // nil first, then NaN, then numbers (as `StoreValue.compare` orders them).
                terms.append("CASE WHEN \(expr) IS NULL THEN 0 WHEN \(expr) = 'NaN' THEN 1 ELSE 2 END \(key.ascending ? "ASC" : "DESC")")
            }
            terms.append(kind == .string || kind == .uri ? "\(expr) COLLATE \"C\" \(dir)" : "\(expr) \(dir)")
        }
        terms.append("\(scope.alias).\"_pk\" ASC")
        return terms.joined(separator: ", ")
    }
}

extension StoreValue {
    /// Whether the value is a floating-point NaN.
    var isNaNValue: Bool {
        switch self {
        case let .double(d): d.isNaN
        case let .float(f): f.isNaN
        case let .date(d): d.timeIntervalSinceReferenceDate.isNaN
        default: false
        }
    }
}
