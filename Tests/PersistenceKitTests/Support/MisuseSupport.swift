import Foundation
import Testing
import PersistenceKit

/// Containers and models for tests of bad input: an in-memory container of any model, one
/// whose stores were never loaded, and a model that fails validation.
enum BITSupport {
    static func container(model: NSManagedObjectModel, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
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

    /// The captured standard error of an exit test, as text.
    static func stderr(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }
}

/// Exit-test output and hand-built entities for the misuse tests.
enum MisuseSupport {
    static func stderr(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    /// An entity "Item" with an optional string "name", built by hand.
    static func itemEntity(_ name: String = "Item") -> NSEntityDescription {
        let n = NSAttributeDescription(name: "name", type: .stringAttributeType)
        n.isOptional = true
        return NSEntityDescription(name: name, properties: [n])
    }
}
