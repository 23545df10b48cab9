import Foundation
import Testing
@testable import PersistenceKit

/// A migration rewrites the store file; history tokens taken before it keep their meaning.
@Suite("Persistent history across a migration")
struct HistoryMigrationTests {
    typealias S = MigrationSupport

    @Test func tokensGoOnAfterAMigrationAndOlderHistoryIsExpired() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", S.v1), ("V2", S.v2)], current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        try S.seedVersion1(at: folder.storeURL, model: v1)
        var container = try HistorySupport.container(.file, at: folder.storeURL, model: v1)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let writer = NSManagedObject(entity: try #require(v1.entitiesByName["Writer"]), insertInto: context)
            writer.setValue("Cy", forKey: "name")
            try context.save()
        }
        let before = try #require(container.persistentStoreCoordinator.currentPersistentHistoryToken())
        #expect(try HistorySupport.transactions(after: nil, in: container).count == 1)
        try FSSupport.close(container)

        let v2 = try NSManagedObjectModel(modelFileAt: bundle)
        container = try HistorySupport.container(.file, at: folder.storeURL, model: v2)
        // The migration's own rewrite takes the next number (it is not history).
        #expect(try #require(container.persistentStoreCoordinator.currentPersistentHistoryToken()).isAtOrAfter(before))
        #expect(try HistorySupport.transactions(after: before, in: container).isEmpty)
        let editor = container.newBackgroundContext()
        try editor.performAndWait {
            editor.transactionAuthor = "after"
            let shelf = NSManagedObject(entity: try #require(v2.entitiesByName["Shelf"]), insertInto: editor)
            shelf.setValue("top", forKey: "label")
            try editor.save()
        }
        let after = try HistorySupport.transactions(after: before, in: container)
        #expect(after.map(\.author) == ["after"] && after[0].changes == ["insert Shelf p1"])
        let older = NSPersistentHistoryToken(storeTokens: before.storeTokens.mapValues { $0 - 1 })
        let expired = #expect(throws: CoreDataError.self) {
            _ = try HistorySupport.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: older), in: container)
        }
        #expect(expired?.code == .persistentHistoryTokenExpired)
        try FSSupport.close(container)
    }
}
