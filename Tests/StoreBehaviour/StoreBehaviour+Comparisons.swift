import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    /// UUIDs whose byte order and text order agree.
    static func uuid(_ last: UInt8) -> UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last)) }

    /// Saves three `SBValues`, "k0" to "k2", with values of every type to compare and sort.
    static func seedComparable(_ container: NSPersistentContainer) async throws {
        try await inContext(container) { context in
            func add(
                _ key: String, i64: Int64, double: Double, float: Float, bool: Bool, date: TimeInterval, decimal: String,
                uuid: UInt8, url: String, data: [UInt8], oI64: Int64?
            ) throws {
                let v = SBValues(context: context)
                v.key = key
                v.i64 = i64
                v.double = double
                v.float = float
                v.bool = bool
                v.date = Date(timeIntervalSinceReferenceDate: date)
                v.decimal = try #require(Decimal(string: decimal))
                v.uuid = StoreBehaviour.uuid(uuid)
                v.url = try #require(URL(string: url))
                v.data = Data(data)
                v.oI64 = oI64
            }
            try add("k0", i64: -5, double: -1.5, float: 0.25, bool: false, date: 1000, decimal: "1.5", uuid: 1,
                url: "https://a.example/x", data: [1, 2], oI64: nil)
            try add("k1", i64: 0, double: 0, float: 2, bool: true, date: 2000, decimal: "10.25", uuid: 2,
                url: "https://b.example", data: [3], oI64: 7)
            try add("k2", i64: .max, double: 1e300, float: -2, bool: true, date: 3000, decimal: "-3", uuid: 3,
                url: "file:///tmp/c", data: [], oI64: -7)
            try context.save()
        }
    }

    /// Predicates on every attribute type (format and arguments) and the keys each selects
    /// from `seedComparable`.
    static func comparisonCases() -> [(String, [Any], [String])] {
        [
            ("i64 < 0", [], ["k0"]),
            ("i64 == %@", [NSNumber(value: Int64.max)], ["k2"]),
            ("i64 >= %@", [NSNumber(value: 0)], ["k1", "k2"]),
            ("double > 0.5", [], ["k2"]),
            ("double BETWEEN {-2, 0}", [], ["k0", "k1"]),
            ("float == 0.25", [], ["k0"]),
            ("float < 0", [], ["k2"]),
            ("bool == YES", [], ["k1", "k2"]),
            ("bool == NO", [], ["k0"]),
            ("date > %@", [Date(timeIntervalSinceReferenceDate: 1500)], ["k1", "k2"]),
            ("date == %@", [Date(timeIntervalSinceReferenceDate: 2000)], ["k1"]),
            ("decimal > %@", [Decimal(2)], ["k1"]),
            ("decimal < 0", [], ["k2"]),
            ("decimal == %@", [Decimal(string: "10.25") ?? 0], ["k1"]),
            ("uuid == %@", [uuid(2)], ["k1"]),
            ("uuid IN %@", [[uuid(1), uuid(3)]], ["k0", "k2"]),
            ("url == %@", [URL(string: "https://b.example") as Any], ["k1"]),
            ("data == %@", [Data([1, 2])], ["k0"]),
            ("oI64 == nil", [], ["k0"]),
            ("oI64 != nil", [], ["k1", "k2"]),
            ("oI64 > 0", [], ["k1"]),
            ("oI64 < 0 OR oI64 == nil", [], ["k0", "k2"]),
        ]
    }

    static func typedComparisons(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.values) { checked in
            try await seedComparable(try await checked.open())
            try await inContext(try await checked.reopen()) { context throws in
                for (format, arguments, expected) in comparisonCases() {
                    let request = NSFetchRequest<SBValues>(entityName: "SBValues")
                    request.predicate = NSPredicate(format: format, argumentArray: arguments)
                    #expect(try context.fetch(request).map(\.key).sorted() == expected, "\(format)")
                    #expect(try context.count(for: request) == expected.count, "count: \(format)")
                }
                func sorted(_ keys: [(String, Bool)]) throws -> [String] {
                    let request = NSFetchRequest<SBValues>(entityName: "SBValues")
                    request.sortDescriptors = keys.map { NSSortDescriptor(key: $0.0, ascending: $0.1) }
                    return try context.fetch(request).map(\.key)
                }
                #expect(try sorted([("decimal", true)]) == ["k2", "k0", "k1"])
                #expect(try sorted([("date", false)]) == ["k2", "k1", "k0"])
                #expect(try sorted([("float", true)]) == ["k2", "k0", "k1"])
                #expect(try sorted([("double", false)]) == ["k2", "k1", "k0"])
                #expect(try sorted([("uuid", true)]) == ["k0", "k1", "k2"])
                #expect(try sorted([("bool", true), ("i64", false)]) == ["k0", "k2", "k1"])
                // nil first ascending, last descending.
                #expect(try sorted([("oI64", true)]) == ["k0", "k2", "k1"])
                #expect(try sorted([("oI64", false)]) == ["k1", "k2", "k0"])
            }
        }
    }

    static func specialNumbers(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.values) { checked in
            try await inContext(try await checked.open()) { context in
                for (key, double, optional) in [("nan", Double.nan, Double?.some(.nan)), ("inf", .infinity, 1), ("neg", -1, 2), ("zero", 0, nil)] {
                    let v = SBValues(context: context)
                    v.key = key
                    v.double = double
                    v.oDouble = optional
                }
                try context.save()
            }
            try await inContext(try await checked.reopen()) { context throws in
                let stored = try all(SBValues.self, in: context, sortedBy: "key")
                #expect(stored.map(\.key) == ["inf", "nan", "neg", "zero"])
                #expect(stored.first { $0.key == "nan" }.map { $0.double.isNaN && ($0.oDouble?.isNaN ?? false) } == true)
                // NaN matches only `!=`; nil matches `!=` and no ordering.
                let cases: [(String, [Any], [String])] = [
                    ("double < 0", [], ["neg"]),
                    ("double > 0", [], ["inf"]),
                    ("double != 0", [], ["inf", "nan", "neg"]),
                    ("double == %@", [Double.nan], []),
                    ("oDouble != 1", [], ["nan", "neg", "zero"]),
                    ("oDouble < 5", [], ["inf", "neg"]),
                ]
                for (format, arguments, expected) in cases {
                    let request = NSFetchRequest<SBValues>(entityName: "SBValues")
                    request.predicate = NSPredicate(format: format, argumentArray: arguments)
                    #expect(try context.fetch(request).map(\.key).sorted() == expected, "\(format)")
                    #expect(try context.count(for: request) == expected.count, "count: \(format)")
                }
                // Ascending: nil, then NaN, then the numbers.
                for (key, expected) in [("double", ["nan", "neg", "zero", "inf"]), ("oDouble", ["zero", "nan", "inf", "neg"])] {
                    let request = NSFetchRequest<SBValues>(entityName: "SBValues")
                    request.sortDescriptors = [NSSortDescriptor(key: key, ascending: true)]
                    #expect(try context.fetch(request).map(\.key) == expected, "sorted by \(key)")
                }
            }
        }
    }

    static func structuredAttributes(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.places) { checked in
            try await inContext(try await checked.open()) { context in
                for (name, latitude, label, settings) in [
                    ("north", 60.5, "Oslo", SBSettings(retries: 3, tags: ["a", "b"])), ("middle", 45.25, nil, SBSettings()),
                    ("south", -33.75, "Hobart", nil),
                ] {
                    let place = SBPlace(context: context)
                    place.name = name
                    place.location = SBLocation(latitude: latitude, longitude: 10 - latitude, label: label)
                    place.corner = label == nil ? nil : SBLocation(latitude: 1, longitude: 2, label: "corner \(name)")
                    place.settings = settings
                }
                try context.save()
            }
            try await inContext(try await checked.reopen()) { context throws in
                let places = try all(SBPlace.self, in: context, sortedBy: "name")
                #expect(places.map(\.name) == ["middle", "north", "south"])
                let north = try #require(places.first { $0.name == "north" })
                #expect(north.location == SBLocation(latitude: 60.5, longitude: -50.5, label: "Oslo"))
                #expect(north.corner == SBLocation(latitude: 1, longitude: 2, label: "corner north"))
                #expect(north.settings == SBSettings(retries: 3, tags: ["a", "b"]))
                let middle = try #require(places.first { $0.name == "middle" })
                #expect(middle.location.label == nil)
                #expect(middle.corner == nil)
                #expect(middle.settings == SBSettings())
                #expect(places.first { $0.name == "south" }?.settings == nil)

                func names(_ format: String, sortedBy key: String = "name") throws -> [String] {
                    let request = NSFetchRequest<SBPlace>(entityName: "SBPlace")
                    request.predicate = NSPredicate(format: format)
                    request.sortDescriptors = [NSSortDescriptor(key: key, ascending: true)]
                    return try context.fetch(request).map(\.name)
                }
                #expect(try names("location.latitude > 0") == ["middle", "north"])
                #expect(try names("location.label == nil") == ["middle"])
                #expect(try names("location.label BEGINSWITH[c] 'os'") == ["north"])
                #expect(try names("TRUEPREDICATE", sortedBy: "location.latitude") == ["south", "middle", "north"])
            }
        }
    }
}
