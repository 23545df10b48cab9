import Foundation
import PersistenceKit

extension PostgreSQLStore {
    /// Writes `change` to the join table of the owning end `end`, a side or both of which
    /// are of an entity family and have an entity column (see `DerivedEnd+Family.swift`):
    /// every row is matched and written by key and entity, since keys are counted per
    /// entity. Pairs in row-ID order, as for the other join tables.
    func writeFamilyJoinChanges(_ change: JoinChanges, of end: DerivedEnd, on c: PostgreSQLConnection) throws {
        let sourceEntity = end.matchEntityColumn != nil
        let targetEntity = end.listedEntityColumn != nil
        // The columns, unnest arguments (from `$n`) and values of one side: key, then entity
        // when the side has one.
        func side(_ name: String, _ ids: [StoreRowID], entity: Bool, from n: Int)
            -> (columns: [String], args: [String], values: [SQLParameter])
        {
            var columns = [quote(name)]
            var args = ["$\(n)::bigint[]"]
            var values: [SQLParameter] = [.text(ValueCoding.array(ids.map(\.primaryKey)))]
            if entity {
                columns.append(quote(name + "_entity"))
                args.append("$\(n + 1)::bigint[]")
                values.append(.text(ValueCoding.array(ids.map { Int64($0.entity) })))
            }
            return (columns, args, values)
        }
        if !change.sourcesGone.isEmpty {
            let s = side("source", change.sourcesGone.sorted(), entity: sourceEntity, from: 1)
            let columns = s.columns.joined(separator: ", ")
            try c.execute("DELETE FROM \(end.table) WHERE (\(columns)) IN (SELECT * FROM unnest(\(s.args.joined(separator: ", "))))", s.values)
        }
        func pairs(_ list: [(StoreRowID, StoreRowID)]) -> (columns: String, args: String, values: [SQLParameter]) {
            let sorted = list.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            let s = side("source", sorted.map(\.0), entity: sourceEntity, from: 1)
            let t = side("target", sorted.map(\.1), entity: targetEntity, from: 1 + s.values.count)
            return ((s.columns + t.columns).joined(separator: ", "), (s.args + t.args).joined(separator: ", "), s.values + t.values)
        }
        if !change.removes.isEmpty {
            let p = pairs(change.removes)
            try c.execute("DELETE FROM \(end.table) WHERE (\(p.columns)) IN (SELECT * FROM unnest(\(p.args)))", p.values)
        }
        if !change.adds.isEmpty {
            let p = pairs(change.adds)
            try c.execute("INSERT INTO \(end.table) (\(p.columns)) SELECT * FROM unnest(\(p.args)) ON CONFLICT DO NOTHING", p.values)
        }
    }
}
