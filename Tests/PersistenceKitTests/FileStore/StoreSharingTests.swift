import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

#if canImport(Glibc)
import Glibc
#endif

/// Every coordinator of a process that opens a file — by any path to it — shares one store
/// object: saves are seen by all, atomically, with one writer at the end of the file. The
/// store closes when the last coordinator removes it, and a store another coordinator's
/// remove closed is never handed out as loaded.
@Suite("One store object per file in a process") struct StoreSharingTests {
    /// Two containers on one file get the same store object and see each other's saves.
    @Test func twoCoordinatorsShareOneStoreAndSeeEachOthersSaves() throws {
        let folder = try TemporaryFolder()
        let a = try FSSupport.container(at: folder.storeURL)
        let b = try FSSupport.container(at: folder.storeURL)
        let storeA = try #require(FSSupport.fileStores(a).first)
        let storeB = try #require(FSSupport.fileStores(b).first)
        #expect(storeA === storeB)

        let contextA = a.newBackgroundContext(), contextB = b.newBackgroundContext()
        try contextA.performAndWait {
            Book(context: contextA).title = "from A"
            try contextA.save()
        }
        #expect(try FSSupport.books(b).map(\.title) == ["from A"])
        try contextB.performAndWait {
            let bookA = try #require(try contextB.fetch(Book.fetchRequest()).first)
            bookA.pages = 7
            Book(context: contextB).title = "from B"
            try contextB.save()
        }
        #expect(try FSSupport.books(a).sorted { $0.title < $1.title }.map { "\($0.title):\($0.pages)" } == ["from A:7", "from B:0"])
        try FSSupport.close(a)
        let reopened = try FSSupport.container(at: folder.storeURL)
        #expect(try FSSupport.books(reopened).count == 2)
        try FSSupport.close(reopened)
    }

    /// Two coordinators on one store: one saves pairs of books, the other counts them (through
    /// a context and straight from the store), and never sees an odd count.
    @Test func twoCoordinatorsNeverSeeHalfATransaction() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let store = try FileStore.open(at: folder.storeURL, model: model)
        let writer = try FSSupport.context(for: store, model: model)
        let reader = try FSSupport.context(for: try FileStore.open(at: folder.storeURL, model: model), model: model)
        let done = Atomic<Bool>(false)
        let odd = Atomic<Int>(0)
        let t = Thread {
            while !done.load(ordering: .relaxed) {
                let n = (try? reader.performAndWait { try reader.count(for: Book.fetchRequest()) }) ?? 0
                if n % 2 != 0 { odd.add(1, ordering: .relaxed) }
                let rows = (try? store.fetchRows(entity: model.entities.first { $0.name == "Book" }!.index, filter: nil).count) ?? 0
                if rows % 2 != 0 { odd.add(1, ordering: .relaxed) }
            }
        }
        t.start()
        for i in 0..<200 { try FSSupport.insertBooks(writer, ["x\(i)", "y\(i)"]) }
        done.store(true, ordering: .relaxed)
        Thread.sleep(forTimeInterval: 0.1)
        #expect(odd.load(ordering: .relaxed) == 0)
        try store.close()
    }

    /// Every container of a process shares one store object per file, so a second one asking
    /// for another durability is refused, not silently given the first one's.
    @Test func secondOpenWithOtherDurabilityIsATypedError() throws {
        let folder = try TemporaryFolder()
        let model = try FSSupport.itemModel()
        let first = try FSSupport.container(at: folder.storeURL, model: model, durability: "normal")
        defer { try? FSSupport.close(first) }
        let error = FSSupport.loadError { _ = try FSSupport.container(at: folder.storeURL, model: model, durability: "full") }
        #expect(error?.kind == .optionsMismatch)
        #expect(error?.message.contains("normal") == true)
        let same = try FSSupport.container(at: folder.storeURL, model: model, durability: "normal")
        #expect(FSSupport.fileStores(same).first === FSSupport.fileStores(first).first)
    }

    /// A path through a symbolic link finds the store already open: one writer, no save
    /// lost (two store objects each appended at their own end of the file).
    @Test func pathThroughASymlinkSharesTheOpenStore() throws {
        let folder = try TemporaryFolder()
        let model = try FSSupport.itemModel()
        try FSSupport.withItemStore(folder.storeURL) { c in
            FSItem(context: c).key = 1
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
            FSItem(context: a).key = 2
            try a.save()
        }
        try b.performAndWait {
            FSItem(context: b).key = 3
            try b.save()
        }
        try FSSupport.close(direct)
        let keys = try FSSupport.withItemStore(folder.storeURL) { c in try c.fetch(FSItem.fetchRequest()).map(\.key).sorted() }
        #expect(keys == [1, 2, 3])
    }

    /// A store opened through a symbolic link to a file not made yet is made at the link's
    /// target: the link stays a link, and the target's path finds the same store, saves and all.
    @Test func symlinkToAMissingFileCreatesTheStoreAtItsTarget() throws {
        let folder = try TemporaryFolder()
        let model = try FSSupport.itemModel()
        let alias = folder.url.appendingPathComponent("alias.store")
        try FileManager.default.createSymbolicLink(atPath: alias.path, withDestinationPath: "target.store")  // relative
        let target = folder.url.appendingPathComponent("target.store")
        let linked = try FSSupport.container(at: alias, model: model)
        let context = linked.newBackgroundContext()
        try context.performAndWait {
            FSItem(context: context).key = 7
            try context.save()
        }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: alias.path) == "target.store", "the link was replaced")
        #expect(FileManager.default.fileExists(atPath: target.path))
        let direct = try FSSupport.container(at: target, model: model)
        #expect(FSSupport.fileStores(direct).first === FSSupport.fileStores(linked).first)
        try FSSupport.close(linked)
        let keys = try FSSupport.withItemStore(target) { c in try c.fetch(FSItem.fetchRequest()).map(\.key) }
        #expect(keys == [7])
    }

    /// Removing a file store from the last coordinator that has it closes it: the close
    /// record is written and `-lock` goes, so the next open is a clean one (a store held by
    /// a global is never freed, so a program that exits without this left `-lock` behind
    /// and the next open recovered as after a crash).
    @Test func removingAStoreFromItsLastCoordinatorClosesIt() throws {
        let folder = try TemporaryFolder()
        let model = try FSSupport.itemModel()
        let first = try FSSupport.container(at: folder.storeURL, model: model)
        let second = try FSSupport.container(at: folder.storeURL, model: model)
        let store = try #require(FSSupport.fileStores(first).first)
        let context = first.newBackgroundContext()
        try context.performAndWait {
            FSItem(context: context).key = 7
            try context.save()
        }
        let lock = folder.storeURL.path + "-lock"
        try first.persistentStoreCoordinator.remove(store)
        #expect(first.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(FileManager.default.fileExists(atPath: lock), "the other coordinator still uses the store")
        try second.persistentStoreCoordinator.remove(store)
        #expect(!FileManager.default.fileExists(atPath: lock))
        let keys = try FSSupport.withItemStore(folder.storeURL) { c in try c.fetch(FSItem.fetchRequest()).map(\.key) }
        #expect(keys == [7])
    }

    /// The interleaving of `addPersistentStore(type:at:options:)` on coordinator B (its
    /// factory's `FileStore.open`, then `addPersistentStore(_:)`) with `remove` on A: B's add refuses the store A closed (it used to add a closed
    /// store silently), and loading by type opens it again.
    @Test func aStoreLoadedWhileAnotherCoordinatorRemovesItIsNotClosedUnderTheLoader() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let a = NSPersistentStoreCoordinator(managedObjectModel: model)
        let storeA = try a.addPersistentStore(type: NSFileStoreType, at: folder.storeURL)
        let b = NSPersistentStoreCoordinator(managedObjectModel: model)
        // B's factory step: the shared store, found open.
        let storeB = try FileStore.open(at: folder.storeURL, model: model)
        #expect(storeB === storeA as? FileStore)
        try a.remove(storeA)  // A's remove: attachments 1 → 0, closes the store
        // B's add step refuses the store A closed (it no longer adds a closed store silently);
        // loading by type opens it again.
        let refused = #expect(throws: CoreDataError.self) { try b.addPersistentStore(storeB) }
        #expect(refused?.code == .persistentStoreOpen)
        try b.addPersistentStore(type: NSFileStoreType, at: folder.storeURL)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: b)
        try FSSupport.insertBooks(context, ["saved"])
    }

    /// The same race through the public loading call only.
    @Test func concurrentLoadAndRemoveNeverLeaveALoadedStoreClosed() throws {
        let folder = try TemporaryFolder()
        let model = try Fixtures.model()
        let options = [FileStore.durabilityOptionKey: "normal"]
        var hits = 0
        let iterations = Int(ProcessInfo.processInfo.environment["RACE_ITERATIONS"] ?? "1500") ?? 1500
        for _ in 0..<iterations {
            let a = NSPersistentStoreCoordinator(managedObjectModel: model)
            let storeA = try a.addPersistentStore(type: NSFileStoreType, at: folder.storeURL, options: options)
            let b = NSPersistentStoreCoordinator(managedObjectModel: model)
            let ready = Atomic<Int>(0)
            let loaded = TestMutex<(any PersistentStore)?>(nil)
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                ready.add(1, ordering: .sequentiallyConsistent)
                while ready.load(ordering: .sequentiallyConsistent) < 2 {}
                if i == 0 {
                    try? a.remove(storeA)
                } else {
                    let s = try? b.addPersistentStore(type: NSFileStoreType, at: folder.storeURL, options: options)
                    loaded.withLock { $0 = s }
                }
            }
            guard let s = loaded.withLock({ $0 }) as? FileStore else { Issue.record("B failed to load"); return }
            if s.isClosed { hits += 1 }
            try? b.remove(s)
            try? s.close()
        }
        #expect(hits == 0, "\(hits) of \(iterations) loads returned a store that another coordinator's remove had closed")
    }
}
