import Foundation
import Testing
@testable import PersistenceKit

/// Filtered scans judge conditions on the encoded rows (`RowMatcher`), numbers and dates
/// straight from their bytes; the answer must be the one `StoreValue.compare` gives for the
/// decoded value, for every operator.
@Suite("Filtered scans match conditions on encoded rows") struct ConditionMatchingTests {
    static let values: [StoreValue] = [
        .null, .integer(-5), .integer(0), .integer(7), .integer(.max), .double(-1.5), .double(0), .double(7),
        .double(.infinity), .double(.nan), .bool(true), .string("7"), .date(Date(timeIntervalSinceReferenceDate: 7)),
        .date(Date(timeIntervalSinceReferenceDate: -1)),
    ]
    static let operators: [StoreFilter.Condition.Operator] = [.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual]

    @Test(arguments: [0, 2])
    func encodedMatchingAgreesWithDecodedMatching(column: Int) throws {
        for value in Self.values {
            // A row whose `column` holds `value`, behind other columns to skip.
            var row = [StoreValue](repeating: .string("skip me"), count: 3)
            row[column] = value
            var writer = ByteWriter()
            FileStoreFormat.encode(row, into: &writer)
            let bytes = writer.bytes
            for constant in Self.values {
                for op in Self.operators {
                    let condition = StoreFilter.Condition(property: column, op, constant)
                    let fromBytes = try bytes.withBytes { buf throws(FileStoreError) -> Bool in
                        var r = ByteReader(buf, range: 0..<buf.count, path: "test")
                        return try RowMatcher(StoreFilter([condition])).matches(&r)
                    }
                    #expect(fromBytes == condition.matches(value: value), "\(value) \(op) \(constant)")
                }
            }
        }
    }

    @Test func aColumnPastTheRowsEndIsNull() throws {
        var writer = ByteWriter()
        FileStoreFormat.encode([.integer(1)], into: &writer)
        let bytes = writer.bytes
        let condition = StoreFilter.Condition(property: 3, .equal, .null)
        let matched = try bytes.withBytes { buf throws(FileStoreError) -> Bool in
            var r = ByteReader(buf, range: 0..<buf.count, path: "test")
            return try RowMatcher(StoreFilter([condition])).matches(&r)
        }
        #expect(matched)
    }

    /// A whole filter prepared as a `RowMatcher` gives the answer of `StoreFilter.matches` on
    /// the decoded row: random rows (some shorter than the filter's properties) and random
    /// filters of up to four conditions, several on one property, of every kind.
    @Test func rowMatcherAgreesWithDecodedFilter() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let row = (0..<Int.random(in: 0...4, using: &generator)).map { _ in Self.values.randomElement(using: &generator)! }
            let conditions = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                StoreFilter.Condition(
                    property: Int.random(in: 0...4, using: &generator), Self.operators.randomElement(using: &generator)!,
                    Self.values.randomElement(using: &generator)!)
            }
            let filter = StoreFilter(conditions)
            var writer = ByteWriter()
            FileStoreFormat.encode(row, into: &writer)
            let bytes = writer.bytes
            let matcher = RowMatcher(filter)
            let fromBytes = try bytes.withBytes { buf throws(FileStoreError) -> Bool in
                var r = ByteReader(buf, range: 0..<buf.count, path: "test")
                return try matcher.matches(&r)
            }
            let decoded = StoreRow(id: StoreRowID(entity: 0, primaryKey: 1), version: 1, values: row)
            #expect(fromBytes == filter.matches(decoded), "\(row) \(conditions)")
        }
    }
}
