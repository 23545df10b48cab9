import Foundation
import Testing
@testable import PersistenceKit

@Suite struct BatchUpdateTests {
    @Test(arguments: BatchStoreKind.allCases, [
        NSBatchUpdateRequestResultType.statusOnlyResultType, .updatedObjectsCountResultType, .updatedObjectIDsResultType,
    ])
    func updatesTheMatchingRows(_ kind: BatchStoreKind, _ resultType: NSBatchUpdateRequestResultType) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let ids = try BatchSupport.seedBooks(container, [("A", 100), ("B", 200), ("C", 300)])
        let request = NSBatchUpdateRequest(entityName: "Book")
        request.predicate = NSPredicate(format: "pages > %d", 150)
        request.propertiesToUpdate = ["title": "Long", "pages": 1]
        request.resultType = resultType
        let result = try #require(try BatchSupport.execute(request, on: container) as? NSBatchUpdateResult)
        #expect(result.resultType == resultType)
        switch resultType {
        case .statusOnlyResultType: #expect(result.result as? Bool == true)
        case .updatedObjectsCountResultType: #expect(result.result as? Int == 2)
        case .updatedObjectIDsResultType: #expect(result.result as? [NSManagedObjectID] == [ids[1], ids[2]])
        }
        #expect(try BatchSupport.books(container) == ["A:100", "Long:1", "Long:1"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func expressionsComputeFromEachRow(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        _ = try BatchSupport.seedBooks(container, [("A", 100), ("B", 200), ("C", 300)])
        let request = NSBatchUpdateRequest(entityName: "Book")
        request.setPredicate(#Predicate<Book> { $0.pages >= 200 })
        request.propertiesToUpdate = [
            "pages": NSExpression(
                forFunction: "add:to:",
                arguments: [
                    NSExpression(forFunction: "multiply:by:", arguments: [NSExpression(forKeyPath: "pages"), NSExpression(forConstantValue: 2)]),
                    NSExpression(forConstantValue: 1),
                ]),
            "title": NSExpression(forConstantValue: "X"),
        ]
        request.resultType = .updatedObjectsCountResultType
        #expect((try BatchSupport.execute(request, on: container) as? NSBatchUpdateResult)?.result as? Int == 2)
        #expect(try BatchSupport.books(container) == ["A:100", "X:401", "X:601"])
        // A floating-point product that is not whole does not fit an integer attribute.
        let fractional = NSBatchUpdateRequest(entityName: "Book")
        fractional.propertiesToUpdate = [
            "pages": NSExpression(forFunction: "multiply:by:", arguments: [NSExpression(forKeyPath: "pages"), NSExpression(forConstantValue: 1.5)])
        ]
        let error = try #require(throws: CoreDataError.self) { try BatchSupport.execute(fractional, on: container) }
        #expect(error.code == .managedObjectValidation && error.key == "pages" && error.objectID != nil)
        #expect(try BatchSupport.books(container) == ["A:100", "X:401", "X:601"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func badInputThrowsAndWritesNothing(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        _ = try BatchSupport.seedBooks(container, [("A", 100), ("B", Int64.max)])
        func failure(_ properties: [String: Any]?, predicate: NSPredicate? = nil) throws -> CoreDataError {
            let request = NSBatchUpdateRequest(entityName: "Book")
            request.propertiesToUpdate = properties
            request.predicate = predicate
            return try #require(throws: CoreDataError.self) { try BatchSupport.execute(request, on: container) }
        }
        let wrongType = try failure(["title": "ok", "pages": "many"])
        #expect(wrongType.code == .managedObjectValidation && wrongType.key == "pages" && wrongType.message.contains("'Book.pages'"))
        let unknown = try failure(["colour": 1])
        #expect(unknown.code == .managedObjectValidation && unknown.key == "colour")
        let relationship = try failure(["shelf": NSNull()])
        #expect(relationship.code == .managedObjectValidation && relationship.key == "shelf")
        let required = try failure(["title": NSNull()])
        #expect(required.code == .validationMissingMandatoryProperty && required.key == "title")
        let overflow = try failure([
            "title": "changed",
            "pages": NSExpression(forFunction: "add:to:", arguments: [NSExpression(forKeyPath: "pages"), NSExpression(forConstantValue: 1)]),
        ])
        #expect(overflow.code == .managedObjectValidation)
        #expect(try failure(nil).code == .coreData)
        let notInStore = NSBatchUpdateRequest(entityName: "Book")
        notInStore.setPredicate(#Predicate<Book> { $0.title.count > 0 })
        notInStore.propertiesToUpdate = ["title": "changed"]
        #expect(throws: CoreDataError.self) { try BatchSupport.execute(notInStore, on: container) }
        #expect(try BatchSupport.books(container) == ["A:100", "B:\(Int64.max)"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func aPredicateThroughARelationshipRunsInTheStore(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        _ = try Fixtures.seedShelfHoldingABook(container)
        _ = try BatchSupport.seedBooks(container, [("Loose", 5)])
        let request = NSBatchUpdateRequest(entityName: "Book")
        request.predicate = NSPredicate(format: "shelf.name == %@", "S")
        request.propertiesToUpdate = ["pages": 7]
        request.resultType = .updatedObjectsCountResultType
        #expect((try BatchSupport.execute(request, on: container) as? NSBatchUpdateResult)?.result as? Int == 1)
        #expect(try BatchSupport.books(container) == ["Loose:5", "X:7"])
    }
}
