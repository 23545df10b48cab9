import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    static func batchRequests(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            let container = try await checked.open()
            try await inContext(container) { context throws in
                let insert = NSBatchInsertRequest(entityName: "SBBook", objects: (0..<100).map { ["title": "b\($0)", "pages": Int64($0)] })
                insert.resultType = .count
                #expect((try context.execute(insert) as? NSBatchInsertResult)?.result as? Int == 100)
            }
            #expect(try await inContext(try await checked.reopen()) { try $0.count(for: NSFetchRequest<SBBook>(entityName: "SBBook")) } == 100)

            let reopened = try await checked.reopen()
            // A shelf holding the last 30 books, saved through a context.
            try await inContext(reopened) { context in
                let shelf = SBShelf(context: context)
                shelf.name = "tail"
                let request = NSFetchRequest<SBBook>(entityName: "SBBook")
                request.predicate = NSPredicate(format: "pages >= 70")
                for book in try context.fetch(request) { book.shelf = shelf }
                try context.save()
            }
            let updatedIDs = try await inContext(reopened) { context in
                let update = NSBatchUpdateRequest(entityName: "SBBook")
                update.predicate = NSPredicate(format: "pages < 10")
                update.propertiesToUpdate = ["title": "short", "published": Date(timeIntervalSinceReferenceDate: 5)]
                update.resultType = .updatedObjectIDsResultType
                return try #require((try context.execute(update) as? NSBatchUpdateResult)?.result as? [NSManagedObjectID])
            }
            #expect(updatedIDs.count == 10)
            try await inContext(reopened) { context throws in
                let fetch = NSFetchRequest<SBBook>(entityName: "SBBook")
                fetch.predicate = NSPredicate(format: "pages >= 90")
                let delete = NSBatchDeleteRequest(fetchRequest: fetch)
                delete.resultType = .resultTypeCount
                #expect((try context.execute(delete) as? NSBatchDeleteResult)?.result as? Int == 10)
            }

            let (short, total, onShelf, stillThere) = try await inContext(try await checked.reopen()) { context in
                let titled = NSFetchRequest<SBBook>(entityName: "SBBook")
                titled.predicate = NSPredicate(format: "title == 'short' AND published != nil")
                let shelf = try #require(try all(SBShelf.self, in: context).first)
                let stillThere = try updatedIDs.map { try (context.existingObject(with: $0) as? SBBook)?.title }
                return (
                    try context.count(for: titled), try context.count(for: NSFetchRequest<SBBook>(entityName: "SBBook")),
                    shelf.books.map(\.pages).sorted(), stillThere
                )
            }
            #expect(short == 10)
            #expect(total == 90)
            // The batch delete took the deleted books off the shelf's to-many too.
            #expect(onShelf == Array(70..<90))
            #expect(stillThere == Array(repeating: "short", count: 10))
        }
    }
}
