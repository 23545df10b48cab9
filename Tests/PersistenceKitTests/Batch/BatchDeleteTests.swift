import Foundation
import Testing
@testable import PersistenceKit

@Suite struct BatchDeleteTests {
    @Test(arguments: BatchStoreKind.allCases, [
        NSBatchDeleteRequestResultType.resultTypeStatusOnly, .resultTypeCount, .resultTypeObjectIDs,
    ])
    func deletesTheRowsAFetchRequestMatches(_ kind: BatchStoreKind, _ resultType: NSBatchDeleteRequestResultType) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let ids = try BatchSupport.seedBooks(container, [("A", 100), ("B", 200), ("C", 300)])
        let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Book")
        fetch.predicate = NSPredicate(format: "pages < 250")
        let request = NSBatchDeleteRequest(fetchRequest: fetch)
        request.resultType = resultType
        let result = try #require(try BatchSupport.execute(request, on: container) as? NSBatchDeleteResult)
        #expect(result.resultType == resultType)
        switch resultType {
        case .resultTypeStatusOnly: #expect(result.result as? Bool == true)
        case .resultTypeCount: #expect(result.result as? Int == 2)
        case .resultTypeObjectIDs: #expect(result.result as? [NSManagedObjectID] == [ids[0], ids[1]])
        }
        #expect(try BatchSupport.books(container) == ["C:300"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func deletesRowsByIDAndSkipsRowsAlreadyGone(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let ids = try BatchSupport.seedBooks(container, [("A", 100), ("B", 200), ("C", 300)])
        try Fixtures.deleteInAnotherContext(ids[2], in: container)
        let request = NSBatchDeleteRequest(objectIDs: [ids[2], ids[0], ids[0]])
        request.resultType = .resultTypeObjectIDs
        #expect((try BatchSupport.execute(request, on: container) as? NSBatchDeleteResult)?.result as? [NSManagedObjectID] == [ids[0]])
        #expect(try BatchSupport.books(container) == ["B:200"])
        let (shelf, _) = try Fixtures.seedShelfHoldingABook(container)
        let mixed = try #require(throws: CoreDataError.self) {
            try BatchSupport.execute(NSBatchDeleteRequest(objectIDs: [ids[1], shelf]), on: container)
        }
        #expect(mixed.code == .coreData)
        #expect(try BatchSupport.books(container) == ["B:200", "X:0"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func theOtherEndsNoLongerListDeletedRowsAfterAReopenToo(_ kind: BatchStoreKind) async throws {
        let folder = try TemporaryFolder()
        var container: NSPersistentContainer? = try BatchSupport.container(kind, in: folder)
        let seeded = try await Fixtures.seedShelf(container!)
        let seed = container!.newBackgroundContext()
        let author = try seed.performAndWait {
            let author = Author(context: seed)
            author.name = "Ann"
            author.books = [seed.object(with: seeded.a) as! Book, seed.object(with: seeded.b) as! Book]
            try seed.save()
            return author.objectID
        }
        let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Book")
        fetch.predicate = NSPredicate(format: "title == %@", "A")
        _ = try BatchSupport.execute(NSBatchDeleteRequest(fetchRequest: fetch), on: container!)
        func expectOnlyB(_ c: NSPersistentContainer) throws {
            let ctx = c.newBackgroundContext()
            // IDs of the container that saved them, as the one at hand names them.
            func mine(_ id: NSManagedObjectID) throws -> NSManagedObjectID {
                try #require(c.persistentStoreCoordinator.managedObjectID(forURIRepresentation: id.uriRepresentation()))
            }
            let (shelfID, authorID, aID, bID) = (try mine(seeded.shelf), try mine(author), try mine(seeded.a), try mine(seeded.b))
            let (shelfBooks, annBooks, aIsGone) = try ctx.performAndWait {
                let shelf = try ctx.existingObject(with: shelfID) as! Shelf
                let ann = try ctx.existingObject(with: authorID) as! Author
                let gone = (try? ctx.existingObject(with: aID)) == nil
                return (shelf.books.map(\.objectID), ann.books.map(\.objectID), gone)
            }
            #expect(shelfBooks == [bID])
            #expect(annBooks == [bID])
            #expect(aIsGone)
        }
        try expectOnlyB(container!)
        if kind == .file {
            try FSSupport.close(container!)
            container = nil
            try expectOnlyB(try BatchSupport.container(.file, in: folder))
        }
    }

    @Test(arguments: BatchStoreKind.allCases)
    func cascadeRulesDeleteWhatTheyReach(_ kind: BatchStoreKind) async throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let seeded = try await Fixtures.seedShelf(container)
        let seed = container.newBackgroundContext()
        let cover = try seed.performAndWait {
            let cover = Cover(context: seed)
            cover.book = (seed.object(with: seeded.a) as! Book)
            try seed.save()
            return cover.objectID
        }
        let other = try Fixtures.seedShelfHoldingABook(container)
        let request = NSBatchDeleteRequest(objectIDs: [seeded.shelf])
        request.resultType = .resultTypeObjectIDs
        let deleted = try #require((try BatchSupport.execute(request, on: container) as? NSBatchDeleteResult)?.result as? [NSManagedObjectID])
        #expect(deleted.first == seeded.shelf)
        #expect(Set(deleted) == [seeded.shelf, seeded.a, seeded.b, cover])
        #expect(try BatchSupport.books(container) == ["X:0"])
        let ctx = container.newBackgroundContext()
        let (covers, otherBooks) = try ctx.performAndWait {
            (try ctx.count(for: Cover.fetchRequest()), (try ctx.existingObject(with: other.0) as! Shelf).books.map(\.objectID))
        }
        #expect(covers == 0)
        #expect(otherBooks == [other.1])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func aDenyRuleHoldingRowsRefusesTheDeleteAndDeletesNothing(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let ids = try BatchSupport.seedBooks(container, [("A", 1)])
        let seed = container.newBackgroundContext()
        let author = try seed.performAndWait {
            let author = Author(context: seed)
            author.books = [seed.object(with: ids[0]) as! Book]
            try seed.save()
            return author.objectID
        }
        let error = try #require(throws: CoreDataError.self) {
            try BatchSupport.execute(NSBatchDeleteRequest(objectIDs: [author]), on: container)
        }
        #expect(error.code == .validationRelationshipDeniedDelete && error.key == "books" && error.objectID == author)
        let ctx = container.newBackgroundContext()
        #expect(try ctx.performAndWait { try ctx.count(for: Author.fetchRequest()) } == 1)
        #expect(try BatchSupport.books(container) == ["A:1"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func aPredicateTheStoreCannotRunIsRefused(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        _ = try BatchSupport.seedBooks(container, [("A", 1)])
        let fetch = Book.fetchRequest()
        fetch.predicate = #Predicate<Book> { $0.title.count > 0 }
        let error = try #require(throws: CoreDataError.self) { try BatchSupport.execute(NSBatchDeleteRequest(fetchRequest: fetch), on: container) }
        #expect(error.code == .coreData)
        #expect(try BatchSupport.books(container) == ["A:1"])
    }
}
