import Foundation
import ModelActorKit
import Testing

/// `NSPersistentContainer.makeTest`: an on-disk store of its own for each test, named after
/// it, that no other test (in this process or another) is handed.
@Suite("Test containers") struct TestContainerTests {
    /// Guarantee 7: 200 tests that each call makeTest run in parallel without seeing each
    /// other's data. (A parameterized test: every case shares one #function, which makeTest
    /// must still keep apart.)
    @Test(arguments: 0..<200) func parallelTestContainersAreIsolated(index: Int) async throws {
        let container = try NSPersistentContainer.makeRuntimeTest(modelTypes: [Item.self])
        let store = ItemStore(container: container)
        _ = try await store.createItem(title: "case \(index)")
        let titles = try await store.withContext { context in
            try context.fetch(Item.fetchRequest()).map(\.title)
        }
        #expect(titles == ["case \(index)"])
    }

    /// A context outliving its test container does not hand its store to the next test
    /// container of that name. (The context kept the store open, and the next container got
    /// the old store back, rows included.)
    @Test func aContextOutlivingItsContainerKeepsItsStoreFromTheNextTest() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let name = "outliving-\(UUID().uuidString)"
        let leftover = try NSPersistentContainer.makeTest(model: model, testName: name).newBackgroundContext()
        try leftover.performAndWait {
            Item(context: leftover).title = "old"
            try leftover.save()
        }
        let next = try NSPersistentContainer.makeTest(model: model, testName: name)
        let context = next.newBackgroundContext()
        #expect(try context.performAndWait { try context.count(for: Item.fetchRequest()) } == 0)
        withExtendedLifetime(leftover) {}
    }

    /// A test that keeps its store (say, to check its file) and ends: the next test
    /// container of that name must not be handed the old, still open store, rows and all.
    @Test func aStoreOutlivingItsTestContainerDoesNotLeakIntoTheNext() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let name = "outliving-store-\(UUID().uuidString)"
        var leftover: (any PersistentStore)?
        do {
            let first = try NSPersistentContainer.makeTest(model: model, testName: name)
            let context = first.newBackgroundContext()
            try context.performAndWait {
                Item(context: context).title = "old"
                try context.save()
            }
            leftover = first.persistentStoreCoordinator.persistentStores.first
        }
        let next = try NSPersistentContainer.makeTest(model: model, testName: name)
        let context = next.newBackgroundContext()
        let titles = try context.performAndWait { try context.fetch(Item.fetchRequest()).map(\.title) }
        #expect(titles == [])
        withExtendedLifetime(leftover) {}
    }

    /// makeTest used to keep names apart only within its process and removed a
    /// name's files directly, so another process asking for the same name (an exit test's
    /// child shares its test's `#function`) replaced this store, which went on saving into
    /// an unlinked file. The other process now gets the next numbered store.
    @Test func aStoreOpenInAnotherProcessIsLeftAloneAndTheNextNameUsed() async throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let container = try NSPersistentContainer.makeTest(model: model, testName: "cross-process-name")
        let url = try #require(container.persistentStoreCoordinator.persistentStores.first?.url)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            Item(context: context).title = "mine"
            try context.save()
        }
        let before = try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? NSNumber
        // Another test run on the machine may hold further numbered names: any name but
        // this store's, of the numbered form, is the next one free.
        await #expect(processExitsWith: .success) { [parentName = url.lastPathComponent as String] in
            let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
            let other = try NSPersistentContainer.makeTest(model: model, testName: "cross-process-name")
            let otherName = other.persistentStoreCoordinator.persistentStores.first?.url?.lastPathComponent ?? ""
            guard otherName != parentName, otherName.hasPrefix("cross-process-name-"), otherName.hasSuffix(".store") else { exit(2) }
        }
        let after = try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? NSNumber
        #expect(before != nil && before == after, "the store file was replaced")
        #expect(FileManager.default.fileExists(atPath: url.path + "-lock"))
        #expect(try context.performAndWait { try context.fetch(Item.fetchRequest()).map(\.title) } == ["mine"])
    }

    @Test func storeIsOnDiskAndStaleFilesAreRemoved() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        var url: URL?
        do {
            let first = try NSPersistentContainer.makeTest(model: model, testName: "stale-check")
            url = first.persistentStoreCoordinator.persistentStores.first?.url
            let context = first.newBackgroundContext()
            try context.performAndWait {
                _ = Item(context: context)
                try context.save()
            }
            for store in first.persistentStoreCoordinator.persistentStores { try (store as? FileStore)?.close() }
        }
        let storeURL = try #require(url)
        #expect(FileManager.default.fileExists(atPath: storeURL.path))
        let second = try NSPersistentContainer.makeTest(model: model, testName: "stale-check")
        let context = second.newBackgroundContext()
        let count = try context.performAndWait { try context.count(for: Item.fetchRequest()) }
        #expect(count == 0)
    }

    /// The container is named with the store file's stem, as CoreDataEvolution names its
    /// test containers: `Module_File.swift-f` for a test `f()` in `Module/File.swift`.
    @Test func containerIsNamedAfterTheStoreFile() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let container = try NSPersistentContainer.makeTest(model: model, testName: "Suite/test case")
        #expect(container.name == "Suite_test_case")
        let file = try #require(container.persistentStoreCoordinator.persistentStores.first?.url)
        #expect(file.lastPathComponent == "Suite_test_case.store")
        // (Another test run on the machine may hold the plain name; a numbered one follows.)
        let byDefault = try NSPersistentContainer.makeTest(model: model)
        #expect(byDefault.name.hasPrefix("ModelActorKitTests_TestContainerTests.swift-containerIsNamedAfterTheStoreFile"))
        let stem = byDefault.persistentStoreCoordinator.persistentStores.first?.url?.deletingPathExtension().lastPathComponent
        #expect(byDefault.name == stem)
    }

    /// Parameterized cases share a `#function`: each gets a store of its own, and its
    /// container the numbered stem.
    @Test(arguments: [1, 2])
    func parameterizedCasesGetStoresOfTheirOwn(case n: Int) throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let first = try NSPersistentContainer.makeTest(model: model, testName: "shared name \(n)")
        let second = try NSPersistentContainer.makeTest(model: model, testName: "shared name \(n)")
        #expect(first.name.hasPrefix("shared_name_\(n)") && second.name.hasPrefix("shared_name_\(n)-"))
        #expect(first.name != second.name)
        for container in [first, second] {
            let url = try #require(container.persistentStoreCoordinator.persistentStores.first?.url)
            #expect(url.deletingPathExtension().lastPathComponent == container.name)
        }
    }

    @Test func folderThatCannotBeMadeIsATypedError() throws {
        let blocker = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pk-blocker-\(UUID().uuidString)")
        try Data("not a folder".utf8).write(to: blocker)
        defer { try? FileManager.default.removeItem(at: blocker) }
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let error = #expect(throws: TestContainerError.self) {
            _ = try NSPersistentContainer.makeTest(model: model, subDirectory: blocker.lastPathComponent + "/inner")
        }
        #expect(error?.kind == .cannotCreateFolder)
        #expect(error?.path.hasSuffix("inner") == true)
    }

    @Test func loadFailureIsATypedError() throws {
        // A relationship without an inverse: the model is invalid, so the store refuses it.
        let model = NSManagedObjectModel()
        let entity = NSEntityDescription(name: "Lonely")
        let r = NSRelationshipDescription(name: "friend")
        r.destinationEntity = entity
        entity.properties = [r]
        model.entities = [entity]
        let error = #expect(throws: TestContainerError.self) {
            _ = try NSPersistentContainer.makeTest(model: model)
        }
        #expect(error?.kind == .loadFailed)
    }
}
