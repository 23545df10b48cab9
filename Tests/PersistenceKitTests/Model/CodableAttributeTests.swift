import Foundation
import Testing
@testable import PersistenceKit

struct CAConfig: CodableAttribute, Equatable {
    var retryCount = 0
    var tags: [String] = []
}

/// The same stored bytes read by a later version of the type that needs a new field.
struct CAConfigV2: CodableAttribute, Equatable {
    var retryCount: Int
    var tags: [String]
    var owner: String
}

struct CAColor: TransformableAttribute, Equatable {
    static let transformerName = "CAColorTransformer"
    var hex: String
}

// @unchecked Sendable: no stored state, as ValueTransformer's contract asks.
final class CAColorTransformer: ValueTransformer, @unchecked Sendable {
    override func transformedValue(_ value: Any?) -> Any? { (value as? CAColor).map { Data("#\($0.hex)".utf8) } }
    override func reverseTransformedValue(_ value: Any?) -> Any? {
        guard let data = value as? Data, data.first == UInt8(ascii: "#") else { return nil }
        return CAColor(hex: String(decoding: data.dropFirst(), as: UTF8.self))
    }
}

final class CAItem: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute(storageMethod: .codable) var config: CAConfig? = nil
    @Attribute(storageMethod: .transformed(name: "CAColorTransformer")) var color: CAColor?
}

/// CAItem as a later version declares it: the config's type grew a required field.
final class CAItemV2: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute(storageMethod: .codable) var config: CAConfigV2? = nil
}

@Suite("Codable and transformed attribute storage")
struct CodableAttributeTests {
    init() {
        ValueTransformer.setValueTransformer(CAColorTransformer(), forName: CAColor.transformerName)
    }

    static func container(_ classes: [NSManagedObject.Type], url: URL, name: String = #function) throws -> NSPersistentContainer {
        let model = try NSManagedObjectModel(managedObjectClasses: classes)
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    @Test func theModelDescribesTheStorage() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [CAItem.self])
        let item = try #require(model.entitiesByName["CAItem"])
        let config = try #require(item.attributesByName["config"])
        #expect(config.attributeType == .binaryDataAttributeType)
        #expect(config.attributeValueClassName == "CAConfig")
        #expect(config.isOptional)
        let color = try #require(item.attributesByName["color"])
        #expect(color.attributeType == .transformableAttributeType)
        #expect(color.valueTransformerName == "CAColorTransformer")
        #expect(color.attributeValueClassName == "CAColor")
    }

    @Test func valuesRoundTripThroughAFileStoreAndReopen() throws {
        let folder = try TemporaryFolder()
        do {
            let container = try Self.container([CAItem.self], url: folder.storeURL)
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let item = CAItem(context: context)
                item.name = "a"
                item.config = CAConfig(retryCount: 3, tags: ["x", "y"])
                item.color = CAColor(hex: "ff8800")
                #expect(item.config == CAConfig(retryCount: 3, tags: ["x", "y"]))
                let empty = CAItem(context: context)
                empty.name = "b"
                try context.save()
            }
            try FSSupport.close(container)
        }
        let container = try Self.container([CAItem.self], url: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let request = CAItem.fetchRequest()
            request.sortDescriptors = [NSSortDescriptor(keyPath: \CAItem.name, ascending: true)]
            let items = try context.fetch(request)
            #expect(items.map(\.name) == ["a", "b"])
            #expect(items[0].config == CAConfig(retryCount: 3, tags: ["x", "y"]))
            #expect(items[0].color == CAColor(hex: "ff8800"))
            #expect(items[1].config == nil)
            #expect(items[1].color == nil)
            // Key-value coding gives and takes the values themselves.
            #expect(items[0].value(forKey: "config") as? CAConfig == CAConfig(retryCount: 3, tags: ["x", "y"]))
            #expect(items[0].value(forKey: "color") as? CAColor == CAColor(hex: "ff8800"))
            items[1].setValue(CAConfig(retryCount: 1), forKey: "config")
            items[1].setValue(CAColor(hex: "000000"), forKey: "color")
            #expect(items[1].config?.retryCount == 1)
            #expect(items[1].color?.hex == "000000")
            // Equal values store equal bytes: writing the same value is no change.
            items[0].config = CAConfig(retryCount: 3, tags: ["x", "y"])
            #expect(!items[0].hasPersistentChangedValues)
            #expect(try items[0].decodedValue(forKey: "config", as: CAConfig.self) == CAConfig(retryCount: 3, tags: ["x", "y"]))
            #expect(try items[0].decodedValue(forKey: "color", as: CAColor.self) == CAColor(hex: "ff8800"))
        }
    }

    @Test func bytesThatNoLongerDecodeGiveATypedError() throws {
        // Bytes version 1 of the type stored, read by version 2, which needs an `owner`.
        let model = try NSManagedObjectModel(managedObjectClasses: [CAItemV2.self])
        let container = NSPersistentContainer(name: "v2", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let item = CAItemV2(context: reader)
            // The version 1 bytes, as the store held them.
            let stored = try CodableAttributeCoding.encoder.encode(CAConfig(retryCount: 2, tags: []))
            item.setPrimitiveValue(stored, forKey: "config")
            #expect(item.config == nil)  // the property reads nil
            let error = #expect(throws: AttributeDecodingError.self) {
                try item.decodedValue(forKey: "config", as: CAConfigV2.self)
            }
            #expect(error?.entity == "CAItemV2")
            #expect(error?.key == "config")
            #expect(error?.valueType == "CAConfigV2")
            #expect(error?.description.contains("does not decode as CAConfigV2") == true)
        }
    }

    @Test func transformedBytesThatNoLongerTransformBackGiveATypedError() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [CAItem.self])
        let container = NSPersistentContainer(name: "t", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        let context = container.newBackgroundContext()
        context.performAndWait {
            let item = CAItem(context: context)
            item.setPrimitiveValue(Data("not a color".utf8), forKey: "color")
            #expect(item.color == nil)
            let error = #expect(throws: AttributeDecodingError.self) { try item.decodedValue(forKey: "color", as: CAColor.self) }
            #expect(error?.key == "color")
        }
    }

    @Test func aTransformableAttributeWithoutATransformerNameIsAModelError() {
        let blob = NSAttributeDescription(name: "blob", type: .transformableAttributeType)
        let model = NSManagedObjectModel(entities: [NSEntityDescription(name: "E", properties: [blob])])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .unsupportedType(.transformableAttributeType))
        blob.valueTransformerName = "CAColorTransformer"
        #expect(throws: Never.self) { try model.validate() }
    }
}
