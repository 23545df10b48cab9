import Foundation
import Testing
@testable import PersistenceKit

/// A batch request changes the store only; merging the IDs it reports brings a context up
/// to date.
@Suite struct BatchMergeTests {
    @Test(arguments: BatchStoreKind.allCases)
    func mergedUpdatesRefreshAndMergedDeletionsMakeObjectsInaccessible(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let ids = try BatchSupport.seedBooks(container, [("A", 100), ("B", 200), ("C", 300)])
        let holder = container.newBackgroundContext()
        let (a, b, c) = try holder.performAndWait {
            let objects = try ids.map { try holder.existingObject(with: $0) as! Book }
            _ = objects.map(\.title)  // loaded, not faults
            return (objects[0], objects[1], objects[2])
        }

        let update = NSBatchUpdateRequest(entityName: "Book")
        update.predicate = NSPredicate(format: "pages >= 200")
        update.propertiesToUpdate = ["title": "Updated"]
        update.resultType = .updatedObjectIDsResultType
        let updated = try #require((try holder.performAndWait { try holder.execute(update) } as? NSBatchUpdateResult)?.result as? [NSManagedObjectID])
        let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Book")
        fetch.predicate = NSPredicate(format: "pages == 100")
        let delete = NSBatchDeleteRequest(fetchRequest: fetch)
        delete.resultType = .resultTypeObjectIDs
        let deleted = try #require((try holder.performAndWait { try holder.execute(delete) } as? NSBatchDeleteResult)?.result as? [NSManagedObjectID])
        #expect(updated == [ids[1], ids[2]] && deleted == [ids[0]])

        holder.performAndWait {
            // Not merged yet: the context keeps what it had, its own executions included.
            #expect(b.title == "B" && c.title == "C")
            #expect(a.managedObjectContext === holder && a.title == "A")
            #expect(!holder.hasChanges)
        }
        NSManagedObjectContext.mergeChanges(
            fromRemoteContextSave: [NSUpdatedObjectIDsKey: updated, NSDeletedObjectIDsKey: deleted], into: [holder])
        try holder.performAndWait {
            #expect(b.title == "Updated" && c.title == "Updated")
            #expect(b.pages == 200 && c.pages == 300)
            #expect(a.managedObjectContext == nil)
            #expect(holder.registeredObject(for: ids[0]) == nil)
            #expect(throws: CoreDataError.self) { try holder.existingObject(with: ids[0]) }
            #expect(!holder.hasChanges)
            // Saving on top of the merged rows meets no conflict.
            b.pages = 201
            try holder.save()
        }
        #expect(try BatchSupport.books(container) == ["Updated:201", "Updated:300"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func aSaveOfAStaleObjectAfterABatchUpdateIsAConflict(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let ids = try BatchSupport.seedBooks(container, [("A", 100)])
        let holder = container.newBackgroundContext()
        let a = try holder.performAndWait {
            let a = try holder.existingObject(with: ids[0]) as! Book
            _ = a.title
            return a
        }
        let update = NSBatchUpdateRequest(entityName: "Book")
        update.propertiesToUpdate = ["pages": 1]
        _ = try BatchSupport.execute(update, on: container)
        try holder.performAndWait {
            a.title = "stale"
            let error = try #require(throws: CoreDataError.self) { try holder.save() }
            #expect(error.code == .managedObjectMerge)
        }
        #expect(try BatchSupport.books(container) == ["A:1"])
    }

    @Test(arguments: BatchStoreKind.allCases)
    func mergedInsertsAreFoundByTheirIDs(_ kind: BatchStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try BatchSupport.container(kind, in: folder)
        let holder = container.newBackgroundContext()
        let insert = NSBatchInsertRequest(entityName: "Book", objects: [["title": "N", "pages": 9]])
        insert.resultType = .objectIDs
        let ids = try #require((try holder.performAndWait { try holder.execute(insert) } as? NSBatchInsertResult)?.result as? [NSManagedObjectID])
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSInsertedObjectIDsKey: ids], into: [holder])
        try holder.performAndWait {
            let n = try #require(holder.registeredObject(for: ids[0]) as? Book)
            #expect(n.title == "N" && n.pages == 9)
        }
    }
}
