import Foundation
import Testing
@testable import PersistenceKit

@Suite struct BatchInsertTests {
    static var objects: [[String: Any]] {
        [
        ["title": "A", "pages": 100], ["title": "B", "pages": Int16(200)], ["title": "C"],
        ]
    }

    @Test(arguments: BatchStoreKind.allCases, [NSBatchInsertRequestResultType.statusOnly, .count, .objectIDs])
    func insertsDictionaries(_ kind: BatchStoreKind, _ resultType: NSBatchInsertRequestResultType) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let request = NSBatchInsertRequest(entityName: "Book", objects: Self.objects)
        request.resultType = resultType
        let result = try #require(try BatchSupport.execute(request, on: container) as? NSBatchInsertResult)
        #expect(result.resultType == resultType)
        switch resultType {
        case .statusOnly: #expect(result.result as? Bool == true)
        case .count: #expect(result.result as? Int == 3)
        case .objectIDs:
            let ids = try #require(result.result as? [NSManagedObjectID])
            #expect(ids.count == 3)
            #expect(ids.allSatisfy { $0.entity.name == "Book" && !$0.isTemporaryID })
            let ctx = container.newBackgroundContext()
            let titles = try ctx.performAndWait { try ids.map { try (ctx.existingObject(with: $0) as! Book).title } }
            #expect(titles == ["A", "B", "C"])
        }
        #expect(try BatchSupport.books(container) == ["A:100", "B:200", "C:0"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func handlersFillOneObjectPerCallUntilTheyStop(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        var n = 0
        let byDictionary = NSBatchInsertRequest(entityName: "Book") { (object: inout [String: Any]) in
            guard n < 3 else { return true }
            n += 1
            object["title"] = "D\(n)"
            object["pages"] = n * 10
            return false
        }
        byDictionary.resultType = .count
        #expect((try BatchSupport.execute(byDictionary, on: container) as? NSBatchInsertResult)?.result as? Int == 3)
        var m = 0
        let model = container.persistentStoreCoordinator.managedObjectModel
        let byObject = NSBatchInsertRequest(entity: model.entitiesByName["Book"]!) { (object: NSManagedObject) in
            guard m < 2 else { return true }
            m += 1
            (object as! Book).title = "O\(m)"
            (object as! Book).pages = Int64(m)
            return false
        }
        byObject.resultType = .count
        #expect((try BatchSupport.execute(byObject, on: container) as? NSBatchInsertResult)?.result as? Int == 2)
        #expect(try BatchSupport.books(container) == ["D1:10", "D2:20", "D3:30", "O1:1", "O2:2"])
    }

    /// The encoder reuses the previous dictionary's key order: dictionaries of other sizes,
    /// orders and key sets, and an unknown key after known ones, are read by name all the same.
    @Test(arguments: BatchStoreKind.allCases)
    func dictionariesOfDifferentKeysAndOrdersAreReadByName(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        var objects: [[String: Any]] = []
        var expected: [String] = []
        for i in 0..<30 {
            var o = [String: Any](minimumCapacity: i % 3 == 0 ? 1 : 40 * i)
            if i % 2 == 0 {
                o["pages"] = i
                o["title"] = "T\(100 + i)"
            } else {
                o["title"] = "T\(100 + i)"
                if i % 5 != 0 { o["pages"] = i }
            }
            objects.append(o)
            expected.append("T\(100 + i):\(o["pages"] == nil ? 0 : i)")
        }
        _ = try BatchSupport.execute(NSBatchInsertRequest(entityName: "Book", objects: objects), on: container)
        #expect(try BatchSupport.books(container) == expected.sorted())
        let error = try #require(throws: CoreDataError.self) {
            try BatchSupport.execute(
                NSBatchInsertRequest(entityName: "Book", objects: [["title": "A", "pages": 1], ["title": "B", "pages": 2, "colour": 3]]),
                on: container)
        }
        #expect(error.key == "colour")
        #expect(error.message.contains("object 1"))
        #expect(try BatchSupport.books(container).count == 30)
    }

    @Test(arguments: BatchStoreKind.allCases)
    func defaultsFillLeftOutAttributes(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        _ = try BatchSupport.execute(NSBatchInsertRequest(entityName: "Cover", objects: [[:], ["color": "red"]]), on: container)
        let ctx = container.newBackgroundContext()
        let colors = try ctx.performAndWait { try ctx.fetch(Cover.fetchRequest()).map(\.color).sorted() }
        #expect(colors == ["red", "white"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func aToOneTakesAnObjectIDAndTheOtherEndListsTheNewRows(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let (shelf, x) = try Fixtures.seedShelfHoldingABook(container)
        let request = NSBatchInsertRequest(entityName: "Book", objects: [["title": "Y", "shelf": shelf], ["title": "Z"]])
        request.resultType = .objectIDs
        let ids = try #require((try BatchSupport.execute(request, on: container) as? NSBatchInsertResult)?.result as? [NSManagedObjectID])
        let ctx = container.newBackgroundContext()
        try ctx.performAndWait {
            let s = try ctx.existingObject(with: shelf) as! Shelf
            #expect(Set(s.books.map(\.objectID)) == [x, ids[0]])
            #expect((try ctx.existingObject(with: ids[1]) as! Book).shelf == nil)
        }
    }

    @Test(arguments: BatchStoreKind.allCases)
    func badInputThrowsNamingEntityKeyAndObjectAndWritesNothing(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let cases: [([[String: Any]], String, CoreDataError.Code, String)] = [
            ([["title": "A"], ["title": "B", "colour": 1]], "colour", .managedObjectValidation, "object 1"),
            ([["title": "A"], ["title": "B"], ["pages": "many"]], "pages", .managedObjectValidation, "object 2"),
            ([["title": NSNull()]], "title", .validationMissingMandatoryProperty, "object 0"),
            ([["title": "A", "pages": 3.5]], "pages", .managedObjectValidation, "object 0"),
            ([["title": "A", "authors": [Any]()]], "authors", .managedObjectValidation, "object 0"),
        ]
        for (objects, key, code, place) in cases {
            let error = try #require(throws: CoreDataError.self) {
                try BatchSupport.execute(NSBatchInsertRequest(entityName: "Book", objects: objects), on: container)
            }
            #expect(error.code == code)
            #expect(error.key == key)
            #expect(error.message.contains("'Book"))
            #expect(error.message.contains(place))
        }
        #expect(try BatchSupport.books(container) == [])
        #expect(throws: CoreDataError.self) {
            try BatchSupport.execute(NSBatchInsertRequest(entityName: "Nothing", objects: [[:]]), on: container)
        }
    }

    @Test func theRowsSurviveAReopen() throws {
        let folder = try TemporaryFolder()
        do {
            let container = try BatchSupport.container(.file, in: folder)
            _ = try BatchSupport.execute(NSBatchInsertRequest(entityName: "Book", objects: Self.objects), on: container)
            try FSSupport.close(container)
        }
        let reopened = try BatchSupport.container(.file, in: folder)
        #expect(try BatchSupport.books(reopened) == ["A:100", "B:200", "C:0"])
        // Keys handed out by the batch insert are not handed out again.
        _ = try BatchSupport.seedBooks(reopened, [("D", 1)])
        #expect(try BatchSupport.books(reopened) == ["A:100", "B:200", "C:0", "D:1"])
    }
}
