import Foundation
import Testing
import PersistenceKit

/// Exit-test output, hand-built entities, and containers and models for the tests of misuse
/// and bad input.
enum MisuseSupport {
    /// The captured standard error of an exit test, as text.
    static func stderr(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    /// A container whose stores were never loaded.
    static func unloadedContainer(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try Fixtures.model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        return container
    }

    /// A model that fails validation (a transformable attribute).
    static func invalidModel() -> NSManagedObjectModel {
        let blob = NSAttributeDescription(name: "blob", type: .transformableAttributeType)
        return NSManagedObjectModel(entities: [NSEntityDescription(name: "Thing", properties: [blob])])
    }

    /// An entity "Item" with an optional string "name", built by hand.
    static func itemEntity(_ name: String = "Item") -> NSEntityDescription {
        let n = NSAttributeDescription(name: "name", type: .stringAttributeType)
        n.isOptional = true
        return NSEntityDescription(name: name, properties: [n])
    }
}
