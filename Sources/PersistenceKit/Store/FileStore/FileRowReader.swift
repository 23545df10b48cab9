import Foundation

/// Reads what a ``StorePredicate`` tests from the file store's rows in their encoded form:
/// only the values tested are decoded, rows reached through relationships are found in the
/// row tables, and derived to-many ends come from their in-memory lists.
///
/// Made per scan, under the store's lock, over a buffer and tables that do not change
/// during it.
struct FileRowReader: StoreRowReader {
    /// A row: its primary key and where its values are.
    struct Row {
        var pk: Int64
        var ref: FileStore.RowRef
    }

    let buf: UnsafeRawBufferPointer
    /// The file's entity numbering, for the references read (see EntityNumbering.swift).
    let numbering: EntityNumbering?
    let tables: [Int32: FileStore.Table]
    let derived: DerivedEnds
    let layout: DerivedEnds.Layout
    let shapes: RowShapes
    let path: String

    func value(_ column: Int, of row: Row, entity: Int32) throws(FileStoreError) -> StoreValue {
        if let end = layout.derivedColumns(entity).first(where: { $0.property == column }) {
            return .references(derived.lists[end.end][row.pk] ?? [])
        }
        var r = ByteReader(buf, range: row.ref.offset..<(row.ref.offset + row.ref.length), path: path, numbering: numbering)
        return try FileStoreFormat.decodeValue(at: column, &r)
    }

    func row(_ id: StoreRowID) -> Row? {
        guard let ref = tables[id.entity]?.rows[id.primaryKey] else { return nil }
        return Row(pk: id.primaryKey, ref: ref)
    }

    func text(_ column: Int, of row: Row, entity: Int32, passes test: PreparedText) throws(FileStoreError) -> Bool? {
        var r = ByteReader(buf, range: row.ref.offset..<(row.ref.offset + row.ref.length), path: path, numbering: numbering)
        let n = Int(try r.u16())
        guard column < n else { return nil }
        for _ in 0..<column { try FileStoreFormat.skipValue(&r) }
        guard try r.u8() == FileStoreFormat.Tag.string.rawValue else { return nil }
        let length = Int(try r.u32())
        return test.matches(utf8: try r.bytes(length))
    }

    func targets(_ column: Int, of row: Row, entity: Int32) throws(FileStoreError) -> [StoreRowID] {
        if case let .references(ids) = try value(column, of: row, entity: entity) { return ids }
        return []
    }

    /// Whether `row` satisfies `predicate`, with damage reported as the store reports it.
    func evaluate(_ predicate: PreparedStorePredicate, _ row: Row) throws(FileStoreError) -> Bool {
        do {
            return try predicate.evaluate(row, self)
        } catch let error as FileStoreError {
            throw error
        } catch {
            throw FileStoreError(.corrupt, path: path, "a row could not be read for a predicate: \(error)")
        }
    }
}

extension StorePredicate {
    /// Whether evaluating it reads rows other than the one tested (through a relationship).
    var readsOtherRows: Bool {
        switch self {
        case .constant: false
        case let .compare(path, _, _), let .oneOf(path, _), let .text(path, _): !path.through.isEmpty
        case let .and(parts), let .or(parts): parts.contains { $0.readsOtherRows }
        case let .not(inner): inner.readsOtherRows
        case .each, .count: true
        }
    }

    /// Whether evaluating it reads a to-many relationship's rows.
    var followsToMany: Bool {
        switch self {
        case .constant, .compare, .oneOf, .text: false
        case let .and(parts), let .or(parts): parts.contains { $0.followsToMany }
        case let .not(inner): inner.followsToMany
        case .each, .count: true
        }
    }
}
