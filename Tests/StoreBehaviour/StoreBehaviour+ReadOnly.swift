import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    static func readOnly(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.tags) { checked in
            try await saveTagsAB(try await checked.open("A"))
            try checked.closeAll()

            let readOnly = try await checked.openReadOnly()
            #expect(try await inContext(readOnly, tagLines) == ["a:1", "b:2"])
            // An insert, an update and a delete: refused before anything is written, and
            // the context keeps them.
            try await inContext(readOnly) { context in
                let tags = try all(SBTag.self, in: context, sortedBy: "label")
                try #require(tags.count == 2)
                tags[0].uses = 10
                context.delete(tags[1])
                let c = SBTag(context: context)
                c.label = "c"
                let error = try #require(throws: CoreDataError.self) { try context.save() }
                #expect(error.code == .persistentStoreSave, "\(error)")
                #expect(context.hasChanges)
                #expect(c.objectID.isTemporaryID)
            }
            let batchError = try await inContext(readOnly) { context -> CoreDataError? in
                let update = NSBatchUpdateRequest(entityName: "SBTag")
                update.propertiesToUpdate = ["uses": Int64(7)]
                do {
                    _ = try context.execute(update)
                    return nil
                } catch let error as CoreDataError {
                    return error
                }
            }
            #expect(batchError?.code == .persistentStoreSave, "a batch update of a read-only store: \(String(describing: batchError))")
            try checked.closeAll()
            #expect(try await inContext(try await checked.open("B"), tagLines) == ["a:1", "b:2"])
        }
    }
}
