import Foundation
import Testing
@testable import PersistenceKit

// The stores refuse a raw commit that repeats a constrained key, whoever sends it.

@Suite struct UniqueIndexStoreTests {
    private func row(_ model: NSManagedObjectModel, _ pk: Int64, _ email: String) throws -> StoreRow {
        let entity = try #require(model.entitiesByName["UCMember"])
        return StoreRow(id: StoreRowID(entity: entity.index, primaryKey: pk), version: 1, values: [.string(email), .string("n"), .integer(0)])
    }

    private func insert(_ rows: [StoreRow]) -> StoreTransaction {
        var t = StoreTransaction()
        t.inserts = rows
        return t
    }

    private func checkRefusal(_ store: any PersistentStore, _ model: NSManagedObjectModel) throws {
        guard case .committed = try store.commit(insert([try row(model, 1, "a")])) else {
            Issue.record("the first insert was refused")
            return
        }
        guard case let .constraintConflicts(withStored) = try store.commit(insert([try row(model, 2, "b"), try row(model, 3, "a")])) else {
            Issue.record("a duplicate of a stored key was committed")
            return
        }
        #expect(withStored.count == 1)
        #expect(withStored.first?.stored?.id.primaryKey == 1)
        #expect(withStored.first?.rows.map(\.primaryKey) == [3])
        #expect(withStored.first?.values == [.string("a")])
        guard case let .constraintConflicts(within) = try store.commit(insert([try row(model, 4, "c"), try row(model, 5, "c")])) else {
            Issue.record("two rows with one key were committed together")
            return
        }
        #expect(within.first?.stored == nil && within.first?.rows.map(\.primaryKey) == [4, 5])
        // Nothing of the refused commits was written; a row deleted frees its key.
        let entity = try #require(model.entitiesByName["UCMember"]).index
        #expect(try store.fetchRows(entity: entity, filter: nil).map(\.id.primaryKey) == [1])
        var delete = insert([try row(model, 6, "a")])
        delete.deletes = [(id: StoreRowID(entity: entity, primaryKey: 1), expectedVersion: 1)]
        guard case .committed = try store.commit(delete) else {
            Issue.record("a key freed in the same commit was refused")
            return
        }
    }

    @Test func inMemoryStoreRefusesADuplicateCommit() throws {
        let model = try UCSupport.model()
        model.seal()
        try checkRefusal(InMemoryStore(model: model), model)
    }

    @Test func fileStoreRefusesADuplicateCommit() throws {
        let folder = try TemporaryFolder()
        let model = try UCSupport.model()
        let store = try FileStore.open(at: folder.storeURL, model: model)
        try checkRefusal(store, model)
        try store.close()
        // Reopened, the index is built from the stored rows.
        let reopened = try FileStore.open(at: folder.storeURL, model: try UCSupport.model())
        guard case .constraintConflicts = try reopened.commit(insert([try row(model, 7, "a")])) else {
            Issue.record("the reopened store committed a duplicate")
            return
        }
        try reopened.close()
    }

    @Test func storeOfAModelWithoutConstraintsStillOpens() throws {
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL)
        try container.viewContext.performAndWait {
            let book = Book(context: container.viewContext)
            book.title = "Kept"
            try container.viewContext.save()
        }
        try FSSupport.close(container)
        let reopened = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(reopened).map(\.title) == ["Kept"])
        try FSSupport.close(reopened)
    }
}
