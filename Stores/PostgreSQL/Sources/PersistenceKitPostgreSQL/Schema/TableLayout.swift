import Foundation
import PersistenceKit

/// How one property is kept in a PostgreSQL column.
enum ColumnKind: Sendable, Equatable {
    case int16, int32, int64, double, float, decimal, string, bool, date, data, uuid, uri
    /// A to-one relationship: the destination row's primary key.
    case toOne(destination: Int32)
    /// A to-many relationship kept in its row (ordered, its own inverse, or without an
    /// inverse; see ``LinkLayout``): the destination rows' primary keys (`bigint[]`), in the
    /// relationship's order (ascending when unordered).
    case toMany(destination: Int32)
    /// A to-one into an entity with sub-entities: the destination row's key, its entity in
    /// the ``familyEntity`` column right after it (keys are counted per entity).
    case familyToOne(destination: Int32)
    /// The entity (index in the model) of the row the ``familyToOne`` column before it
    /// links to.
    case familyEntity
    /// A to-many kept in its row (as ``toMany``) into an entity with sub-entities: each
    /// linked row as its entity and key packed in one `bigint` (see
    /// ``EntityFamilyLinks/pack(_:)``), in the relationship's order.
    case familyToMany(destination: Int32)

    /// The column's SQL type.
    var sqlType: String {
        switch self {
        case .int16: "smallint"
        case .int32: "integer"
        case .int64, .toOne, .familyToOne: "bigint"
        case .familyEntity: "integer"
        // Dates are seconds since 2001-01-01 (Foundation's reference date) as a double, so
        // that every `Date` reads back bit for bit (`timestamptz` keeps microseconds only).
        case .double, .date: "double precision"
        case .float: "real"
        case .decimal: "numeric"
        case .string, .uri: "text"
        case .bool: "boolean"
        case .data: "bytea"
        case .uuid: "uuid"
        case .toMany, .familyToMany: "bigint[]"
        }
    }

    /// Whether values are floating point (NaN needs care in comparisons and sorts).
    var isFloating: Bool {
        switch self {
        case .double, .float, .date: true
        default: false
        }
    }
}

/// One stored property's column.
struct Column: Sendable {
    /// The property's index in its entity.
    let property: Int
    /// The property's name (the column's name).
    let name: String
    /// The property's name, quoted as an SQL identifier.
    let quoted: String
    let kind: ColumnKind
    /// Whether the attribute is indexed (or the column is a to-one, which is always indexed).
    let indexed: Bool
}

/// An entity's table: its name and columns, and the statements every read and write uses.
struct TableLayout: Sendable {
    /// The entity's index in the model (entities ordered by name).
    let entity: Int32
    let entityName: String
    /// The table, schema-qualified and quoted.
    let table: String
    /// The stored properties' columns, in property order (transient properties and derived
    /// to-many ends have none).
    let columns: [Column]
    /// The derived to-many ends (see ``LinkLayout``), in property order: read with a
    /// subquery after the columns, never written.
    let derived: [DerivedEnd]
    /// The derived end of each property (nil for the rest).
    let derivedOfProperty: [Int?]
    /// Whether some column holds strings (saves check those for U+0000).
    let hasStringColumns: Bool
    /// For each destination of a to-one into an entity family: the family's tables, which a
    /// key path through the to-one joins.
    let familyTables: [Int32: [FamilyTable]]
    /// The number of the entity's properties (stored rows hold one value per property).
    let propertyCount: Int
    /// The column of each property (nil for transient properties).
    let columnOfProperty: [Int?]
    /// `"_pk", "_version", …` for INSERT.
    let columnList: String
    /// The same for SELECT, in binary form: numerics and key lists cast to text (their
    /// binary forms are PostgreSQL's internal layouts), then each derived end's keys, for
    /// a query whose FROM names the table unaliased.
    let selectList: String

    /// The layouts of every entity of `model`, in entity order (entities sorted by name).
    /// Throws ``PostgreSQLStoreError`` `.unsupportedModel` for a property no store keeps.
    static func all(of model: NSManagedObjectModel, schema: String) throws(PostgreSQLStoreError) -> [TableLayout] {
        let sorted = model.entities.sorted { $0.name < $1.name }
        var entityIndex: [String: Int32] = [:]
        for (i, e) in sorted.enumerated() { entityIndex[e.name] = Int32(i) }
        return try sorted.enumerated().map { i, e throws(PostgreSQLStoreError) in
            try TableLayout(entity: e, index: Int32(i), schema: schema, entityIndex: entityIndex)
        }
    }

    init(entity: NSEntityDescription, index: Int32, schema: String, entityIndex: [String: Int32]) throws(PostgreSQLStoreError) {
        self.entity = index
        self.entityName = entity.name
        self.table = "\(quote(schema)).\(quote(entity.name))"
        var columns: [Column] = []
        var derived: [DerivedEnd] = []
        var derivedOfProperty: [Int: Int] = [:]
        var byProperty: [Int?] = []
        var familyTables: [Int32: [FamilyTable]] = [:]
        for (i, p) in entity.properties.enumerated() {
            if p.isTransient {
                byProperty.append(nil)
                continue
            }
            let kind: ColumnKind
            var indexed = false
            if let a = p as? NSAttributeDescription {
                indexed = a.isIndexed
                switch a.attributeType {
                case .integer16AttributeType: kind = .int16
                case .integer32AttributeType: kind = .int32
                case .integer64AttributeType: kind = .int64
                case .doubleAttributeType: kind = .double
                case .floatAttributeType: kind = .float
                case .decimalAttributeType: kind = .decimal
                case .stringAttributeType: kind = .string
                case .booleanAttributeType: kind = .bool
                case .dateAttributeType: kind = .date
                case .binaryDataAttributeType, .compositeAttributeType: kind = .data
                case .UUIDAttributeType: kind = .uuid
                case .URIAttributeType: kind = .uri
                default:
                    throw PostgreSQLStoreError(
                        .unsupportedModel, target: schema,
                        "attribute \(entity.name).\(a.name) has type \(a.attributeType), which no store keeps.")
                }
            } else if let r = p as? NSRelationshipDescription, let d = r.destinationEntity, let di = entityIndex[d.name] {
                if let end = Self.derivedEnd(
                    r, of: entity, index: index, property: i, destination: di, schema: schema, entityIndex: entityIndex)
                {
                    derivedOfProperty[i] = derived.count
                    derived.append(end)
                    byProperty.append(nil)
                    continue
                }
                if !r.isToMany, !d.subentities.isEmpty {
                    // Key and entity: the key alone would name a `Dog` as the `Animal` of
                    // the same key.
                    byProperty.append(columns.count)
                    let key = Column(property: i, name: p.name, quoted: quote(p.name), kind: .familyToOne(destination: di), indexed: true)
                    familyTables[di] = DerivedEnd.familyTables(of: d, schema: schema, entityIndex: entityIndex)
                    let entityColumn = EntityFamilyLinks.entityColumn(of: p.name)
                    columns.append(key)
                    columns.append(Column(property: i, name: entityColumn, quoted: quote(entityColumn), kind: .familyEntity, indexed: false))
                    continue
                }
                // A list into a family holds packed keys (entity and key in one `bigint`).
                let list: ColumnKind = d.subentities.isEmpty ? .toMany(destination: di) : .familyToMany(destination: di)
                kind = r.isToMany ? list : .toOne(destination: di)
                indexed = !r.isToMany
            } else {
                throw PostgreSQLStoreError(
                    .unsupportedModel, target: schema, "property \(entity.name).\(p.name) has no destination entity in the model.")
            }
            byProperty.append(columns.count)
            columns.append(Column(property: i, name: p.name, quoted: quote(p.name), kind: kind, indexed: indexed))
        }
        self.columns = columns
        self.derived = derived
        self.familyTables = familyTables
        self.derivedOfProperty = entity.properties.indices.map { derivedOfProperty[$0] }
        self.hasStringColumns = columns.contains { $0.kind == .string }
        self.columnOfProperty = byProperty
        self.propertyCount = entity.properties.count
        self.columnList = (["\"_pk\"", "\"_version\""] + columns.map(\.quoted)).joined(separator: ", ")
        self.selectList = Self.selectList(columns, derived: derived, alias: nil, table: table)
    }

    /// The select list for rows decoded by ``decodeRow(_:_:skip:)``, columns under `alias`
    /// (none: under the table's name, `table`).
    static func selectList(_ columns: [Column], derived: [DerivedEnd], alias: String?, table: String) -> String {
        let prefix = alias.map { $0 + "." } ?? ""
        let values = columns.map { c -> String in
            switch c.kind {
            case .decimal, .toMany, .familyToMany: "\(prefix)\(c.quoted)::text"
            default: prefix + c.quoted
            }
        }
        // The subquery names the outer row's key in full: unaliased, the table's own name.
        let key = (alias ?? table) + ".\"_pk\""
        let lists = derived.map { $0.keys(of: key) + "::text" }
        return (["\(prefix)\"_pk\"", "\(prefix)\"_version\""] + values + lists).joined(separator: ", ")
    }

    /// The end `r` (property `i` of `entity`) when it has no column (see ``LinkLayout``).
    private static func derivedEnd(
        _ r: NSRelationshipDescription, of entity: NSEntityDescription, index: Int32, property i: Int, destination di: Int32,
        schema: String, entityIndex: [String: Int32]
    ) -> DerivedEnd? {
        guard let d = r.destinationEntity, let inverse = r.inverseRelationship else { return nil }
        func joined(owner: NSRelationshipDescription, ownerEntity: String, owns: Bool) -> DerivedEnd {
            let name = LinkLayout.joinTableName(owner: owner.entity?.name ?? ownerEntity, relationship: owner.name)
            var end = DerivedEnd(
                property: i, name: r.name, destination: di, source: .join(owns: owns), table: "\(quote(schema)).\(quote(name))",
                tableName: name, match: owns ? "source" : "target", listed: owns ? "target" : "source")
            end.nameEntities(owner: owner, entity: index)
            return end
        }
        if LinkLayout.isJoined(r, of: entity) { return joined(owner: r, ownerEntity: entity.name, owns: true) }
        guard LinkLayout.isDerived(r, of: entity) else { return nil }
        if LinkLayout.isJoined(inverse, of: d) { return joined(owner: inverse, ownerEntity: d.name, owns: false) }
        var end = DerivedEnd(
            property: i, name: r.name, destination: di, source: inverse.isToMany ? .list : .key,
            table: "\(quote(schema)).\(quote(d.name))", tableName: d.name, match: inverse.name, listed: "_pk")
        // A list into this entity's family holds packed keys: its rows are found by theirs.
        if end.source == .list, inverse.destinationEntity?.subentities.isEmpty == false { end.packedEntity = index }
        end.family = DerivedEnd.familyTables(of: d, schema: schema, entityIndex: entityIndex)
        if end.source == .key {
            // The inverse is a to-one into this entity's family: its rows name the entity too.
            if inverse.destinationEntity?.subentities.isEmpty == false {
                end.matchEntityColumn = EntityFamilyLinks.entityColumn(of: inverse.name)
                end.matchEntity = index
            }
        }
        return end
    }

    /// The derived end of property `i`, or nil when it has a column, is not a relationship
    /// or is out of range.
    func derivedEnd(_ i: Int) -> DerivedEnd? {
        i >= 0 && i < derivedOfProperty.count ? derivedOfProperty[i].map { derived[$0] } : nil
    }

    /// The column of property `i`, or nil when it is transient or out of range.
    func column(_ i: Int) -> Column? {
        i >= 0 && i < columnOfProperty.count ? columnOfProperty[i].map { columns[$0] } : nil
    }

    /// The row at `index` of `result`, which selected ``selectList`` in binary form (after
    /// `skip` columns).
    func decodeRow(_ result: PostgreSQLResult, _ index: Int, skip: Int = 0) -> StoreRow {
        var values: [StoreValue] = []
        values.reserveCapacity(propertyCount)
        for p in 0..<propertyCount {
            if let c = columnOfProperty[p], case .familyToOne = columns[c].kind {
                values.append(EntityFamilyLinks.decodeReference(result, index, skip + 2 + c))
            } else if let c = columnOfProperty[p] {
                values.append(ValueCoding.decodeBinary(result, index, skip + 2 + c, columns[c].kind))
            } else if let k = derivedOfProperty[p], derived[k].listsEntities {
                values.append(DerivedEnd.familyReferences(result, index, skip + 2 + columns.count + k))
            } else if let k = derivedOfProperty[p] {
                let kind = ColumnKind.toMany(destination: derived[k].destination)
                values.append(ValueCoding.decodeBinary(result, index, skip + 2 + columns.count + k, kind))
            } else {
                values.append(.null)
            }
        }
        return StoreRow(
            id: StoreRowID(entity: entity, primaryKey: result.int64(index, skip)), version: result.int64(index, skip + 1),
            values: values)
    }
}

/// `name` as a quoted SQL identifier (an embedded quote doubled). Only names from the model
/// and the store's options are quoted this way; values always travel as parameters.
func quote(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
