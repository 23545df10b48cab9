import Foundation
import ModelActorKit
import Testing

final class StackTag: NSManagedObject {
    @Attribute var name: String = ""
}

/// One model per class list, and the one-call stack built on it.
@MainActor
@Suite("Runtime models and stacks")
struct RuntimeModelStackTests {
    @Test func theSameClassesGiveTheSameModel() throws {
        let a = try NSManagedObjectModel.makeRuntimeModel(Item.self, StackTag.self)
        let b = try NSManagedObjectModel.makeRuntimeModel([StackTag.self, Item.self])
        #expect(a === b)
        let other = try NSManagedObjectModel.makeRuntimeModel(StackTag.self)
        #expect(other !== a)
        let first = try NSPersistentContainer.makeRuntimeTest(modelTypes: Item.self, StackTag.self)
        let second = try NSPersistentContainer.makeRuntimeTest(modelTypes: Item.self, StackTag.self, testName: "second of the same classes")
        #expect(first.managedObjectModel === a && second.managedObjectModel === a)
    }

    @Test func aStackMergesBackgroundSavesIntoItsViewContext() async throws {
        let stack = try CDRuntimeModelStack(modelTypes: Item.self, StackTag.self)
        #expect(stack.model === (try NSManagedObjectModel.makeRuntimeModel(Item.self, StackTag.self)))
        #expect(stack.viewContext.automaticallyMergesChangesFromParent)
        #expect(stack.container.name.hasPrefix("ModelActorKitTests_RuntimeModelStackTests.swift-aStackMergesBackgroundSavesIntoItsViewContext"))
        let shown = StackTag(context: stack.viewContext)
        shown.name = "before"
        try stack.viewContext.save()
        let id = shown.objectID
        let background = stack.newBackgroundContext()
        try await background.perform {
            let tag = try #require(try background.existingObject(with: id) as? StackTag)
            tag.name = "after"
            try background.save()
        }
        await stack.viewContext.perform(schedule: .enqueued) {}
        #expect(shown.name == "after")
    }

    @Test func aProgramStackInMemory() async throws {
        let stack = try await CDRuntimeModelStack(modelTypes: [Item.self], name: "Items", storeURL: nil)
        #expect(stack.container.name == "Items")
        let context = stack.newBackgroundContext()
        let count = try await context.perform {
            _ = Item(context: context)
            try context.save()
            return try context.count(for: Item.fetchRequest())
        }
        #expect(count == 1)
        #expect(stack.container.persistentStoreCoordinator.persistentStores.first?.type == NSInMemoryStoreType)
    }
}
