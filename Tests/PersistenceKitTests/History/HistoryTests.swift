import Foundation
import Testing
@testable import PersistenceKit

/// Persistent history: what a store with NSPersistentHistoryTrackingKey records for each
/// save and batch request, and how it is fetched and deleted.
@Suite("Persistent history: recording and fetching")
struct HistoryTests {
    @Test(arguments: HistoryStoreKind.allCases)
    func eachSaveIsATransactionWithItsAuthorContextNameAndChanges(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        let ids = try HistorySupport.insert(["a", "b"], in: container, author: "importer", name: "import context")
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.transactionAuthor = "editor"
            let a = try #require(try context.existingObject(with: ids[0]) as? Memo)
            a.body = "edited"
            a.rank = 10
            let b = try context.existingObject(with: ids[1])
            context.delete(b)
            try context.save()
        }
        let transactions = try HistorySupport.transactions(after: nil, in: container)
        try #require(transactions.count == 2)
        #expect(transactions[0].author == "importer" && transactions[0].contextName == "import context")
        #expect(transactions[0].changes == ["insert Memo p1", "insert Memo p2"])
        #expect(transactions[1].author == "editor" && transactions[1].contextName == nil)
        #expect(transactions[1].changes == ["update Memo p1 [body,rank]", "delete Memo p2 title=b"])
        #expect(transactions[0].number < transactions[1].number)
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func fetchingAfterATokenADateOrATransactionGivesTheLaterTransactions(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        try HistorySupport.insert(["first"], in: container, author: "one")
        let all = try HistorySupport.transactions(after: nil, in: container)
        let afterFirst = try #require(container.persistentStoreCoordinator.currentPersistentHistoryToken())
        #expect(afterFirst == all[0].token)
        let moment = Date()
        try HistorySupport.insert(["second"], in: container, author: "two")
        try HistorySupport.insert(["third"], in: container, author: "three")

        #expect(try HistorySupport.transactions(after: afterFirst, in: container).map(\.author) == ["two", "three"])
        let byDate = try #require(
            try HistorySupport.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: moment), in: container)
                as? [NSPersistentHistoryTransaction])
        #expect(byDate.map(\.author) == ["two", "three"])
        let context = container.newBackgroundContext()
        let authors = try context.performAndWait {
            let every = try #require((try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?))
                as? NSPersistentHistoryResult)?.result as? [NSPersistentHistoryTransaction])
            let request = NSPersistentHistoryChangeRequest.fetchHistory(after: every[1])
            let later = try #require((try context.execute(request) as? NSPersistentHistoryResult)?.result as? [NSPersistentHistoryTransaction])
            return later.map(\.author)
        }
        #expect(authors == ["three"])
        let current = try #require(container.persistentStoreCoordinator.currentPersistentHistoryToken())
        #expect(try HistorySupport.transactions(after: current, in: container).isEmpty)
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func resultTypesGiveCountsIDsChangesOrTransactionsWithoutChanges(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        let ids = try HistorySupport.insert(["a", "b"], in: container)
        try HistorySupport.insert(["c"], in: container)
        func run(_ type: NSPersistentHistoryResultType) throws -> Any? {
            let request = NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)
            request.resultType = type
            return try HistorySupport.execute(request, in: container)
        }
        #expect(try run(.statusOnly) as? Bool == true)
        #expect(try run(.count) as? Int == 2)
        let objectIDs = try #require(try run(.objectIDs) as? [NSManagedObjectID])
        #expect(objectIDs.count == 3 && Array(objectIDs.prefix(2)) == ids)
        let changes = try #require(try run(.changesOnly) as? [NSPersistentHistoryChange])
        #expect(changes.map(\.changeType) == [.insert, .insert, .insert])
        #expect(changes.allSatisfy { $0.transaction != nil && $0.updatedProperties == nil && $0.tombstone == nil })
        #expect(changes.map(\.changeID) == changes.map(\.changeID).sorted() && Set(changes.map(\.changeID)).count == 3)
        let bare = try #require(try run(.transactionsOnly) as? [NSPersistentHistoryTransaction])
        #expect(bare.count == 2 && bare.allSatisfy { $0.changes == nil })
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func deletingHistoryBeforeATokenDateOrTransactionLeavesTheRest(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        for author in ["one", "two", "three", "four"] { try HistorySupport.insert([author], in: container, author: author) }
        let all = try HistorySupport.transactions(after: nil, in: container)

        let removed = NSPersistentHistoryChangeRequest.deleteHistory(before: all[0].token)
        removed.resultType = .count
        #expect(try HistorySupport.execute(removed, in: container) as? Int == 1)
        #expect(try HistorySupport.transactions(after: nil, in: container).map(\.author) == ["two", "three", "four"])
        // A token before the deleted history would miss changes: refused.
        let expired = #expect(throws: CoreDataError.self) {
            _ = try HistorySupport.execute(
                NSPersistentHistoryChangeRequest.fetchHistory(after: NSPersistentHistoryToken(storeTokens: all[0].token.storeTokens.mapValues { $0 - 1 })),
                in: container)
        }
        #expect(expired?.code == .persistentHistoryTokenExpired)
        // The token of the last deleted transaction still works.
        #expect(try HistorySupport.transactions(after: all[0].token, in: container).map(\.author) == ["two", "three", "four"])

        let context = container.newBackgroundContext()
        try context.performAndWait {
            let kept = try #require((try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?))
                as? NSPersistentHistoryResult)?.result as? [NSPersistentHistoryTransaction])
            try context.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: kept[0]))
        }
        #expect(try HistorySupport.transactions(after: nil, in: container).map(\.author) == ["three", "four"])
        _ = try HistorySupport.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: Date.distantFuture), in: container)
        #expect(try HistorySupport.transactions(after: nil, in: container).isEmpty)
        // Rows are untouched; new saves are recorded as before.
        try HistorySupport.insert(["five"], in: container, author: "five")
        #expect(try HistorySupport.transactions(after: nil, in: container).map(\.author) == ["five"])
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func batchRequestsAreRecorded(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.transactionAuthor = "batch"
            context.name = "batch context"
            let insert = NSBatchInsertRequest(entityName: "Memo", objects: [["title": "x", "rank": 1], ["title": "y", "rank": 2]])
            try context.execute(insert)
            let update = NSBatchUpdateRequest(entityName: "Memo")
            update.predicate = NSPredicate(format: "rank == 2")
            update.propertiesToUpdate = ["body": "updated"]
            try context.execute(update)
            let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Memo")
            fetch.predicate = NSPredicate(format: "rank == 1")
            try context.execute(NSBatchDeleteRequest(fetchRequest: fetch))
        }
        let transactions = try HistorySupport.transactions(after: nil, in: container)
        #expect(transactions.map(\.changes) == [["insert Memo p1", "insert Memo p2"], ["update Memo p2 [body]"], ["delete Memo p1 title=x"]])
        #expect(transactions.allSatisfy { $0.author == "batch" && $0.contextName == "batch context" })
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func aTransactionsObjectIDNotificationMergesIntoAnotherContext(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        let ids = try HistorySupport.insert(["a", "b"], in: container)
        let reader = container.newBackgroundContext()
        let (a, b) = try reader.performAndWait {
            let a = try #require(try reader.existingObject(with: ids[0]) as? Memo)
            let b = try #require(try reader.existingObject(with: ids[1]) as? Memo)
            _ = (a.title, b.title)
            return (a, b)
        }
        let start = try #require(container.persistentStoreCoordinator.currentPersistentHistoryToken())
        let writer = container.newBackgroundContext()
        let inserted = try writer.performAndWait {
            (try writer.existingObject(with: ids[0]) as? Memo)?.title = "A"
            writer.delete(try writer.existingObject(with: ids[1]))
            let c = Memo(context: writer)
            c.title = "c"
            try writer.save()
            return c.objectID
        }
        try reader.performAndWait {
            let request = NSPersistentHistoryChangeRequest.fetchHistory(after: start)
            let transactions = try #require((try reader.execute(request) as? NSPersistentHistoryResult)?.result as? [NSPersistentHistoryTransaction])
            #expect(transactions.count == 1)
            #expect(a.title == "a", "not merged yet")
            for t in transactions { reader.mergeChanges(fromContextDidSave: t.objectIDNotification()) }
            #expect(a.title == "A")
            #expect(b.managedObjectContext == nil, "the deleted object left the context")
            let memos = try reader.fetch(NSFetchRequest<Memo>(entityName: "Memo"))
            #expect(Set(memos.map(\.objectID)) == [ids[0], inserted])
        }
    }

    /// The reader loop of the Guide: fetch after the kept token, merge what others wrote,
    /// delete what was read, keep the last token.
    @Test(arguments: HistoryStoreKind.allCases)
    func aReaderLoopMergesOthersTransactionsAndDeletesWhatItRead(_ kind: HistoryStoreKind) async throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        let ids = try HistorySupport.insert(["a"], in: container, author: "app")
        let target = container.newBackgroundContext()
        let before = try await target.perform { (try target.existingObject(with: ids[0]) as? Memo)?.body }
        #expect(before == "")
        let writer = container.newBackgroundContext()
        try await writer.perform {
            writer.transactionAuthor = "sync"
            (try writer.existingObject(with: ids[0]) as? Memo)?.body = "from sync"
            try writer.save()
        }
        let context = container.newBackgroundContext()
        var lastToken: NSPersistentHistoryToken?
        let since = lastToken
        lastToken = try await context.perform {
            let request = NSPersistentHistoryChangeRequest.fetchHistory(after: since)
            let result = try context.execute(request) as? NSPersistentHistoryResult
            let transactions = result?.result as? [NSPersistentHistoryTransaction] ?? []
            for transaction in transactions where transaction.author != "app" {
                NSManagedObjectContext.mergeChanges(
                    fromRemoteContextSave: transaction.objectIDNotification().userInfo ?? [:], into: [target])
            }
            guard let last = transactions.last?.token else { return since }
            try context.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: last))
            return last
        }
        #expect(await target.perform { (target.registeredObject(for: ids[0]) as? Memo)?.body } == "from sync")
        #expect(lastToken == container.persistentStoreCoordinator.currentPersistentHistoryToken())
        #expect(try HistorySupport.transactions(after: nil, in: container).isEmpty)
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func relationshipChangesAreUpdatesOfTheProperties(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL)
        let ids = try HistorySupport.insert(["a"], in: container)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let f = MemoFolder(context: context)
            f.name = "inbox"
            (try context.existingObject(with: ids[0]) as? Memo)?.folder = f
            try context.save()
        }
        let last = try #require(try HistorySupport.transactions(after: nil, in: container).last)
        #expect(last.changes.contains("insert MemoFolder p1"))
        #expect(last.changes.contains("update Memo p1 [folder]"))

        // Into a stored folder: both ends change; a later edit of the folder's name alone
        // lists only the name, whatever order the folder's memos come in.
        let second = try HistorySupport.insert(["b", "c"], in: container)
        try context.performAndWait {
            let f = try #require(try context.fetch(NSFetchRequest<MemoFolder>(entityName: "MemoFolder")).first)
            for id in second.reversed() { (try context.existingObject(with: id) as? Memo)?.folder = f }
            try context.save()
            f.name = "archive"
            try context.save()
        }
        let history = try HistorySupport.transactions(after: nil, in: container)
        #expect(Set(history[history.count - 2].changes) == ["update Memo p2 [folder]", "update Memo p3 [folder]", "update MemoFolder p1 [memos]"])
        #expect(history[history.count - 1].changes == ["update MemoFolder p1 [name]"])
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func withoutTrackingNothingIsRecorded(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, tracking: false)
        try HistorySupport.insert(["a"], in: container)
        #expect(container.persistentStoreCoordinator.currentPersistentHistoryToken() == nil)
        let store = try #require(container.persistentStoreCoordinator.persistentStores.first)
        #expect(!store.tracksHistory)
        #expect(try store.fetchHistory(after: .all).isEmpty)
    }

    @Test func aStoreWithoutHistoryRefusesHistoryRequests() throws {
        let model = try HistorySupport.model()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(StoreWithoutHistory(base: InMemoryStore(model: model, tracksHistory: true)))
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        let error = context.performAndWait {
            #expect(throws: CoreDataError.self) { try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: Date())) }
        }
        #expect(error?.code == .persistentStoreOperation)
    }
}

/// A store that keeps its base's rows but none of its history or generations: the
/// protocol's defaults answer.
final class StoreWithoutHistory: ForwardingStore {
    let base: InMemoryStore
    init(base: InMemoryStore) { self.base = base }
}
