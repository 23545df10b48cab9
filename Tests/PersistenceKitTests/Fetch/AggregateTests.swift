import Foundation
import Testing
@testable import PersistenceKit

@Suite struct AggregateTests {
    private static func sum(_ rows: [SaleRow], _ value: (SaleRow) -> Double) -> Double { rows.reduce(0) { $0 + value($1) } }

    @Test(arguments: ["memory", "file"])
    func eachAggregateOverAllRows(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        let rows = SalesFixture.rows
        let count = NSExpressionDescription(
            name: "n", expression: .function("count:", [.expressionForEvaluatedObject()]), resultType: .integer64AttributeType)
        request.propertiesToFetch = [
            count, aggregate("notes", "count:", "note"), aggregate("total", "sum:", "price"),
            aggregate("units", "sum:", "quantity"), aggregate("mean", "average:", "price"),
            aggregate("least", "min:", "quantity"), aggregate("most", "max:", "price"), aggregate("first", "min:", "product"),
        ]
        let results = try f.fetch(request)
        #expect(results.count == 1)
        let d = try #require(results.first)
        #expect(d["n"] as? Int == rows.count)
        #expect(d["notes"] as? Int == rows.filter { $0.note != nil }.count)
        #expect(d["total"] as? Double == Self.sum(rows, \.price))
        #expect(d["units"] as? Int64 == rows.reduce(0) { $0 + $1.quantity })
        #expect(d["mean"] as? Double == Self.sum(rows, \.price) / Double(rows.count))
        #expect(d["least"] as? Int64 == rows.map(\.quantity).min())
        #expect(d["most"] as? Double == rows.map(\.price).max())
        #expect(d["first"] as? String == rows.map(\.product).min())
    }

    @Test(arguments: ["memory", "file"])
    func aggregatesOverNoRows(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.setPredicate(#Predicate<Sale> { $0.quantity > 1000 })
        request.propertiesToFetch = [aggregate("n", "count:", "price"), aggregate("total", "sum:", "price"), aggregate("most", "max:", "price")]
        let results = try f.fetch(request)
        #expect(results.count == 1)
        #expect(results.first?["n"] as? Int == 0)
        #expect(results.first?["total"] == nil && results.first?["most"] == nil)
    }

    @Test(arguments: ["memory", "file"])
    func groupedByOneAttribute(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = [
            "product", aggregate("n", "count:", "product"), aggregate("total", "sum:", "price"),
            aggregate("mean", "average:", "price"), aggregate("least", "min:", "quantity"), aggregate("most", "max:", "quantity"),
        ]
        request.propertiesToGroupBy = ["product"]
        request.sortKeys = [SortKey("product")]
        let results = try f.fetch(request)
        let groups = Dictionary(grouping: SalesFixture.rows, by: \.product)
        #expect(results.map { $0["product"] as? String } == groups.keys.sorted())
        for d in results {
            let rows = try #require(groups[d["product"] as? String ?? ""])
            #expect(d["n"] as? Int == rows.count)
            #expect(d["total"] as? Double == Self.sum(rows, \.price))
            #expect(d["mean"] as? Double == Self.sum(rows, \.price) / Double(rows.count))
            #expect(d["least"] as? Int64 == rows.map(\.quantity).min())
            #expect(d["most"] as? Int64 == rows.map(\.quantity).max())
        }
    }

    @Test(arguments: ["memory", "file"])
    func groupedByTwoAttributes(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        let entity = try #require(f.container.managedObjectModel.entitiesByName["Sale"])
        let region = try #require(entity.attributesByName["region"])
        request.propertiesToFetch = ["product", region, aggregate("units", "sum:", "quantity")]
        request.propertiesToGroupBy = ["product", region]
        request.sortKeys = [SortKey("product"), SortKey("region")]
        let results = try f.fetch(request)
        struct Key: Hashable { var product: String, region: String }
        let groups = Dictionary(grouping: SalesFixture.rows) { Key(product: $0.product, region: $0.region) }
        let expected = groups.keys.sorted { ($0.product, $0.region) < ($1.product, $1.region) }
        #expect(results.map { Key(product: $0["product"] as? String ?? "", region: $0["region"] as? String ?? "") } == expected)
        for (d, k) in zip(results, expected) {
            #expect(d["units"] as? Int64 == groups[k]!.reduce(0) { $0 + $1.quantity })
        }
    }

    @Test(arguments: ["memory", "file"])
    func groupedByToOneRelationship(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["outlet", aggregate("n", "count:", "price")]
        request.propertiesToGroupBy = ["outlet"]
        let results = try f.fetch(request)
        var counts: [NSManagedObjectID?: Int] = [:]
        for d in results { counts[d["outlet"] as? NSManagedObjectID] = d["n"] as? Int }
        var expected: [NSManagedObjectID?: Int] = [:]
        for r in SalesFixture.rows { expected[r.outlet.flatMap { f.outlets[$0] }, default: 0] += 1 }
        #expect(counts == expected)
    }

    @Test(arguments: ["memory", "file"])
    func havingFiltersGroups(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["product", aggregate("units", "sum:", "quantity")]
        request.propertiesToGroupBy = ["product"]
        request.havingFilter = { ($0["units"] as? Int64 ?? 0) > 5 }
        request.sortKeys = [SortKey("units", ascending: false)]
        let results = try f.fetch(request)
        let units = Dictionary(grouping: SalesFixture.rows, by: \.product).mapValues { $0.reduce(Int64(0)) { $0 + $1.quantity } }
        let expected = units.filter { $0.value > 5 }.sorted { $0.value > $1.value }
        #expect(!expected.isEmpty && expected.count < units.count, "the filter keeps some groups, not all")
        #expect(results.map { $0["product"] as? String } == expected.map(\.key))
        #expect(results.map { $0["units"] as? Int64 } == expected.map(\.value))
    }

    /// The same groups through Core Data's spelling: a format predicate over each group's
    /// dictionary.
    @Test(arguments: ["memory", "file"])
    func havingPredicateFiltersGroupsByName(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["product", aggregate("units", "sum:", "quantity")]
        request.propertiesToGroupBy = ["product"]
        request.havingPredicate = NSPredicate(format: "units > %d", 5)
        request.sortKeys = [SortKey("units", ascending: false)]
        let results = try f.fetch(request)
        let units = Dictionary(grouping: SalesFixture.rows, by: \.product).mapValues { $0.reduce(Int64(0)) { $0 + $1.quantity } }
        let expected = units.filter { $0.value > 5 }.sorted { $0.value > $1.value }
        #expect(!expected.isEmpty && expected.count < units.count, "the filter keeps some groups, not all")
        #expect(results.map { $0["product"] as? String } == expected.map(\.key))
    }

    @Test(arguments: ["memory", "file"])
    func sortByAggregateWithLimit(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["region", aggregate("units", "sum:", "quantity")]
        request.propertiesToGroupBy = ["region"]
        request.sortKeys = [SortKey("units", ascending: false)]
        request.fetchLimit = 1
        let results = try f.fetch(request)
        let units = Dictionary(grouping: SalesFixture.rows, by: \.region).mapValues { $0.reduce(Int64(0)) { $0 + $1.quantity } }
        let top = units.max { $0.value < $1.value }!
        #expect(results.count == 1)
        #expect(results.first?["region"] as? String == top.key)
        #expect(results.first?["units"] as? Int64 == top.value)
    }

    @Test func resultTypeConvertsTheValue() throws {
        let f = try SalesFixture("memory")
        let request = SalesFixture.request()
        request.propertiesToFetch = [
            aggregate("units", "sum:", "quantity", .doubleAttributeType), aggregate("mean", "average:", "price", .integer64AttributeType),
            aggregate("exact", "sum:", "quantity", .decimalAttributeType),
        ]
        let d = try #require(try f.fetch(request).first)
        let rows = SalesFixture.rows
        #expect(d["units"] as? Double == Double(rows.reduce(0) { $0 + $1.quantity }))
        #expect(d["mean"] as? Int64 == Int64(Self.sum(rows, \.price) / Double(rows.count)))
        #expect(d["exact"] as? Decimal == Decimal(rows.reduce(0) { $0 + $1.quantity }))
    }

    @Test(arguments: ["memory", "file"])
    func ungroupedPropertyIsATypedError(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["product", "region", aggregate("n", "count:", "price")]
        request.propertiesToGroupBy = ["product"]
        let error = f.context.performAndWait { () -> CoreDataError? in
            do { _ = try f.context.fetch(request) } catch let e as CoreDataError { return e } catch { return nil }
            return nil
        }
        #expect(error?.code == .coreData)
        #expect(error?.key == "region")
        // Without a group-by, an aggregate groups all rows: a plain property is refused too.
        request.propertiesToGroupBy = nil
        #expect(throws: CoreDataError.self) { try f.fetch(request) }
    }

    @Test func unsupportedExpressionsAreTypedErrors() throws {
        let f = try SalesFixture("memory")
        let request = SalesFixture.request()
        request.propertiesToFetch = [aggregate("m", "median:", "price")]
        #expect(throws: CoreDataError.self) { try f.fetch(request) }
        request.propertiesToFetch = [NSExpressionDescription(name: "p", expression: NSExpression(forKeyPath: "price"))]
        #expect(throws: CoreDataError.self) { try f.fetch(request) }
        request.propertiesToFetch = [aggregate("s", "sum:", "outlet")]
        #expect(throws: CoreDataError.self) { try f.fetch(request) }
    }

    @Test func groupedFetchIgnoresUnsavedChanges() throws {
        let f = try SalesFixture("file")
        let ctx = f.context
        let request = SalesFixture.request()
        request.propertiesToFetch = [aggregate("n", "count:", "price"), aggregate("total", "sum:", "price")]
        let d = try ctx.performAndWait {
            let extra = Sale(context: ctx)
            extra.price = 1000
            return try ctx.fetch(request).first
        }
        #expect(d?["n"] as? Int == SalesFixture.rows.count)
        #expect(d?["total"] as? Double == Self.sum(SalesFixture.rows, \.price))
    }

    /// Core Data's spelling, and the description's accessors.
    @Test func expressionSpelling() {
        let e = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "price")])
        #expect(e == FetchExpression.function("sum:", [.keyPath("price")]))
        #expect(e.function == "sum:" && e.arguments?.first?.keyPath == "price" && e.keyPath == nil)
        #expect(e.description == "sum:(price)")
        let d = NSExpressionDescription(name: "total", expression: e, resultType: .doubleAttributeType)
        #expect(d.name == "total" && d.expression == e && d.expressionResultType == .doubleAttributeType)
    }
}
