import Foundation
import PersistenceKit

/// Store values to and from PostgreSQL's text forms (and raw bytes for `bytea`).
enum ValueCoding {
    /// `value` as the parameter for a column of `kind`, or nil when the value is not of a
    /// kind the column holds (the statement is then not translated).
    static func encode(_ value: StoreValue, _ kind: ColumnKind) -> SQLParameter? {
        switch (value, kind) {
        case (.null, _): return .null
        case let (.integer(v), .int16), let (.integer(v), .int32), let (.integer(v), .int64): return .text(String(v))
        case let (.integer(v), .double), let (.integer(v), .float): return .text(String(v))
        case let (.double(v), .double), let (.double(v), .float): return .text(text(v))
        case let (.float(v), .float), let (.float(v), .double): return .text(text(Double(v)))
        case let (.decimal(v), .decimal): return .text(v.description)
        case let (.integer(v), .decimal): return .text(String(v))
        case let (.string(s), .string): return .text(s)
        case let (.bool(b), .bool): return .text(b ? "t" : "f")
        case let (.date(d), .date): return .text(text(d.timeIntervalSinceReferenceDate))
        case let (.data(d), .data): return .binary(d)
        case let (.uuid(u), .uuid): return .text(u.uuidString)
        case let (.uri(u), .uri): return .text(u.absoluteString)
        case let (.reference(id), .toOne(destination)) where id.entity == destination: return .text(String(id.primaryKey))
        case let (.references(ids), .toMany): return .text(array(ids.map(\.primaryKey)))
        case let (.reference(id), .familyToOne): return .text(String(id.primaryKey))
        case let (.references(ids), .familyToMany):
            let packed = ids.compactMap(EntityFamilyLinks.pack)
            return packed.count == ids.count ? .text(array(packed)) : nil
        case let (.reference(id), .familyEntity): return .text(String(id.entity))
        default: return nil
        }
    }

    /// A double in PostgreSQL's input syntax (shortest form that reads back exactly).
    static func text(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "Infinity" : "-Infinity" }
        return "\(v)"
    }

    /// Integers as a PostgreSQL array literal.
    static func array(_ values: [Int64]) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }

    /// The value at (`row`, `column`) of `result`, for a column of `kind`.
    static func decode(_ result: PostgreSQLResult, _ row: Int, _ column: Int, _ kind: ColumnKind) -> StoreValue {
        if result.isNull(row, column) { return .null }
        switch kind {
        case .int16, .int32, .int64: return .integer(result.int64(row, column))
        case .double: return .double(double(result.text(row, column)))
        case .float: return .float(Float(double(result.text(row, column))))
        case .decimal: return .decimal(Decimal(string: result.text(row, column)) ?? .nan)
        case .string: return .string(result.text(row, column))
        case .bool: return .bool(result.withBytes(row, column) { $0.first == UInt8(ascii: "t") })
        case .date: return .date(Date(timeIntervalSinceReferenceDate: double(result.text(row, column))))
        case .data: return .data(result.withBytes(row, column) { hex($0) })
        case .uuid: return UUID(uuidString: result.text(row, column)).map(StoreValue.uuid) ?? .null
        case .uri: return URL(string: result.text(row, column)).map(StoreValue.uri) ?? .null
        case let .toOne(destination), let .familyToOne(destination):
            return .reference(StoreRowID(entity: destination, primaryKey: result.int64(row, column)))
        case .familyEntity: return .integer(result.int64(row, column))
        case .familyToMany: return .references(keys(result.text(row, column)).map(EntityFamilyLinks.unpack))
        case let .toMany(destination):
            return .references(keys(result.text(row, column)).map { StoreRowID(entity: destination, primaryKey: $0) })
        }
    }

    /// The value at (`row`, `column`) of a binary `result`, for a column of `kind` selected
    /// by ``TableLayout/selectList`` (numerics and key lists as text).
    static func decodeBinary(_ result: PostgreSQLResult, _ row: Int, _ column: Int, _ kind: ColumnKind) -> StoreValue {
        if result.isNull(row, column) { return .null }
        switch kind {
        case .int16, .int32, .int64: return .integer(result.int64(row, column))
        case .double: return .double(Double(bitPattern: result.bits64(row, column)))
        case .float: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: result.bits64(row, column))))
        case .decimal: return .decimal(Decimal(string: result.string(row, column)) ?? .nan)
        case .string: return .string(result.string(row, column))
        case .bool: return .bool(result.withBytes(row, column) { $0.first == 1 })
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: result.bits64(row, column))))
        case .data: return .data(result.withBytes(row, column) { Data($0) })
        case .uuid:
            return .uuid(
                result.withBytes(row, column) { b in
                    UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
                })
        case .uri: return URL(string: result.string(row, column)).map(StoreValue.uri) ?? .null
        case let .toOne(destination), let .familyToOne(destination):
            return .reference(StoreRowID(entity: destination, primaryKey: result.int64(row, column)))
        case .familyEntity: return .integer(result.int64(row, column))
        case .familyToMany: return .references(keys(result.string(row, column)).map(EntityFamilyLinks.unpack))
        case let .toMany(destination):
            return .references(keys(result.string(row, column)).map { StoreRowID(entity: destination, primaryKey: $0) })
        }
    }

    /// A double from PostgreSQL's output (`NaN`, `Infinity`, `-Infinity` or a number).
    static func double(_ s: String) -> Double {
        switch s {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: Double(s) ?? .nan
        }
    }

    /// The keys of a `bigint[]` in its text form (`{1,2,3}`).
    static func keys(_ s: String) -> [Int64] {
        s.utf8.split(whereSeparator: { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}") || $0 == UInt8(ascii: ",") })
            .compactMap { Int64(Substring($0)) }
    }

    /// Bytes from `bytea`'s hex output (`\x0a1b…`).
    static func hex(_ text: UnsafeRawBufferPointer) -> Data {
        guard text.count >= 2 else { return Data() }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: c - UInt8(ascii: "A") + 10
            }
        }
        var out = Data(capacity: (text.count - 2) / 2)
        var i = 2
        while i + 1 < text.count {
            out.append(nibble(text[i]) << 4 | nibble(text[i + 1]))
            i += 2
        }
        return out
    }
}
