import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// See ``PersistentStore``.
    public func fetchRows(entity: Int32, filter: StoreFilter?) throws -> [StoreRow] {
        try fetchRows(entity: entity, filter: filter, order: [], offset: 0, limit: 0)
    }

    /// See ``PersistentStore``. The filter, order, offset and limit run in SQL when the
    /// translator covers them (see `SQLTranslator`); otherwise the SQL selects a superset
    /// and the rest runs in memory, with the same results.
    ///
    /// Without an order or a window the server does not sort: the rows come in the order the
    /// plan reads them (for a table only ever appended to, key order already) and are put in
    /// key order here, which costs a pass over them when they already are; a sort of many
    /// rows on the server would cost more than the scan that found them.
    public func fetchRows(entity: Int32, filter: StoreFilter?, order: [StoreSortKey], offset: Int, limit: Int) throws -> [StoreRow] {
        let t = try layout(entity)
        var translator = SQLTranslator(layouts: layouts)
        var scope = translator.newScope(entity)
        let condition = translator.filter(filter, &scope)
        let windowed = offset > 0 || limit > 0
        let sqlOrder = condition.exact && (!order.isEmpty || windowed) ? translator.orderBy(order, &scope) : nil
        var sql = "SELECT \(t.qualifiedSelectList(scope.alias)) FROM \(t.table) \(scope.alias)"
        if !scope.joins.isEmpty { sql += " " + scope.joins.joined(separator: " ") }
        sql += " WHERE \(condition.sql)"
        if let sqlOrder {
            sql += " ORDER BY \(sqlOrder)"
            if limit > 0 { sql += " LIMIT \(limit)" }
            if offset > 0 { sql += " OFFSET \(offset)" }
        }
        let parameters = translator.parameters
        return try pool.read { c in
            let r = try c.execute(sql, parameters, binary: true)
            var rows = (0..<r.count).map { t.decodeRow(r, $0) }
            if sqlOrder == nil { Self.putInKeyOrder(&rows) }
            if !condition.exact, let filter {
                rows = try matching(rows, filter, entity, on: c)
            }
            if sqlOrder == nil && (!order.isEmpty || windowed) {
                rows = StoreCommitSupport.sorted(rows, by: order, offset: offset, limit: limit)
            }
            return rows
        }
    }

    /// Sorts `rows` (of one entity, so with distinct keys) by key, unless they already are.
    private static func putInKeyOrder(_ rows: inout [StoreRow]) {
        var i = 1
        while i < rows.count && rows[i - 1].id.primaryKey < rows[i].id.primaryKey { i += 1 }
        if i < rows.count { rows.sort { $0.id.primaryKey < $1.id.primaryKey } }
    }

    /// The rows of `rows` that pass `filter`, evaluated in memory.
    private func matching(_ rows: [StoreRow], _ filter: StoreFilter, _ entity: Int32, on c: PostgreSQLConnection) throws -> [StoreRow] {
        let evaluator = filter.predicate.map { support.evaluator(for: $0, entity: entity) }
        var cache: [StoreRowID: StoreRow?] = [:]
        return try rows.filter { row in
            guard filter.matches(row) else { return false }
            guard let evaluator else { return true }
            return try evaluator.matches(row) { id in
                if let known = cache[id] { return known }
                let found = try self.fetchRow(id, on: c)
                cache[id] = found
                return found
            }
        }
    }

    /// See ``PersistentStore``. A `count(*)` when the filter translates exactly.
    public func countRows(entity: Int32, filter: StoreFilter?) throws -> Int {
        let t = try layout(entity)
        var translator = SQLTranslator(layouts: layouts)
        var scope = translator.newScope(entity)
        let condition = translator.filter(filter, &scope)
        guard condition.exact else { return try fetchRows(entity: entity, filter: filter).count }
        var sql = "SELECT count(*) FROM \(t.table) \(scope.alias)"
        if !scope.joins.isEmpty { sql += " " + scope.joins.joined(separator: " ") }
        sql += " WHERE \(condition.sql)"
        let parameters = translator.parameters
        return try pool.read { c in Int(try c.execute(sql, parameters).int64(0, 0)) }
    }

    /// See ``PersistentStore``.
    public func fetchRow(_ id: StoreRowID) throws -> StoreRow? {
        try pool.read { c in try fetchRow(id, on: c) }
    }

    func fetchRow(_ id: StoreRowID, on c: PostgreSQLConnection) throws -> StoreRow? {
        let t = try layout(id.entity)
        let r = try c.execute(statements[Int(id.entity)].fetchByKey, [.text(String(id.primaryKey))], binary: true)
        return r.count == 0 ? nil : t.decodeRow(r, 0)
    }

    /// See ``PersistentStore/fetchRows(_:)``. One statement per entity; rows of several
    /// entities are read in one repeatable-read transaction, so as of one moment.
    public func fetchRows(_ ids: [StoreRowID]) throws -> [StoreRow] {
        if ids.isEmpty { return [] }
        let groups = Dictionary(grouping: ids, by: \.entity)
        return try pool.read { c in
            var found: [StoreRowID: StoreRow] = [:]
            found.reserveCapacity(ids.count)
            let several = groups.count > 1
            if several { try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
            do {
                for (entity, group) in groups {
                    let t = try layout(entity)
                    let r = try c.execute(
                        "SELECT \(t.selectList) FROM \(t.table) WHERE \"_pk\" = ANY($1::bigint[])",
                        [.text(ValueCoding.array(group.map(\.primaryKey)))], binary: true)
                    for i in 0..<r.count {
                        let row = t.decodeRow(r, i)
                        found[row.id] = row
                    }
                }
                if several { try c.execute("COMMIT") }
            } catch {
                if several && c.isHealthy { _ = try? c.execute("ROLLBACK") }
                throw error
            }
            return ids.compactMap { found[$0] }
        }
    }

    /// See ``PersistentStore``.
    public func containsRow(_ id: StoreRowID) throws -> Bool {
        try rowVersion(id) != nil
    }

    /// See ``PersistentStore``.
    public func rowVersion(_ id: StoreRowID) throws -> Int64? {
        let sql = statements[Int(try layout(id.entity).entity)].versionByKey
        return try pool.read { c in
            let r = try c.execute(sql, [.text(String(id.primaryKey))])
            return r.count == 0 ? nil : r.int64(0, 0)
        }
    }
}

extension TableLayout {
    /// ``selectList`` with each column under `alias`.
    func qualifiedSelectList(_ alias: String) -> String { Self.selectList(columns, derived: derived, alias: alias, table: table) }
}
