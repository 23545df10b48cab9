import Foundation
import Testing
@testable import PersistenceKit

/// One object with an indexed and an unindexed copy of the attributes the review found
/// trouble with, so a fetch through the index can be checked against a scan.
final class RVItem: NSManagedObject {
    @Attribute var key: Int64 = 0
    @Attribute(.indexed) var iDouble: Double = 0
    @Attribute(.indexed) var iDate: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var pDate: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var amount: Decimal?
    @Attribute(.indexed) var iURL: URL?
    @Attribute var pURL: URL?
}

/// Regressions from a review of the file store: each test failed before its fix.
@Suite struct StoreReviewTests {
    static func model() throws -> NSManagedObjectModel { try NSManagedObjectModel(managedObjectClasses: [RVItem.self]) }

    /// Opens the store at `url`, runs `body` on a context, and closes the store.
    static func withStore<T>(_ url: URL, _ body: (NSManagedObjectContext) throws -> T) throws -> T {
        let container = try FSSupport.container(at: url, model: try model())
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        return try context.performAndWait { try body(context) }
    }

    static func keys(_ context: NSManagedObjectContext, _ predicate: Predicate<RVItem>) throws -> [Int64] {
        let request = RVItem.fetchRequest()
        request.predicate = predicate
        return try context.fetch(request).map(\.key).sorted()
    }

    /// A row whose key lies far above the others lives outside the row table's array; when
    /// the table later grows over that key, updating the row must stay an update.
    @Test func updatingAKeyTheTableGrewOverCountsItOnce() throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        let container = try FSSupport.container(at: folder.storeURL, model: model)
        let store = try #require(FSSupport.fileStores(container).first)
        let entity = try #require(model.entitiesByName["RVItem"]).index
        let context = container.newBackgroundContext()
        // Stands in for a million rows inserted and deleted before this one.
        _ = try store.allocatePrimaryKeys(entity: entity, count: 1_048_599)
        let far = try context.performAndWait {
            let o = RVItem(context: context)
            o.key = 1
            o.iDouble = 1
            try context.save()
            return o.objectID
        }
        _ = try store.allocatePrimaryKeys(entity: entity, count: 4_000_000)
        try context.performAndWait {
            for i in 0..<40 {
                let o = RVItem(context: context)
                o.key = Int64(100 + i)
                o.iDouble = 100
            }
            try context.save()
            try #require(try context.existingObject(with: far) as? RVItem).iDouble = 2
            try context.save()
        }
        let (count, ranged) = try context.performAndWait {
            context.reset()
            return (try context.count(for: RVItem.fetchRequest()), try Self.keys(context, #Predicate { $0.iDouble >= 1 && $0.iDouble <= 2 }))
        }
        #expect(count == 41)
        #expect(ranged == [1])
        try FSSupport.close(container)
        let reopened = try FSSupport.container(at: folder.storeURL, model: model)
        defer { try? FSSupport.close(reopened) }
        let again = reopened.newBackgroundContext()
        #expect(try again.performAndWait { try again.count(for: RVItem.fetchRequest()) } == 41)
    }

    /// A date with a NaN interval is not indexed (it equals nothing, itself included):
    /// range fetches through the index give what a scan gives.
    @Test func nanDatesLeaveIndexedRangeFetchesRight() throws {
        let folder = try TemporaryFolder()
        let mismatches = try Self.withStore(folder.storeURL) { c in
            var random = FSRandom(seed: 7)
            for i in 0..<200 {
                let o = RVItem(context: c)
                o.key = Int64(i)
                let t = i % 5 == 0 ? Double.nan : Double(Int.random(in: 0..<100, using: &random))
                o.iDate = Date(timeIntervalSinceReferenceDate: t)
                o.pDate = o.iDate
            }
            try c.save()
            c.reset()
            var mismatches: [String] = []
            for b in stride(from: 0.0, to: 100, by: 10) {
                let bound = Date(timeIntervalSinceReferenceDate: b)
                let indexed = try Self.keys(c, #Predicate { $0.iDate > bound })
                let scanned = try Self.keys(c, #Predicate { $0.pDate > bound })
                if indexed != scanned { mismatches.append("> \(b): indexed \(indexed.count) rows, scanned \(scanned.count)") }
            }
            return mismatches
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    /// `Decimal.nan` is written as "NaN", which `Decimal(string:)` refuses: it must read back
    /// as NaN, not make every fetch of the entity report damage.
    @Test func decimalNaNReadsBack() throws {
        let folder = try TemporaryFolder()
        try Self.withStore(folder.storeURL) { c in
            let ok = RVItem(context: c)
            ok.key = 1
            ok.amount = 1
            try c.save()
            let nan = RVItem(context: c)
            nan.key = 2
            nan.amount = .nan
            try c.save()
        }
        let amounts = try Self.withStore(folder.storeURL) { c in
            try c.fetch(RVItem.fetchRequest()).sorted { $0.key < $1.key }.map(\.amount)
        }
        #expect(amounts.count == 2)
        #expect(amounts.first == 1)
        #expect(amounts.last??.isNaN == true)
    }

    /// A relative URL is found by an indexed equality fetch for its absolute form, whether
    /// the index was built by the save or after a reopen, as the scan finds it.
    @Test func relativeURLIsIndexedByItsAbsoluteForm() throws {
        let folder = try TemporaryFolder()
        let target: URL? = URL(string: "http://example.com/a/b")
        func counts(_ c: NSManagedObjectContext) throws -> (indexed: Int, scanned: Int) {
            (try Self.keys(c, #Predicate { $0.iURL == target }).count, try Self.keys(c, #Predicate { $0.pURL == target }).count)
        }
        let before = try Self.withStore(folder.storeURL) { c in
            let o = RVItem(context: c)
            o.iURL = URL(string: "b", relativeTo: URL(string: "http://example.com/a/"))
            o.pURL = o.iURL
            try c.save()
            c.reset()
            return try counts(c)
        }
        let after = try Self.withStore(folder.storeURL) { c in try counts(c) }
        #expect(before == (1, 1))
        #expect(after == (1, 1))
    }

    /// Every container of a process shares one store object per file, so a second one asking
    /// for another durability is refused, not silently given the first one's.
    @Test func secondOpenWithOtherDurabilityIsATypedError() throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        let first = try FSSupport.container(at: folder.storeURL, model: model, durability: "normal")
        defer { try? FSSupport.close(first) }
        let error = #expect(throws: FileStoreError.self) {
            _ = try FSSupport.container(at: folder.storeURL, model: model, durability: "full")
        }
        #expect(error?.kind == .optionsMismatch)
        #expect(error?.message.contains("normal") == true)
        let same = try FSSupport.container(at: folder.storeURL, model: model, durability: "normal")
        #expect(FSSupport.fileStores(same).first === FSSupport.fileStores(first).first)
    }

    /// A path through a symbolic link finds the store already open: one writer, no save
    /// lost (two store objects each appended at their own end of the file).
    @Test func pathThroughASymlinkSharesTheOpenStore() throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        try Self.withStore(folder.storeURL) { c in
            RVItem(context: c).key = 1
            try c.save()
        }
        let alias = folder.url.appendingPathComponent("alias.store")
        try FileManager.default.createSymbolicLink(at: alias, withDestinationURL: folder.storeURL)
        let direct = try FSSupport.container(at: folder.storeURL, model: model)
        let linked = try FSSupport.container(at: alias, model: model)
        #expect(FSSupport.fileStores(linked).first === FSSupport.fileStores(direct).first)
        let a = direct.newBackgroundContext()
        let b = linked.newBackgroundContext()
        try a.performAndWait {
            RVItem(context: a).key = 2
            try a.save()
        }
        try b.performAndWait {
            RVItem(context: b).key = 3
            try b.save()
        }
        try FSSupport.close(direct)
        let keys = try Self.withStore(folder.storeURL) { c in try c.fetch(RVItem.fetchRequest()).map(\.key).sorted() }
        #expect(keys == [1, 2, 3])
    }

    /// Removing a file store from the last coordinator that has it closes it: the close
    /// record is written and `-lock` goes, so the next open is a clean one (a store held by
    /// a global is never freed, so a program that exits without this left `-lock` behind
    /// and the next open recovered as after a crash).
    @Test func removingAStoreFromItsLastCoordinatorClosesIt() throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        let first = try FSSupport.container(at: folder.storeURL, model: model)
        let second = try FSSupport.container(at: folder.storeURL, model: model)
        let store = try #require(FSSupport.fileStores(first).first)
        let context = first.newBackgroundContext()
        try context.performAndWait {
            RVItem(context: context).key = 7
            try context.save()
        }
        let lock = folder.storeURL.path + "-lock"
        try first.persistentStoreCoordinator.remove(store)
        #expect(first.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(FileManager.default.fileExists(atPath: lock), "the other coordinator still uses the store")
        try second.persistentStoreCoordinator.remove(store)
        #expect(!FileManager.default.fileExists(atPath: lock))
        let keys = try Self.withStore(folder.storeURL) { c in try c.fetch(RVItem.fetchRequest()).map(\.key) }
        #expect(keys == [7])
    }
}

/// Permanent IDs handed out before a save stay taken across a reopen, as in Core Data, which
/// records the highest key in the store at once.
@Suite struct PermanentIDTests {
    /// The primary keys of three objects given permanent IDs and then thrown away. With
    /// `crashCopy`, the store file is copied there while still open, with a `-lock` beside
    /// it: the file as a crash would leave it (no close record).
    static func abandonedKeys(_ url: URL, crashCopy: URL?) throws -> [Int64] {
        let container = try FSSupport.container(at: url, model: try StoreReviewTests.model())
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        let keys: [Int64] = try context.performAndWait {
            let items = (0..<3).map { _ in RVItem(context: context) }
            try context.obtainPermanentIDs(for: items)
            #expect(items.allSatisfy { !$0.objectID.isTemporaryID })
            let keys = items.compactMap { $0.rowID?.primaryKey }
            context.rollback()
            return keys
        }
        if let crashCopy {
            try FileManager.default.copyItem(at: url, to: crashCopy)
            #expect(FileManager.default.createFile(atPath: crashCopy.path + "-lock", contents: nil))
        }
        return keys
    }

    @Test(arguments: [false, true])
    func keysHandedOutBeforeASaveAreNotHandedOutAgainAfterAReopen(crash: Bool) throws {
        let folder = try TemporaryFolder()
        let scratch = try TemporaryFolder()
        let abandoned =
            crash
            ? try Self.abandonedKeys(scratch.storeURL, crashCopy: folder.storeURL)
            : try Self.abandonedKeys(folder.storeURL, crashCopy: nil)
        #expect(abandoned.count == 3)
        let fresh = try StoreReviewTests.withStore(folder.storeURL) { context in
            let item = RVItem(context: context)
            try context.save()
            return try #require(item.rowID?.primaryKey)
        }
        #expect(fresh > abandoned.max() ?? .max, "a new object got key \(fresh); \(abandoned) were handed out before")
    }
}
