import Foundation

/// What a stored row of each entity can hold: at most one value per property (a row may
/// end early: see `StoreRow.value(at:)`), each of a kind its property allows, references
/// naming the property's destination entity or one of its sub-entities.
///
/// Checksums prove that a record's bytes are the ones written, not that a save could have
/// written them. A record whose checksum was recomputed over a row moved to another entity,
/// or over a value whose tag was changed, passes every checksum; without these checks it was
/// read as an object with empty or mistyped values, and a count disagreed with the fetch.
/// Applying a record checks each row's value count; decoding a row checks each value's kind;
/// a save refuses a row that would fail either.
struct RowShapes: Sendable {
    /// One column: the value tags it admits and, for a relationship, the entities it names.
    struct Column: Sendable {
        /// Bit `t` set when tag `t` may stand in this column. Null always may (an optional
        /// value, a transient property, a derived end written as null).
        var tags: UInt16
        /// The destination entity of a relationship column; -1 for an attribute.
        var target: Int32
        /// The destination's sub-entities (and theirs), whose rows the column may name too:
        /// bit `i` for entity index `i` below 64; none for most relationships. Bits, not an
        /// array, so that a column stays a plain value: decoding copies a row's columns for
        /// every row it reads, and an array in each copy cost a retain and a release.
        var subTargetBits: UInt64 = 0
        /// Whether a sub-entity's index is 64 or more: the column then admits a reference to
        /// any entity (the reference's own row is still checked when it is read).
        var admitsAnyEntity = false
    }

    /// Per entity index: its columns, in property order.
    let columns: [[Column]]
    /// Per entity index: its number of columns.
    let valueCounts: [Int]

    init(model: NSManagedObjectModel) {
        typealias Tag = FileStoreFormat.Tag
        func bits(_ tags: Tag...) -> UInt16 { tags.reduce(1 << Tag.null.rawValue) { $0 | 1 << $1.rawValue } }
        let count = Int(model.entities.map(\.index).max() ?? -1) + 1
        var columns = [[Column]](repeating: [], count: count)
        for e in model.entities {
            columns[Int(e.index)] = e.properties.map { p in
                if p.isTransient { return Column(tags: bits(), target: -1) }
                if let r = p as? NSRelationshipDescription {
                    var column = Column(tags: bits(r.isToMany ? .references : .reference), target: r.destinationEntity?.index ?? -1)
                    for sub in r.destinationEntity?.selfAndDescendants.dropFirst() ?? [] {
                        if sub.index >= 0 && sub.index < 64 {
                            column.subTargetBits |= 1 << UInt64(sub.index)
                        } else {
                            column.admitsAnyEntity = true
                        }
                    }
                    return column
                }
                let type = (p as? NSAttributeDescription)?.attributeType ?? .undefinedAttributeType
                return Column(tags: Self.tags(for: type, bits), target: -1)
            }
        }
        self.columns = columns
        self.valueCounts = columns.map(\.count)
    }

    private static func tags(for type: NSAttributeType, _ bits: (FileStoreFormat.Tag...) -> UInt16) -> UInt16 {
        switch type {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType: bits(.integer)
        case .decimalAttributeType: bits(.decimal)
        case .doubleAttributeType: bits(.double)
        case .floatAttributeType: bits(.float)
        case .stringAttributeType: bits(.string)
        case .booleanAttributeType: bits(.boolFalse, .boolTrue)
        case .dateAttributeType: bits(.date)
        case .binaryDataAttributeType: bits(.data)
        case .UUIDAttributeType: bits(.uuid)
        case .URIAttributeType: bits(.uri)
        case .compositeAttributeType: bits(.data)  // see CompositeValueCoding
        case .transformableAttributeType: bits(.data)  // the transformer's bytes
        // Types validation refuses never reach a store: nothing is known of their values.
        case .undefinedAttributeType, .objectIDAttributeType: .max
        }
    }

    /// The columns of `entity`; none for an index the model does not have (no row of it can
    /// be stored: saves refuse it and applying a record reports it).
    @inline(__always)
    func shape(_ entity: Int32) -> [Column] {
        entity >= 0 && Int(entity) < columns.count ? columns[Int(entity)] : []
    }

    /// The number of entities.
    var entityCount: Int32 { Int32(columns.count) }
}

extension RowShapes.Column {
    /// Whether the value tag `raw` may stand in this column (an unknown tag is left to the
    /// decoder, which names it).
    @inline(__always)
    func admits(tag raw: UInt8) -> Bool { raw >= 16 || tags & (1 << UInt16(raw)) != 0 }

    /// Whether a reference in this column may name a row of `entity`.
    @inline(__always)
    func admits(entity: Int32) -> Bool {
        if entity == target { return true }
        if entity >= 0 && entity < 64 && subTargetBits & (1 << UInt64(entity)) != 0 { return true }
        return admitsAnyEntity && entity >= 0
    }

    /// Whether `value` may stand in this column: its kind, and the entity its references name.
    func admits(_ value: StoreValue) -> Bool {
        guard admits(tag: FileStoreFormat.tag(of: value)) else { return false }
        switch value {
        case let .reference(id): return admits(entity: id.entity)
        case let .references(ids): return ids.allSatisfy { admits(entity: $0.entity) }
        default: return true
        }
    }
}
