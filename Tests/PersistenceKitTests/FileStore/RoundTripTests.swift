import Foundation
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

// A model of its own: every attribute type, optional and not, and every relationship cardinality.

final class FSAllTypes: NSManagedObject {
    @Attribute var key: String = ""
    @Attribute var i16: Int16 = 0
    @Attribute var i32: Int32 = 0
    @Attribute var i64: Int64 = 0
    @Attribute var int: Int = 0
    @Attribute var double: Double = 0
    @Attribute var float: Float = 0
    @Attribute var bool: Bool = false
    @Attribute var string: String = ""
    @Attribute var date: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var data: Data = Data()
    @Attribute var uuid: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Attribute var url: URL = URL(fileURLWithPath: "/")
    @Attribute var decimal: Decimal = 0
    @Attribute var oI16: Int16?
    @Attribute var oI32: Int32?
    @Attribute var oI64: Int64?
    @Attribute var oDouble: Double?
    @Attribute var oFloat: Float?
    @Attribute var oBool: Bool?
    @Attribute var oString: String?
    @Attribute var oDate: Date?
    @Attribute var oData: Data?
    @Attribute var oUUID: UUID?
    @Attribute var oURL: URL?
    @Attribute var oDecimal: Decimal?
}

final class FSPerson: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "owner", deleteRule: .cascadeDeleteRule) var passport: FSPassport?
    @Relationship(inverse: "members", deleteRule: .nullifyDeleteRule) var team: FSTeam?
    @Relationship(inverse: "students", deleteRule: .nullifyDeleteRule) var courses: Set<FSCourse>
}

final class FSPassport: NSManagedObject {
    @Attribute var number: String = ""
    @Relationship(inverse: "passport", deleteRule: .nullifyDeleteRule) var owner: FSPerson?
}

final class FSTeam: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "team", deleteRule: .nullifyDeleteRule) var members: Set<FSPerson>
}

final class FSCourse: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "courses", deleteRule: .nullifyDeleteRule) var students: Set<FSPerson>
}

@Suite("Every attribute type and relationship survives close and reopen") struct RoundTripTests {
    static func model() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [FSAllTypes.self, FSPerson.self, FSPassport.self, FSTeam.self, FSCourse.self])
    }

    /// Runs `body` on a fresh container of the store at `url`, then closes the store.
    static func withStore<T>(
        _ url: URL, model: NSManagedObjectModel? = nil, _ body: (NSManagedObjectContext) throws -> T
    ) throws -> T {
        let container = try FSSupport.container(at: url, model: try model ?? Self.model())
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        let result = try context.performAndWait { try body(context) }
        try FSSupport.close(container)
        return result
    }

    // MARK: Attributes

    struct Values: Equatable {
        var i16: Int16, i32: Int32, i64: Int64, int: Int, double: Double, float: Float, bool: Bool, string: String
        var date: Date, data: Data, uuid: UUID, url: URL, decimal: Decimal
        var oI16: Int16?, oI32: Int32?, oI64: Int64?, oDouble: Double?, oFloat: Float?, oBool: Bool?, oString: String?
        var oDate: Date?, oData: Data?, oUUID: UUID?, oURL: URL?, oDecimal: Decimal?

        init(_ o: FSAllTypes) {
            (i16, i32, i64, int, double, float, bool, string) = (o.i16, o.i32, o.i64, o.int, o.double, o.float, o.bool, o.string)
            (date, data, uuid, url, decimal) = (o.date, o.data, o.uuid, o.url, o.decimal)
            (oI16, oI32, oI64, oDouble, oFloat, oBool, oString) = (o.oI16, o.oI32, o.oI64, o.oDouble, o.oFloat, o.oBool, o.oString)
            (oDate, oData, oUUID, oURL, oDecimal) = (o.oDate, o.oData, o.oUUID, o.oURL, o.oDecimal)
        }
    }

    static func fill(_ o: FSAllTypes, variant: Int) {
        switch variant {
        case 0:  // largest values, every optional set
            o.i16 = .max; o.i32 = .max; o.i64 = .max; o.int = .max
            o.double = .greatestFiniteMagnitude; o.float = .greatestFiniteMagnitude; o.bool = true
            o.string = "naïve café — 日本語テキスト 🇺🇸👩‍👩‍👧 \u{0}tab\tnewline\n"
            o.date = Date(timeIntervalSinceReferenceDate: 1_234_567_890.123_456)
            o.data = Data((0...255).map { UInt8($0) })
            o.uuid = UUID()
            o.url = URL(string: "https://example.com:8080/a%20b/c?q=%C3%BC&x=1#frag")!
            o.decimal = Decimal(string: "123456789012345678901234567890.123456789", locale: Locale(identifier: "en_US_POSIX"))!
            o.oI16 = 7; o.oI32 = -7; o.oI64 = 1 << 40; o.oDouble = .pi; o.oFloat = .infinity; o.oBool = false
            o.oString = ""
            o.oDate = Date(timeIntervalSince1970: -1_000_000_000.5)
            o.oData = Data()
            o.oUUID = UUID()
            o.oURL = URL(fileURLWithPath: "/tmp/some folder/ü.txt")
            o.oDecimal = Decimal(string: "-0.000000000000000000000000000001", locale: Locale(identifier: "en_US_POSIX"))!
        case 1:  // smallest values, optionals nil
            o.i16 = .min; o.i32 = .min; o.i64 = .min; o.int = .min
            o.double = -.leastNonzeroMagnitude; o.float = -.infinity; o.bool = false
            o.string = String(repeating: "long ", count: 20_000)
            o.date = .distantPast
            o.data = Data(repeating: 0xAB, count: 100_000)
            o.uuid = UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))
            o.url = URL(string: "mailto:someone@example.com")!
            o.decimal = Decimal(-42)
        default:  // defaults everywhere; nil optionals
            break
        }
    }

    @Test func everyAttributeTypeSurvivesCloseAndReopen() throws {
        let folder = try TemporaryFolder()
        let saved: [String: Values] = try Self.withStore(folder.storeURL) { context in
            var result: [String: Values] = [:]
            for variant in 0..<3 {
                let o = FSAllTypes(context: context)
                o.key = "v\(variant)"
                Self.fill(o, variant: variant)
                result[o.key] = Values(o)
            }
            try context.save()
            return result
        }
        let loaded: [String: Values] = try Self.withStore(folder.storeURL) { context in
            Dictionary(uniqueKeysWithValues: try context.fetch(FSAllTypes.fetchRequest()).map { ($0.key, Values($0)) })
        }
        #expect(loaded.count == 3)
        for (key, value) in saved {
            #expect(loaded[key] == value, "\(key) changed across close and reopen")
        }
        #expect(loaded["v2"]?.oString == nil)
        #expect(loaded["v0"]?.oString == "")
        #expect(loaded["v0"]?.oData == Data())
        #expect(loaded["v1"]?.oBool == nil)
        #expect(loaded["v0"]?.oBool == false)

        // Setting optionals back to nil and changing values also survives.
        try Self.withStore(folder.storeURL) { context in
            let o = try #require(try context.fetch(FSAllTypes.fetchRequest()).first { $0.key == "v0" })
            o.oString = nil
            o.oDecimal = nil
            o.oData = nil
            o.i16 = -1
            try context.save()
        }
        let changed = try Self.withStore(folder.storeURL) { context in
            try context.fetch(FSAllTypes.fetchRequest()).first { $0.key == "v0" }.map(Values.init)
        }
        var expected = try #require(saved["v0"])
        expected.oString = nil
        expected.oDecimal = nil
        expected.oData = nil
        expected.i16 = -1
        #expect(changed == expected)
    }

    // MARK: Relationships

    struct Graph: Equatable {
        var passports: [String: String?] = [:]  // person → passport number
        var owners: [String: String?] = [:]  // passport → person
        var teams: [String: String?] = [:]  // person → team
        var members: [String: Set<String>] = [:]  // team → persons
        var courses: [String: Set<String>] = [:]  // person → courses
        var students: [String: Set<String>] = [:]  // course → persons

        init(_ context: NSManagedObjectContext) throws {
            for p in try context.fetch(FSPerson.fetchRequest()) {
                passports.updateValue(p.passport?.number, forKey: p.name)
                teams.updateValue(p.team?.name, forKey: p.name)
                courses[p.name] = Set(p.courses.map(\.title))
            }
            for x in try context.fetch(FSPassport.fetchRequest()) { owners.updateValue(x.owner?.name, forKey: x.number) }
            for t in try context.fetch(FSTeam.fetchRequest()) { members[t.name] = Set(t.members.map(\.name)) }
            for c in try context.fetch(FSCourse.fetchRequest()) { students[c.title] = Set(c.students.map(\.name)) }
        }
    }

    @Test func allRelationshipCardinalitiesSurviveCloseAndReopen() throws {
        let folder = try TemporaryFolder()
        let before = try Self.withStore(folder.storeURL) { context in
            let people = (0..<6).map { i in
                let p = FSPerson(context: context)
                p.name = "p\(i)"
                return p
            }
            for i in 0..<4 {  // one-to-one; p4 and p5 have none
                let x = FSPassport(context: context)
                x.number = "X\(i)"
                x.owner = people[i]
            }
            let red = FSTeam(context: context), blue = FSTeam(context: context), empty = FSTeam(context: context)
            (red.name, blue.name, empty.name) = ("red", "blue", "empty")
            for p in people[0..<3] { p.team = red }  // one-to-many, set from the to-one side
            blue.members = Set(people[3..<5])  // and from the to-many side; p5 has no team
            let courses = ["math", "art", "music", "none"].map { t in
                let c = FSCourse(context: context)
                c.title = t
                return c
            }
            for (i, p) in people.enumerated() {  // many-to-many
                p.courses = Set(courses[0..<3].enumerated().filter { j, _ in (i + j) % 2 == 0 }.map(\.element))
            }
            try context.save()
            return try Graph(context)
        }
        #expect(before.members["red"] == ["p0", "p1", "p2"])
        #expect(before.students["none"] == [])
        let after = try Self.withStore(folder.storeURL) { context in try Graph(context) }
        #expect(after == before)

        // Changes to every cardinality survive too: move, clear, and delete.
        let changed = try Self.withStore(folder.storeURL) { context in
            let people = Dictionary(uniqueKeysWithValues: try context.fetch(FSPerson.fetchRequest()).map { ($0.name, $0) })
            let passports = try context.fetch(FSPassport.fetchRequest())
            let x0 = try #require(passports.first { $0.number == "X0" })
            x0.owner = people["p5"]  // p0 loses its passport
            people["p1"]?.team = nil
            people["p2"]?.courses = []
            if let p3 = people["p3"] { context.delete(p3) }  // cascades to X3
            try context.save()
            return try Graph(context)
        }
        #expect(changed.passports["p5"] == .some("X0"))
        #expect(changed.owners["X3"] == nil, "X3 was deleted with p3")
        #expect(changed.owners["X0"] == .some("p5"))
        let reopened = try Self.withStore(folder.storeURL) { context in try Graph(context) }
        #expect(reopened == changed)
        #expect(reopened.members["red"] == ["p0", "p2"])
        #expect(reopened.members["blue"] == ["p4"])
        #expect(reopened.passports["p0"] == .some(nil))
    }

    // MARK: Awkward values

    /// `Decimal.nan` is written as "NaN", which `Decimal(string:)` refuses: it must read back
    /// as NaN, not make every fetch of the entity report damage.
    @Test func decimalNaNReadsBack() throws {
        let folder = try TemporaryFolder()
        try FSSupport.withItemStore(folder.storeURL) { c in
            let ok = FSItem(context: c)
            ok.key = 1
            ok.amount = 1
            try c.save()
            let nan = FSItem(context: c)
            nan.key = 2
            nan.amount = .nan
            try c.save()
        }
        let amounts = try FSSupport.withItemStore(folder.storeURL) { c in
            try c.fetch(FSItem.fetchRequest()).sorted { $0.key < $1.key }.map(\.amount)
        }
        #expect(amounts.count == 2)
        #expect(amounts.first == 1)
        #expect(amounts.last??.isNaN == true)
    }
}
