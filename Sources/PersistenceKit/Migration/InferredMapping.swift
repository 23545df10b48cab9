import Foundation

/// How the rows of a store written with one model become rows of another, inferred from
/// the two models as Core Data's lightweight migration infers a mapping model.
///
/// An entity or property of the destination model is the source's of the same name, or the
/// one its ``NSEntityDescription/renamingIdentifier`` / ``NSPropertyDescription/renamingIdentifier``
/// names. What the source has and the destination lacks is dropped; what the destination
/// adds starts at its default value (an attribute) or empty (a relationship). Inferred:
/// integer widening (and narrowing when every stored value fits), integers and `Float` to
/// `Double` or `Decimal`, optional ↔ required (a stored `nil` takes the default value), to-one
/// ↔ to-many (a to-many holding several objects cannot become to-one), and any index or
/// constraint change. Anything else throws ``MigrationError`` at planning, before a row is
/// read.
struct InferredMapping {
    struct EntityMap {
        let source: NSEntityDescription
        let destination: NSEntityDescription
        /// For each destination property: the source property index, or `nil` for a new one.
        let columns: [Int?]
    }

    let source: NSManagedObjectModel
    let destination: NSManagedObjectModel
    /// One per destination entity that has a source entity.
    let entities: [EntityMap]
    /// Source entity index → destination entity index, for references.
    let entityIndex: [Int32: Int32]

    /// Plans the mapping; both models must be sealed.
    /// - Throws: ``MigrationError`` for a change lightweight migration does not infer.
    init(from source: NSManagedObjectModel, to destination: NSManagedObjectModel) throws(MigrationError) {
        self.source = source
        self.destination = destination
        let sourceByName = source.entitiesByName
        var maps: [EntityMap] = []
        var index: [Int32: Int32] = [:]
        var sourceFor: [ObjectIdentifier: NSEntityDescription] = [:]
        for d in destination.entities {
            guard let s = sourceByName[d.renamingIdentifier ?? d.name] ?? sourceByName[d.name] else { continue }
            sourceFor[ObjectIdentifier(d)] = s
            index[s.index] = d.index
        }
        for d in destination.entities {
            guard let s = sourceFor[ObjectIdentifier(d)] else { continue }
            var columns: [Int?] = []
            for p in d.properties {
                let wanted = p.renamingIdentifier ?? p.name
                let found = s.properties.firstIndex { $0.name == wanted } ?? s.properties.firstIndex { $0.name == p.name }
                guard let i = found, !p.isTransient, !s.properties[i].isTransient else {
                    columns.append(nil)
                    continue
                }
                try Self.check(s.properties[i], becomes: p, entity: d.name, sourceFor: sourceFor)
                columns.append(i)
            }
            maps.append(EntityMap(source: s, destination: d, columns: columns))
        }
        self.entities = maps
        self.entityIndex = index
    }

    /// Whether a store of `source` needs no rewrite to be read with `destination`.
    var isIdentity: Bool { source.layoutHash == destination.layoutHash }

    /// The entity numbering under which a store of `source`, numbering entities as `current`
    /// says (stored index → `source` index; `nil`: as `source` does), holds rows of
    /// `destination` without a rewrite: stored index → `destination` index, old entities
    /// keeping their stored indexes and new ones numbered after them, in name order. `nil`
    /// when the rows need a rewrite.
    ///
    /// No rewrite is needed when every entity is kept under its name (new entities may
    /// sort anywhere), each keeping its properties in place as they were stored (name,
    /// kind, type, optionality, destination) and only appending optional attributes without
    /// a default value and optional relationships whose inverses are new too, which old
    /// rows read as nil or empty; no uniqueness constraint changed (a new one would have to
    /// be checked against the stored rows). A removed entity needs a rewrite (its stored
    /// index would have no entity).
    func storedNumbering(current: EntityNumbering?) -> [Int32]? {
        guard entities.count == source.entities.count else { return nil }
        let sources = Dictionary(uniqueKeysWithValues: entities.map { (ObjectIdentifier($0.destination), $0.source) })
        for map in entities {
            let (s, d) = (map.source, map.destination)
            guard s.name == d.name, d.properties.count >= s.properties.count, s.uniqueColumns == d.uniqueColumns,
                s.isAbstract == d.isAbstract
            else { return nil }
            for (i, old) in s.properties.enumerated() {
                let new = d.properties[i]
                guard old.versionHashFields == new.versionHashFields else { return nil }
            }
            for new in d.properties[s.properties.count...] {
                if let r = new as? NSRelationshipDescription {
                    // A new relationship between a new end and a new end: no stored row holds
                    // a link of it, and old rows read it as nil or empty.
                    guard r.isOptional, let inverse = r.inverseRelationship, isNew(inverse, sources: sources) else { return nil }
                    continue
                }
                guard let a = new as? NSAttributeDescription, !(a is NSCompositeAttributeDescription),
                    a.isOptional || a.isTransient, a.defaultStoreValue?.isNull ?? false
                else { return nil }
            }
        }
        let old = current?.toModel ?? source.entities.map(\.index)
        guard old.count == source.entities.count else { return nil }
        var numbering: [Int32] = []
        numbering.reserveCapacity(destination.entities.count)
        for sourceIndex in old {
            guard let d = entityIndex[sourceIndex] else { return nil }
            numbering.append(d)
        }
        let kept = Set(entityIndex.values)
        for d in destination.entities where !kept.contains(d.index) { numbering.append(d.index) }
        return numbering
    }

    /// Whether destination property `p` has no stored values: its entity is new, or it
    /// comes after every property its entity had in `source`.
    private func isNew(_ p: NSPropertyDescription, sources: [ObjectIdentifier: NSEntityDescription]) -> Bool {
        guard let entity = p.entity else { return false }
        guard let old = sources[ObjectIdentifier(entity)] else { return true }
        guard let at = entity.properties.firstIndex(where: { $0 === p }) else { return false }
        return at >= old.properties.count
    }

    private static func check(
        _ old: NSPropertyDescription, becomes new: NSPropertyDescription, entity: String,
        sourceFor: [ObjectIdentifier: NSEntityDescription]
    ) throws(MigrationError) {
        switch (old, new) {
        case let (a as NSAttributeDescription, b as NSAttributeDescription):
            guard Self.converts(a.attributeType, to: b.attributeType) else {
                throw MigrationError(
                    .incompatibleType(from: a.attributeType, to: b.attributeType), entity: entity, property: new.name,
                    "a \(a.attributeType) attribute cannot become \(b.attributeType) in a lightweight migration; use a "
                        + "custom migration stage (NSCustomMigrationStage) that converts the values.")
            }
        case let (a as NSRelationshipDescription, b as NSRelationshipDescription):
            let expected = b.destinationEntity.flatMap { sourceFor[ObjectIdentifier($0)] }
            guard let oldDestination = a.destinationEntity, expected === oldDestination else {
                throw MigrationError(
                    .destinationChanged(from: a.destinationEntity?.name ?? "?", to: b.destinationEntity?.name ?? "?"),
                    entity: entity, property: new.name,
                    "the relationship now leads to another entity; keep its destination (renamed is fine), or add a new "
                        + "relationship and fill it in a custom migration stage.")
            }
        default:
            throw MigrationError(
                .kindChanged, entity: entity, property: new.name,
                "an attribute cannot become a relationship or the reverse; give the new property another name.")
        }
    }

    /// The type changes lightweight migration converts.
    static func converts(_ from: NSAttributeType, to: NSAttributeType) -> Bool {
        if from == to { return true }
        let integers: Set<NSAttributeType> = [.integer16AttributeType, .integer32AttributeType, .integer64AttributeType]
        if integers.contains(from) {
            return integers.contains(to) || to == .doubleAttributeType || to == .decimalAttributeType
        }
        return from == .floatAttributeType && (to == .doubleAttributeType || to == .decimalAttributeType)
    }

    /// The destination row for a source row.
    /// - Throws: ``MigrationError`` for a value the destination cannot hold.
    func map(_ row: StoreRow, with map: EntityMap) throws(MigrationError) -> StoreRow {
        var values: [StoreValue] = []
        values.reserveCapacity(map.columns.count)
        for (j, column) in map.columns.enumerated() {
            let property = map.destination.properties[j]
            let old = column.map { row.value(at: $0) } ?? .null
            values.append(try convert(old, into: property, pk: row.id.primaryKey, entity: map.destination.name))
        }
        let id = StoreRowID(entity: map.destination.index, primaryKey: row.id.primaryKey)
        return StoreRow(id: id, version: 1, values: values)
    }

    private func convert(_ value: StoreValue, into property: NSPropertyDescription, pk: Int64, entity: String) throws(MigrationError) -> StoreValue {
        if property.isTransient { return .null }
        if let r = property as? NSRelationshipDescription {
            var targets: [StoreRowID] = []
            switch value {
            case let .reference(id): targets = [id]
            case let .references(ids): targets = ids
            default: break
            }
            targets = targets.compactMap { t in entityIndex[t.entity].map { StoreRowID(entity: $0, primaryKey: t.primaryKey) } }
            if r.isToMany { return .references(targets) }
            guard targets.count <= 1 else {
                throw MigrationError(
                    .toManyHoldsSeveral(primaryKey: pk), entity: entity, property: r.name,
                    "object \(pk) holds \(targets.count) objects in this relationship, which is now to-one; empty it "
                        + "first, or move the objects in a custom migration stage.")
            }
            return targets.first.map(StoreValue.reference) ?? .null
        }
        guard let a = property as? NSAttributeDescription else { return value }
        if value.isNull {
            if let d = a.defaultStoreValue, !d.isNull { return d }
            if a.isOptional { return .null }
            throw MigrationError(
                .requiredWithoutDefault(primaryKey: pk), entity: entity, property: a.name,
                "object \(pk) has no value for this required attribute and it has no default value; give it a "
                    + "default value or keep it optional.")
        }
        switch (value, a.attributeType) {
        case let (.integer(i), .integer16AttributeType):
            guard Int16(exactly: i) != nil else { throw doesNotFit(pk, entity, a) }
            return value
        case let (.integer(i), .integer32AttributeType):
            guard Int32(exactly: i) != nil else { throw doesNotFit(pk, entity, a) }
            return value
        case let (.integer(i), .doubleAttributeType): return .double(Double(i))
        case let (.integer(i), .decimalAttributeType): return .decimal(Decimal(i))
        case let (.float(f), .doubleAttributeType): return .double(Double(f))
        case let (.float(f), .decimalAttributeType): return .decimal(Decimal(Double(f)))
        default: return value
        }
    }

    private func doesNotFit(_ pk: Int64, _ entity: String, _ a: NSAttributeDescription) -> MigrationError {
        MigrationError(
            .valueDoesNotFit(primaryKey: pk), entity: entity, property: a.name,
            "object \(pk) holds a value that does not fit \(a.attributeType); keep the wider type or change the value "
                + "in a custom migration stage first.")
    }
}
