import Foundation
import Testing
@testable import PersistenceKit

@Suite struct DictionaryResultTests {
    @Test(arguments: ["memory", "file"])
    func everyAttributeWithoutPropertiesToFetch(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.sortKeys = [SortKey("price")]
        let results = try f.fetch(request)
        let expected = SalesFixture.rows.sorted { $0.price < $1.price }
        #expect(results.count == expected.count)
        for (d, r) in zip(results, expected) {
            #expect(d["product"] as? String == r.product)
            #expect(d["region"] as? String == r.region)
            #expect(d["price"] as? Double == r.price)
            #expect(d["quantity"] as? Int == Int(r.quantity))
            #expect(d["note"] as? String == r.note)
            #expect(d["outlet"] == nil, "relationships are fetched only when named")
            #expect(d.count == (r.note == nil ? 4 : 5), "a nil value has no key")
        }
    }

    @Test(arguments: ["memory", "file"])
    func namedPropertiesAndToOneAsObjectID(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        let entity = try #require(f.container.managedObjectModel.entitiesByName["Sale"])
        let outlet = try #require(entity.relationshipsByName["outlet"])
        request.propertiesToFetch = ["product", entity.attributesByName["quantity"]!, outlet]
        request.sortKeys = [SortKey("quantity")]
        let results = try f.fetch(request)
        let expected = SalesFixture.rows.sorted { $0.quantity < $1.quantity }
        #expect(results.map { $0["product"] as? String } == expected.map(\.product))
        for (d, r) in zip(results, expected) {
            #expect(d.count == (r.outlet == nil ? 2 : 3))
            #expect(d["outlet"] as? NSManagedObjectID == r.outlet.flatMap { f.outlets[$0] })
            #expect(d["price"] == nil)
        }
        // The ID leads to the object.
        let first = try #require(results.first(where: { $0["outlet"] != nil })?["outlet"] as? NSManagedObjectID)
        let name = f.context.performAndWait { (f.context.object(with: first) as? Outlet)?.name }
        #expect(name == "A" || name == "B")
    }

    @Test(arguments: ["memory", "file"])
    func distinctResults(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["product"]
        request.returnsDistinctResults = true
        request.sortKeys = [SortKey("product", ascending: false)]
        let products = try f.fetch(request).map { $0["product"] as? String }
        #expect(products == Array(Set(SalesFixture.rows.map(\.product))).sorted(by: >))
    }

    @Test(arguments: ["memory", "file"])
    func sortOffsetAndLimitApplyToDictionaries(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["product", "price"]
        request.sortKeys = [SortKey("quantity", ascending: false)]  // an attribute not fetched
        request.fetchOffset = 1
        request.fetchLimit = 2
        let results = try f.fetch(request)
        let expected = Array(SalesFixture.rows.sorted { $0.quantity > $1.quantity }.dropFirst(1).prefix(2))
        #expect(results.map { $0["price"] as? Double } == expected.map(\.price))
        #expect(results.allSatisfy { $0["quantity"] == nil })
    }

    @Test(arguments: ["memory", "file"])
    func sortDescriptorByKeyPath(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.propertiesToFetch = ["price"]
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Sale.price, ascending: false)]
        let prices = try f.fetch(request).compactMap { $0["price"] as? Double }
        #expect(prices == SalesFixture.rows.map(\.price).sorted(by: >))
    }

    @Test(arguments: ["memory", "file"])
    func predicateTheStoreRuns(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.setPredicate(#Predicate<Sale> { $0.region == "north" && $0.quantity > 1 })
        request.propertiesToFetch = ["quantity"]
        request.sortKeys = [SortKey("quantity")]
        let quantities = try f.fetch(request).compactMap { $0["quantity"] as? Int64 }
        #expect(quantities == SalesFixture.rows.filter { $0.region == "north" && $0.quantity > 1 }.map(\.quantity).sorted())
    }

    @Test(arguments: ["memory", "file"])
    func predicateRunOnObjects(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = SalesFixture.request()
        request.setPredicate(#Predicate<Sale> { $0.isExpensive })
        request.propertiesToFetch = ["price"]
        request.sortKeys = [SortKey("price")]
        let prices = try f.fetch(request).compactMap { $0["price"] as? Double }
        #expect(prices == SalesFixture.rows.map(\.price).filter { $0 > 2 }.sorted())
    }

    /// As in Core Data, a dictionary fetch reads the store: unsaved inserts, changes and
    /// deletes are not seen, even with `includesPendingChanges`.
    @Test(arguments: ["memory", "file"])
    func unsavedChangesAreNotSeen(kind: String) throws {
        let f = try SalesFixture(kind)
        let ctx = f.context
        let request = SalesFixture.request()
        request.propertiesToFetch = ["price"]
        request.sortKeys = [SortKey("price")]
        request.includesPendingChanges = true
        let prices = try ctx.performAndWait {
            let extra = Sale(context: ctx)
            extra.product = "fig"
            extra.price = 99
            let all = Sale.fetchRequest()
            let sales = try ctx.fetch(all)
            sales.first { $0.price == 1.5 }?.price = 50
            if let plum = sales.first(where: { $0.product == "plum" }) { ctx.delete(plum) }
            #expect(ctx.hasChanges)
            return try ctx.fetch(request).compactMap { $0["price"] as? Double }
        }
        #expect(prices == SalesFixture.rows.map(\.price).sorted())
    }

    @Test(arguments: ["memory", "file"])
    func swiftDictionariesToo(kind: String) throws {
        let f = try SalesFixture(kind)
        let request = NSFetchRequest<[String: Any]>(entityName: "Sale")
        request.resultType = .dictionaryResultType
        request.propertiesToFetch = ["product"]
        request.sortKeys = [SortKey("product")]
        let typed = try f.context.performAndWait { try f.context.fetch(request) }
        #expect(typed.map { $0["product"] as? String } == SalesFixture.rows.map(\.product).sorted())
        let plain = Sale.fetchRequest()
        plain.propertiesToFetch = ["region"]
        plain.returnsDistinctResults = true
        plain.sortKeys = [SortKey("region")]
        let regions = try f.context.performAndWait { try f.context.fetchDictionaries(plain) }
        #expect(regions.map { $0["region"] as? String } == ["north", "south"])
    }

    @Test func untypedRequestGetsNSDictionaries() throws {
        let f = try SalesFixture("memory")
        let request = NSFetchRequest<any NSFetchRequestResult>(entityName: "Sale")
        request.resultType = .dictionaryResultType
        request.propertiesToFetch = ["product"]
        let results = try f.context.performAndWait { try f.context.fetch(request) }
        #expect(results.count == SalesFixture.rows.count)
        #expect(results.allSatisfy { $0 is NSDictionary })
    }

    @Test func wrongResultClassIsATypedError() throws {
        let f = try SalesFixture("memory")
        let request = NSFetchRequest<NSNumber>(entityName: "Sale")
        request.resultType = .dictionaryResultType
        #expect(throws: CoreDataError.self) { try f.context.performAndWait { try f.context.fetch(request) } }
    }

    @Test func toManyRelationshipAndUnknownNamesAreTypedErrors() throws {
        let f = try SalesFixture("memory")
        let outlets = NSFetchRequest<NSDictionary>(entityName: "Outlet")
        outlets.resultType = .dictionaryResultType
        outlets.propertiesToFetch = ["sales"]
        let toMany = try f.context.performAndWait { () -> CoreDataError? in
            do { _ = try f.context.fetch(outlets) } catch let e as CoreDataError { return e }
            return nil
        }
        #expect(toMany?.code == .coreData && toMany?.key == "sales")
        let request = SalesFixture.request()
        request.propertiesToFetch = ["colour"]
        #expect(throws: CoreDataError.self) { try f.fetch(request) }
    }
}
