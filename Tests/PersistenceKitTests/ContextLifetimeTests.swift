import Foundation
import Testing
@testable import PersistenceKit

final class LTNode: NSManagedObject {
    @Attribute var value: Int64 = 0
    @Relationship(inverse: "previous") var next: LTNode?
    @Relationship(inverse: "next") var previous: LTNode?
}

@Suite struct ContextLifetimeTests {
    static func container() throws -> NSPersistentContainer {
        let container = NSPersistentContainer(
            name: "lifetime", managedObjectModel: try NSManagedObjectModel(managedObjectClasses: [LTNode.self]))
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// Related objects hold each other; releasing a context must free them (no leak) and must
    /// not recurse down a long chain (no stack overflow).
    @Test func releasingAContextFreesALongChainOfRelatedObjects() throws {
        let container = try Self.container()
        weak var first: LTNode?
        do {
            let context = container.newBackgroundContext()
            try context.performAndWait {
                var previous: LTNode?
                for i in 0..<50_000 {
                    let node = LTNode(context: context)
                    node.value = Int64(i)
                    node.previous = previous
                    if previous == nil { first = node }
                    previous = node
                }
                try context.save()
            }
            #expect(first != nil)
        }
        #expect(first == nil, "objects of a released context must be freed")
    }

    @Test func anObjectKeptAfterItsContextIsGoneTraps() async {
        await #expect(processExitsWith: .failure) {
            let container = try ContextLifetimeTests.container()
            var kept: LTNode?
            do {
                let context = container.newBackgroundContext()
                context.performAndWait { kept = LTNode(context: context) }
            }
            _ = kept?.value
        }
    }
}

/// The short delete-rule names of DESIGN.md's examples declare the same model.
final class DRShortOwner: NSManagedObject {
    @Relationship(inverse: "owner", deleteRule: .cascade) var parts: Set<DRShortPart>
}

final class DRShortPart: NSManagedObject {
    @Relationship(inverse: "parts", deleteRule: .nullify) var owner: DRShortOwner?
}

@Test func shortDeleteRuleNamesAreTheCoreDataRules() throws {
    let model = try NSManagedObjectModel(managedObjectClasses: [DRShortOwner.self, DRShortPart.self])
    #expect(model.entitiesByName["DRShortOwner"]?.relationshipsByName["parts"]?.deleteRule == .cascadeDeleteRule)
    #expect(model.entitiesByName["DRShortPart"]?.relationshipsByName["owner"]?.deleteRule == .nullifyDeleteRule)
    #expect(NSDeleteRule.deny == .denyDeleteRule && NSDeleteRule.noAction == .noActionDeleteRule)
}
