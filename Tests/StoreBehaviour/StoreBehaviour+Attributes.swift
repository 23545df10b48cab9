import Foundation
import PersistenceKit
import Testing

/// The values of one `SBValues` object, compared whole so that a failure names every field.
struct ValueRecord: Sendable, Equatable {
    var key: String
    var i16: Int16, i32: Int32, i64: Int64, int: Int
    var double: Double, float: Float, bool: Bool, string: String
    var date: Date, data: Data, uuid: UUID, url: URL, decimal: Decimal
    var oI16: Int16?, oI32: Int32?, oI64: Int64?
    var oDouble: Double?, oFloat: Float?, oBool: Bool?, oString: String?
    var oDate: Date?, oData: Data?, oUUID: UUID?, oURL: URL?, oDecimal: Decimal?

    init(_ o: SBValues) {
        key = o.key
        i16 = o.i16; i32 = o.i32; i64 = o.i64; int = o.int
        double = o.double; float = o.float; bool = o.bool; string = o.string
        date = o.date; data = o.data; uuid = o.uuid; url = o.url; decimal = o.decimal
        oI16 = o.oI16; oI32 = o.oI32; oI64 = o.oI64
        oDouble = o.oDouble; oFloat = o.oFloat; oBool = o.oBool; oString = o.oString
        oDate = o.oDate; oData = o.oData; oUUID = o.oUUID; oURL = o.oURL; oDecimal = o.oDecimal
    }

    func write(to o: SBValues) {
        o.key = key
        o.i16 = i16; o.i32 = i32; o.i64 = i64; o.int = int
        o.double = double; o.float = float; o.bool = bool; o.string = string
        o.date = date; o.data = data; o.uuid = uuid; o.url = url; o.decimal = decimal
        o.oI16 = oI16; o.oI32 = oI32; o.oI64 = oI64
        o.oDouble = oDouble; o.oFloat = oFloat; o.oBool = oBool; o.oString = oString
        o.oDate = oDate; o.oData = oData; o.oUUID = oUUID; o.oURL = oURL; o.oDecimal = oDecimal
    }

    /// The largest values, and text and bytes that quoting or escaping would break.
    static let highest: ValueRecord = {
        var r = ValueRecord(key: "highest")
        r.i16 = .max; r.i32 = .max; r.i64 = .max; r.int = .max
        r.double = .greatestFiniteMagnitude; r.float = .greatestFiniteMagnitude; r.bool = true
        r.string = "naïve 🐘 e\u{301} 'quoted' \"double\" \\ back\nslash\ttab $1 %_"
        r.date = Date(timeIntervalSinceReferenceDate: 123_456.789_012_345_6)
        r.data = Data((0...255).map { UInt8($0) })
        r.uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        r.url = URL(string: "https://example.com/a%20b?c=d&e=%27#f")!
        r.decimal = Decimal(string: "12345678901234567890.123456789")!
        r.oI16 = .max; r.oI32 = .max; r.oI64 = .max
        r.oDouble = .infinity; r.oFloat = .infinity; r.oBool = true; r.oString = "∑ optional"
        r.oDate = .distantFuture; r.oData = Data([0, 0xFF, 0, 0x27, 0x5C]); r.oUUID = UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")
        r.oURL = URL(fileURLWithPath: "/tmp/with space/ü.txt"); r.oDecimal = Decimal(string: "99999999999999999999999999999999999999")!
        return r
    }()

    /// The smallest values; zero, false and empty in the optionals, which are not nil.
    static let lowest: ValueRecord = {
        var r = ValueRecord(key: "lowest")
        r.i16 = .min; r.i32 = .min; r.i64 = .min; r.int = .min
        r.double = -.leastNonzeroMagnitude; r.float = -.leastNonzeroMagnitude; r.bool = false
        r.string = ""
        r.date = Date(timeIntervalSinceReferenceDate: -1_000_000_000.25)
        r.data = Data()
        r.uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        r.url = URL(string: "urn:isbn:0451450523")!
        r.decimal = Decimal(string: "-0.000000000000000000001")!
        r.oI16 = 0; r.oI32 = 0; r.oI64 = 0
        r.oDouble = -.infinity; r.oFloat = 0; r.oBool = false; r.oString = ""
        r.oDate = .distantPast; r.oData = Data(); r.oUUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        r.oURL = URL(string: "https://example.com")!; r.oDecimal = 0
        return r
    }()

    /// The defaults, every optional nil.
    static let defaults = ValueRecord(key: "defaults")

    private init(key: String) {
        self.key = key
        i16 = 0; i32 = 0; i64 = 0; int = 0
        double = 0; float = 0; bool = false; string = ""
        date = Date(timeIntervalSinceReferenceDate: 0); data = Data()
        uuid = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)); url = URL(fileURLWithPath: "/"); decimal = 0
    }
}

extension StoreBehaviour {
    static func attributeTypes(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.values) { checked in
            let container = try await checked.open()
            let records = [ValueRecord.highest, .lowest, .defaults]
            try await inContext(container) { context in
                for record in records where record.key != "defaults" { record.write(to: SBValues(context: context)) }
                SBValues(context: context).key = "defaults"
                try context.save()
            }
            let stored = try await inContext(try await checked.reopen()) { context in
                try all(SBValues.self, in: context, sortedBy: "key").map(ValueRecord.init)
            }
            #expect(stored.map(\.key) == ["defaults", "highest", "lowest"])
            for record in records {
                #expect(stored.first { $0.key == record.key } == record)
            }

            // A megabyte of text (multi-byte characters) and of bytes.
            let text = String(repeating: "é🐘a", count: 1 << 17)
            let bytes = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try await inContext(try await checked.reopen()) { context in
                let large = SBValues(context: context)
                large.key = "large"
                large.string = text
                large.oData = bytes
                try context.save()
            }
            let (readText, readBytes) = try await inContext(try await checked.reopen()) { context in
                let large = try #require(try all(SBValues.self, in: context).first { $0.key == "large" })
                return (large.string, large.oData)
            }
            #expect(readText == text, "a large string changed (\(readText.utf8.count) of \(text.utf8.count) bytes read)")
            #expect(readBytes == bytes, "large data changed (\(readBytes?.count ?? -1) of \(bytes.count) bytes read)")

            // Setting every optional to nil and every value to another one is saved too.
            let reopened = try await checked.reopen()
            try await inContext(reopened) { context in
                for o in try all(SBValues.self, in: context) where o.key == "highest" {
                    var swapped = ValueRecord.defaults
                    swapped.key = "highest"
                    swapped.write(to: o)
                }
                try context.save()
            }
            let cleared = try await inContext(try await checked.reopen()) { context in
                try all(SBValues.self, in: context).map(ValueRecord.init).first { $0.key == "highest" }
            }
            var expected = ValueRecord.defaults
            expected.key = "highest"
            #expect(cleared == expected)
        }
    }

    static func controlCharacters(_ store: some StoreUnderTest) async throws {
        // Every C0 control character (NUL first) and DEL, inside text, at its ends, and alone.
        let controls = String(String.UnicodeScalarView((UInt8(0)..<32).map(Unicode.Scalar.init) + [Unicode.Scalar(UInt8(127))]))
        let texts = ["a\u{0}b", "\u{0}", "\u{0}lead", "trail\u{0}", controls, "tab\tnew\nline\rreturn"]
        try await withStore(store, BehaviourModels.values) { checked in
            try await inContext(try await checked.open()) { context in
                for (i, text) in texts.enumerated() {
                    let values = SBValues(context: context)
                    values.key = "\(i)"
                    values.string = text
                    values.oString = text
                }
                try context.save()
            }
            let stored = try await inContext(try await checked.reopen()) { context in
                try all(SBValues.self, in: context, sortedBy: "key").map { [$0.string, $0.oString ?? "nil"] }
            }
            #expect(stored == texts.map { [$0, $0] })
            let matched = try await inContext(try await checked.reopen()) { context in
                let request = NSFetchRequest<SBValues>(entityName: "SBValues")
                request.predicate = NSPredicate(format: "string == %@", "a\u{0}b")
                return try context.fetch(request).map(\.key)
            }
            #expect(matched == ["0"])
        }
    }
}
