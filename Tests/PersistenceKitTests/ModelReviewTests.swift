import Foundation
import Testing
@testable import PersistenceKit

// Model and validation rules that a review found broken, each with the scenario that showed it.

final class MRPair: NSManagedObject {
    @Attribute var a: String = ""
    @Attribute var b: String = ""
}

final class MRGroup: NSManagedObject {
    @Relationship(inverse: "group", minCount: 2) var members: Set<MRMember>
}

final class MRMember: NSManagedObject {
    @Relationship(inverse: "members") var group: MRGroup?
}

final class MRBox: NSManagedObject {
    @Relationship(inverse: "box", maxCount: 1) var things: Set<MRThing>
}

final class MRThing: NSManagedObject {
    @Relationship(inverse: "things") var box: MRBox?
}

@Suite struct ModelReviewTests {
    /// The same entity with its two properties the other way round.
    static func reorderedPair() -> NSManagedObjectModel {
        let pair = NSEntityDescription(name: "MRPair")
        pair.properties = ["b", "a"].map { name in
            let attribute = NSAttributeDescription(name: name, type: .stringAttributeType)
            attribute.isOptional = false
            attribute.defaultValue = ""
            return attribute
        }
        return NSManagedObjectModel(entities: [pair])
    }

    /// Stores keep values by position: a model equal but for its property order is refused
    /// by a store made with the other order (it used to open, values swapped).
    @Test func aModelWithItsPropertiesReorderedDoesNotOpenTheStore() throws {
        let folder = try TemporaryFolder()
        let declared = try NSManagedObjectModel(managedObjectClasses: [MRPair.self])
        let reordered = Self.reorderedPair()
        #expect(declared == reordered, "equality ignores the order, as in Core Data")
        #expect(declared.versionHash == reordered.versionHash)
        #expect(declared.layoutHash != reordered.layoutHash)
        let store = try FileStore.open(at: folder.storeURL, model: declared)
        let context = try FSSupport.context(for: store, model: declared)
        try context.performAndWait {
            let pair = MRPair(context: context)
            pair.a = "A"
            pair.b = "B"
            try context.save()
        }
        // Open in this process, and after closing.
        let shared = #expect(throws: FileStoreError.self) { _ = try FileStore.open(at: folder.storeURL, model: reordered) }
        #expect(shared?.kind == .modelMismatch(storeHash: declared.layoutHashString, modelHash: reordered.layoutHashString))
        try store.close()
        try? FileManager.default.removeItem(atPath: folder.storeURL.path + "-lock")
        let reopened = #expect(throws: FileStoreError.self) { _ = try FileStore.open(at: folder.storeURL, model: reordered) }
        #expect(reopened?.kind == .modelMismatch(storeHash: declared.layoutHashString, modelHash: reordered.layoutHashString))
        try? FileManager.default.removeItem(atPath: folder.storeURL.path + "-lock")
        let again = try FileStore.open(at: folder.storeURL, model: declared)
        try again.close()
    }

    /// Core Data applies a to-many's counts only when it has objects: an optional one may
    /// be empty whatever its minimum (saving used to fail with 1580).
    @Test func anOptionalToManyMayBeEmptyWhateverItsMinimum() throws {
        let container = try ContextLifetimeTests.container([MRGroup.self, MRMember.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let group = MRGroup(context: context)
            try context.save()
            group.$members.insert(MRMember(context: context))
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .validationRelationshipLacksMinimumCount)
            group.$members.insert(MRMember(context: context))
            try context.save()
        }
    }

    /// Setting an attribute's default before its type used to lose the default, so the
    /// model depended on the order of the two setters.
    @Test func aDefaultSetBeforeTheTypeIsKept() throws {
        func pages(typeFirst: Bool) -> NSManagedObjectModel {
            let attribute = NSAttributeDescription()
            attribute.name = "pages"
            attribute.isOptional = false
            if typeFirst { attribute.attributeType = .doubleAttributeType }
            attribute.defaultValue = 1.5
            if !typeFirst { attribute.attributeType = .doubleAttributeType }
            let entity = NSEntityDescription(name: "Page")
            entity.properties = [attribute]
            return NSManagedObjectModel(entities: [entity])
        }
        let typeFirst = pages(typeFirst: true)
        let defaultFirst = pages(typeFirst: false)
        #expect(typeFirst == defaultFirst)
        #expect(typeFirst.versionHash == defaultFirst.versionHash)
        let attribute = try #require(defaultFirst.entitiesByName["Page"]?.attributesByName["pages"])
        #expect(attribute.defaultValue as? Double == 1.5)
    }

    /// A `Set` property with maxCount 1 described a to-one, and reading it trapped.
    @Test func aSetPropertyWithMaxCountOneIsAModelError() throws {
        let model = try? NSManagedObjectModel(managedObjectClasses: [MRBox.self, MRThing.self])
        let error: ModelError?
        if let model {
            error = #expect(throws: ModelError.self) { try model.validate() }
        } else {
            error = #expect(throws: ModelError.self) { _ = try NSManagedObjectModel(managedObjectClasses: [MRBox.self, MRThing.self]) }
        }
        #expect(error?.kind == .invalidCount)
        #expect(error?.entity == "MRBox" && error?.property == "things")
    }
}
