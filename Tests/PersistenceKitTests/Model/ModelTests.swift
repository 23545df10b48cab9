import Foundation
import Testing
@testable import PersistenceKit

/// The short delete-rule names of DESIGN.md's examples declare the same model.
final class DRShortOwner: NSManagedObject {
    @Relationship(inverse: "owner", deleteRule: .cascade) var parts: Set<DRShortPart>
}

final class DRShortPart: NSManagedObject {
    @Relationship(inverse: "parts", deleteRule: .nullify) var owner: DRShortOwner?
}

final class MTPair: NSManagedObject {
    @Attribute var a: String = ""
    @Attribute var b: String = ""
}

// Model classes used only by ModelTests.

/// Every supported attribute type, required (with a default) and optional (no default),
/// plus the transient and indexed flags.
final class MTEveryType: NSManagedObject {
    @Attribute var i16: Int16 = 7
    @Attribute var i32: Int32 = -8
    @Attribute var i64: Int64 = 9_000_000_000
    @Attribute var int: Int = 11
    @Attribute var double: Double = 2.5
    @Attribute var float: Float = 1.25
    @Attribute var bool: Bool = true
    @Attribute var string: String = "hello"
    @Attribute var date: Date = Date(timeIntervalSince1970: 1_000)
    @Attribute var data: Data = Data([1, 2, 3])
    @Attribute var uuid: UUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
    @Attribute var uri: URL = URL(string: "https://example.com/x")!
    @Attribute var decimal: Decimal = Decimal(string: "12.75")!

    @Attribute var optI16: Int16?
    @Attribute var optI32: Int32?
    @Attribute var optI64: Int64?
    @Attribute var optDouble: Double?
    @Attribute var optFloat: Float?
    @Attribute var optBool: Bool?
    @Attribute var optString: String?
    @Attribute var optDate: Date?
    @Attribute var optData: Data?
    @Attribute var optUUID: UUID?
    @Attribute var optURI: URL?
    @Attribute var optDecimal: Decimal?

    @Attribute(.transient) var scratch: String = ""
    @Attribute(.indexed) var rank: Int32 = 0
    @Attribute(.indexed, .transient) var both: Int64?
}

/// Relationship options: counts, required to-one, delete rules.
final class MTParent: NSManagedObject {
    @Relationship(inverse: "parent", deleteRule: .cascadeDeleteRule, minCount: 1, maxCount: 3) var children: Set<MTChild>
}

final class MTChild: NSManagedObject {
    @Relationship(inverse: "children", deleteRule: .noActionDeleteRule, isOptional: false) var parent: MTParent?
}

/// Properties inherited from a superclass.
class MTBase: NSManagedObject {
    @Attribute var created: Date?
    @Attribute(.indexed) var serial: Int64 = 0
}

final class MTDerived: MTBase {
    @Attribute var name: String = ""
}

/// Classes used only by the `entity()` tests, so no other test's model claims them.
final class EntityLookupItem: NSManagedObject {
    @Attribute var title: String = ""
}

final class EntityLookupOrphan: NSManagedObject {
    @Attribute var title: String = ""
}

/// A class whose entity is built in code and names it only by `managedObjectClassName`.
final class EntityLookupByName: NSManagedObject {}

/// Models built from classes and by hand: equality and version hashes, entities, attributes
/// and relationships as declared, and the lifetime of a model and its entities in use.
@Suite("Models built from classes and by hand") struct ModelTests {
    /// The same entity with its two properties the other way round.
    static func reorderedPair() -> NSManagedObjectModel {
        let pair = NSEntityDescription(name: "MTPair")
        pair.properties = ["b", "a"].map { name in
            let attribute = NSAttributeDescription(name: name, type: .stringAttributeType)
            attribute.isOptional = false
            attribute.defaultValue = ""
            return attribute
        }
        return NSManagedObjectModel(entities: [pair])
    }

    @Test func changingAModelInUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let book = container.managedObjectModel.entitiesByName["Book"]
            book?.attributesByName["title"]?.isIndexed = true
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Book.title"), "stderr: \(text)")
    }

    /// A request's `entityName` names the entity it fetches, also when only `entity` was set.
    @Test func entityNameFollowsTheEntity() throws {
        let model = try Fixtures.model()
        let request = NSFetchRequest<Book>()
        #expect(request.entityName == nil)
        request.entity = model.entitiesByName["Book"]
        #expect(request.entityName == "Book")
        #expect(NSFetchRequest<NSFetchRequestResult>(entityName: "Shelf").entityName == "Shelf")
        #expect(Book.fetchRequest().entityName == "Book")
        request.entityName = "Shelf"  // replaces the entity set before
        #expect(request.entity == nil && request.entityName == "Shelf")
    }

    @Test func shortDeleteRuleNamesAreTheCoreDataRules() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [DRShortOwner.self, DRShortPart.self])
        #expect(model.entitiesByName["DRShortOwner"]?.relationshipsByName["parts"]?.deleteRule == .cascadeDeleteRule)
        #expect(model.entitiesByName["DRShortPart"]?.relationshipsByName["owner"]?.deleteRule == .nullifyDeleteRule)
        #expect(NSDeleteRule.deny == .denyDeleteRule && NSDeleteRule.noAction == .noActionDeleteRule)
    }

    // MARK: An entity in use joins a second model

    /// Putting an entity that a coordinator already uses into another model must trap (it
    /// mutates a model in use). Were the second model to take the entity over silently and
    /// re-index it, the first container's saved rows would become invisible (count 0) and its
    /// own object IDs would be refused by existingObject(with:) as "another coordinator".
    @Test func anEntityInUseCannotJoinASecondModel() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let item = MisuseSupport.itemEntity("M")
            let first = try OTSupport.container(model: NSManagedObjectModel(entities: [item]), name: "first")
            let context = first.newBackgroundContext()
            try context.performAndWait {
                NSEntityDescription.insertNewObject(forEntityName: "M", into: context).setValue("saved", forKey: "name")
                try context.save()
            }
            _ = NSManagedObjectModel(entities: [MisuseSupport.itemEntity("A"), item])
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("'M'"), "stderr: \(text)")
    }

    // MARK: A released model frees its entities

    /// destinationEntity and inverseRelationship are strong, so entities related to each
    /// other form a reference cycle: every model with a relationship leaks all of its
    /// entity and property descriptions (a model without relationships is freed).
    @Test func theEntitiesOfAModelWithRelationshipsAreFreed() throws {
        weak var book: NSEntityDescription?
        weak var shelfRelationship: NSPropertyDescription?
        do {
            let model = try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self, Cover.self])
            book = model.entitiesByName["Book"]
            shelfRelationship = book?.propertiesByName["shelf"]
        }
        #expect(book == nil)
        #expect(shelfRelationship == nil)
    }

    /// The same through a whole container that was used and released.
    @Test func theModelOfAReleasedContainerIsFreed() throws {
        weak var entity: NSEntityDescription?
        weak var coordinator: NSPersistentStoreCoordinator?
        do {
            let container = try Fixtures.container()
            coordinator = container.persistentStoreCoordinator
            entity = container.managedObjectModel.entitiesByName["Shelf"]
            let context = container.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).shelf = Shelf(context: context)
                try context.save()
            }
        }
        #expect(coordinator == nil)
        #expect(entity == nil)
    }

    /// Stores keep values by position: a model equal but for its property order is refused
    /// by a store made with the other order, which would otherwise open with values swapped.
    @Test func aModelWithItsPropertiesReorderedDoesNotOpenTheStore() throws {
        let folder = try TemporaryFolder()
        let declared = try NSManagedObjectModel(managedObjectClasses: [MTPair.self])
        let reordered = Self.reorderedPair()
        #expect(declared == reordered, "equality ignores the order, as in Core Data")
        #expect(declared.versionHash == reordered.versionHash)
        #expect(declared.layoutHash != reordered.layoutHash)
        let store = try FileStore.open(at: folder.storeURL, model: declared)
        let context = try FSSupport.context(for: store, model: declared)
        try context.performAndWait {
            let pair = MTPair(context: context)
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

    /// An attribute's default set before its type is kept: the model does not depend on the
    /// order of the two setters.
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

    // MARK: Two routes, one model

    /// `Book.entity()`, as in Core Data: the entity of the class in the loaded model.
    @Test func entityOfAClassComesFromTheLoadedModel() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [EntityLookupItem.self])
        let container = NSPersistentContainer(name: "EntityLookup", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        let entity = EntityLookupItem.entity()
        #expect(entity === model.entitiesByName["EntityLookupItem"])
        let context = container.newBackgroundContext()
        let count = try context.performAndWait {
            let item = EntityLookupItem(entity: EntityLookupItem.entity(), insertInto: context)
            item.title = "made from entity()"
            try context.save()
            return try context.count(for: EntityLookupItem.fetchRequest())
        }
        #expect(count == 1)
    }

    /// An entity built in code that names its class only by `managedObjectClassName` serves
    /// `entity()` as well as `init(context:)`.
    @Test func entityOfAClassNamedByAHandBuiltEntity() throws {
        let entity = NSEntityDescription()
        entity.name = "EntityLookupByName"
        entity.managedObjectClassName = "EntityLookupByName"
        entity.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType)]
        let model = NSManagedObjectModel()
        model.entities = [entity]
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: NSInMemoryStoreType, at: nil)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
        context.performAndWait {
            #expect(EntityLookupByName(context: context).entity === entity)
            #expect(EntityLookupByName.entity() === entity)
        }
    }

    @Test func entityOfAClassNoLoadedModelHasTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = EntityLookupOrphan.entity()
        }
    }

    @Test func classModelEqualsHandBuiltModel() throws {
        let fromClasses = try Fixtures.model()
        let byHand = Fixtures.handBuiltBookshelf()
        try byHand.validate()
        #expect(fromClasses == byHand)
        #expect(fromClasses.versionHash == byHand.versionHash)
        #expect(fromClasses.versionHash.count == 16)
        #expect(fromClasses.versionHashString == byHand.versionHashString)
        #expect(Set(byHand.entitiesByName.keys) == ["Shelf", "Book", "Author", "Cover"])
    }

    @Test func classModelEqualsHandBuiltModelBeforeValidation() throws {
        // Equality must not depend on whether the hand-built model was validated yet.
        #expect(try Fixtures.model() == Fixtures.handBuiltBookshelf())
        #expect(try Fixtures.model().versionHash == Fixtures.handBuiltBookshelf().versionHash)
    }

    @Test func sealingKeepsTheVersionHash() throws {
        // A sealed model answers from the hash computed when it was sealed: it must be the
        // hash of the same canonical form an unsealed equal model computes on demand.
        let sealed = try Fixtures.model()
        let unsealed = Fixtures.handBuiltBookshelf()
        _ = NSPersistentStoreCoordinator(managedObjectModel: sealed)
        #expect(sealed.isSealed && !unsealed.isSealed)
        #expect(sealed.versionHash == unsealed.versionHash)
        let hex = sealed.versionHashString
        #expect(hex == unsealed.versionHashString)
        #expect(hex.count == 32 && hex.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(hex == sealed.versionHash.map { String(format: "%02x", $0) }.joined())
    }

    @Test func twoClassModelsAreEqual() throws {
        let a = try Fixtures.model()
        let b = try NSManagedObjectModel(managedObjectClasses: [Cover.self, Author.self, Book.self, Shelf.self])
        #expect(a == b)
        #expect(a.versionHash == b.versionHash)
    }

    @Test(arguments: ["deleteRule", "indexed", "optional", "default", "maxCount", "type", "transient", "name"])
    func anyDifferenceChangesEqualityAndHash(change: String) throws {
        let reference = Fixtures.handBuiltBookshelf()
        let changed = Fixtures.handBuiltBookshelf()
        let book = try #require(changed.entitiesByName["Book"])
        let pages = try #require(book.attributesByName["pages"])
        let shelfRel = try #require(book.relationshipsByName["shelf"])
        let authors = try #require(book.relationshipsByName["authors"])
        switch change {
        case "deleteRule": shelfRel.deleteRule = .denyDeleteRule
        case "indexed": pages.isIndexed = false
        case "optional": pages.isOptional = true
        case "default": pages.defaultValue = Int64(5)
        case "maxCount": authors.maxCount = 4
        case "type": pages.attributeType = .integer32AttributeType
        case "transient": pages.isTransient = true
        case "name": pages.name = "pageCount"
        default: Issue.record("unknown change \(change)")
        }
        #expect(reference != changed)
        #expect(reference.versionHash != changed.versionHash)
    }

    @Test func classNamesDoNotCountForEquality() throws {
        let model = try Fixtures.model()
        let byHand = Fixtures.handBuiltBookshelf()
        #expect(model.entitiesByName["Book"]?.managedObjectClass == Book.self)
        #expect(model.entitiesByName["Book"]?.managedObjectClassName == "Book")
        #expect(byHand.entitiesByName["Book"]?.managedObjectClass == NSManagedObject.self)
        #expect(model == byHand)
    }

    // MARK: Attributes

    @Test func attributeTypesFromClasses() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [MTEveryType.self])
        let e = try #require(model.entitiesByName["MTEveryType"])
        let a = e.attributesByName
        let expected: [String: NSAttributeType] = [
            "i16": .integer16AttributeType, "i32": .integer32AttributeType, "i64": .integer64AttributeType,
            "int": .integer64AttributeType, "double": .doubleAttributeType, "float": .floatAttributeType,
            "bool": .booleanAttributeType, "string": .stringAttributeType, "date": .dateAttributeType,
            "data": .binaryDataAttributeType, "uuid": .UUIDAttributeType, "uri": .URIAttributeType,
            "decimal": .decimalAttributeType,
            "optI16": .integer16AttributeType, "optI32": .integer32AttributeType, "optI64": .integer64AttributeType,
            "optDouble": .doubleAttributeType, "optFloat": .floatAttributeType, "optBool": .booleanAttributeType,
            "optString": .stringAttributeType, "optDate": .dateAttributeType, "optData": .binaryDataAttributeType,
            "optUUID": .UUIDAttributeType, "optURI": .URIAttributeType, "optDecimal": .decimalAttributeType,
            "scratch": .stringAttributeType, "rank": .integer32AttributeType, "both": .integer64AttributeType,
        ]
        #expect(Set(a.keys) == Set(expected.keys))
        for (name, type) in expected {
            #expect(a[name]?.attributeType == type, "attribute \(name)")
        }
        // Declaration order is storage order.
        #expect(e.properties.map(\.name).prefix(4) == ["i16", "i32", "i64", "int"])
        #expect(e.properties.count == expected.count)
        #expect(e.relationshipsByName.isEmpty)
    }

    @Test func optionalityComesFromTheSwiftType() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [MTEveryType.self])
        let a = try #require(model.entitiesByName["MTEveryType"]).attributesByName
        for name in ["i16", "i32", "i64", "int", "double", "float", "bool", "string", "date", "data", "uuid", "uri", "decimal"] {
            #expect(a[name]?.isOptional == false, "\(name) should be required")
        }
        for name in ["optI16", "optI32", "optI64", "optDouble", "optFloat", "optBool", "optString", "optDate", "optData",
            "optUUID", "optURI", "optDecimal", "both"]
        {
            #expect(a[name]?.isOptional == true, "\(name) should be optional")
            #expect(a[name]?.defaultValue == nil, "\(name) should have no default")
        }
    }

    @Test func defaultValuesComeFromTheInitialValues() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [MTEveryType.self])
        let a = try #require(model.entitiesByName["MTEveryType"]).attributesByName
        #expect(a["i16"]?.defaultValue as? Int16 == 7)
        #expect(a["i32"]?.defaultValue as? Int32 == -8)
        #expect(a["i64"]?.defaultValue as? Int64 == 9_000_000_000)
        #expect(a["int"]?.defaultValue as? Int64 == 11)
        #expect(a["double"]?.defaultValue as? Double == 2.5)
        #expect(a["float"]?.defaultValue as? Float == 1.25)
        #expect(a["bool"]?.defaultValue as? Bool == true)
        #expect(a["string"]?.defaultValue as? String == "hello")
        #expect(a["date"]?.defaultValue as? Date == Date(timeIntervalSince1970: 1_000))
        #expect(a["data"]?.defaultValue as? Data == Data([1, 2, 3]))
        #expect(a["uuid"]?.defaultValue as? UUID == UUID(uuidString: "11111111-2222-3333-4444-555555555555"))
        #expect(a["uri"]?.defaultValue as? URL == URL(string: "https://example.com/x"))
        #expect(a["decimal"]?.defaultValue as? Decimal == Decimal(string: "12.75"))
        #expect(a["scratch"]?.defaultValue as? String == "")
        #expect(a["rank"]?.defaultValue as? Int32 == 0)
    }

    @Test func transientAndIndexedFlags() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [MTEveryType.self])
        let a = try #require(model.entitiesByName["MTEveryType"]).attributesByName
        #expect(a["scratch"]?.isTransient == true)
        #expect(a["scratch"]?.isIndexed == false)
        #expect(a["rank"]?.isIndexed == true)
        #expect(a["rank"]?.isTransient == false)
        #expect(a["both"]?.isIndexed == true)
        #expect(a["both"]?.isTransient == true)
        #expect(a["string"]?.isTransient == false)
        #expect(a["string"]?.isIndexed == false)
        let book = try #require(Fixtures.model().entitiesByName["Book"])
        #expect(book.attributesByName["pages"]?.isIndexed == true)
        #expect(book.attributesByName["title"]?.isIndexed == false)
    }

    @Test func handBuiltAttributeDefaultsConvertToTheType() throws {
        let small = Fixtures.attribute("small", .integer16AttributeType)
        small.defaultValue = 12  // an Int literal for an Integer 16 attribute
        let ratio = Fixtures.attribute("ratio", .doubleAttributeType)
        ratio.defaultValue = 3  // an Int for a Double
        let e = Fixtures.entity("Thing", [small, ratio])
        let model = NSManagedObjectModel(entities: [e])
        try model.validate()
        #expect(small.defaultValue as? Int16 == 12)
        #expect(ratio.defaultValue as? Double == 3.0)
        #expect(small.isOptional == true, "NSAttributeDescription is optional by default, as in Core Data")
        #expect(small.isTransient == false)
        #expect(small.isIndexed == false)
    }

    // MARK: Relationships

    @Test func relationshipsOfTheBookshelf() throws {
        let model = try Fixtures.model()
        let shelf = try #require(model.entitiesByName["Shelf"])
        let book = try #require(model.entitiesByName["Book"])
        let author = try #require(model.entitiesByName["Author"])
        let cover = try #require(model.entitiesByName["Cover"])

        let shelfBooks = try #require(shelf.relationshipsByName["books"])
        let bookShelf = try #require(book.relationshipsByName["shelf"])
        let bookAuthors = try #require(book.relationshipsByName["authors"])
        let authorBooks = try #require(author.relationshipsByName["books"])
        let bookCover = try #require(book.relationshipsByName["cover"])
        let coverBook = try #require(cover.relationshipsByName["book"])

        // One-to-many.
        #expect(shelfBooks.destinationEntity === book)
        #expect(shelfBooks.inverseRelationship === bookShelf)
        #expect(shelfBooks.isToMany)
        #expect(shelfBooks.deleteRule == .cascadeDeleteRule)
        #expect(shelfBooks.minCount == 0)
        #expect(shelfBooks.maxCount == 0)
        #expect(shelfBooks.isOptional)
        #expect(shelfBooks.entity === shelf)
        #expect(bookShelf.destinationEntity === shelf)
        #expect(bookShelf.inverseRelationship === shelfBooks)
        #expect(!bookShelf.isToMany)
        #expect(bookShelf.maxCount == 1)
        #expect(bookShelf.deleteRule == .nullifyDeleteRule)

        // Many-to-many.
        #expect(bookAuthors.destinationEntity === author)
        #expect(bookAuthors.inverseRelationship === authorBooks)
        #expect(bookAuthors.isToMany)
        #expect(authorBooks.destinationEntity === book)
        #expect(authorBooks.inverseRelationship === bookAuthors)
        #expect(authorBooks.isToMany)
        #expect(authorBooks.deleteRule == .denyDeleteRule)

        // One-to-one.
        #expect(bookCover.destinationEntity === cover)
        #expect(bookCover.inverseRelationship === coverBook)
        #expect(!bookCover.isToMany)
        #expect(bookCover.deleteRule == .cascadeDeleteRule)
        #expect(coverBook.destinationEntity === book)
        #expect(coverBook.inverseRelationship === bookCover)
        #expect(!coverBook.isToMany)
        #expect(coverBook.deleteRule == .nullifyDeleteRule)
        #expect(!coverBook.isOrdered)

        #expect(book.relationships(forDestination: shelf).map(\.name) == ["shelf"])
        #expect(Set(book.relationshipsByName.keys) == ["shelf", "authors", "cover"])
        #expect(Set(book.attributesByName.keys) == ["title", "pages", "published"])
        #expect(book.propertiesByName.count == 6)
    }

    @Test func relationshipCountsRequiredAndRules() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [MTParent.self, MTChild.self])
        let children = try #require(model.entitiesByName["MTParent"]?.relationshipsByName["children"])
        let parent = try #require(model.entitiesByName["MTChild"]?.relationshipsByName["parent"])
        #expect(children.minCount == 1)
        #expect(children.maxCount == 3)
        #expect(children.isToMany)
        #expect(children.deleteRule == .cascadeDeleteRule)
        #expect(children.isOptional)
        #expect(parent.isOptional == false)
        #expect(parent.minCount == 0)
        #expect(parent.maxCount == 1)
        #expect(!parent.isToMany)
        #expect(parent.deleteRule == .noActionDeleteRule)
        #expect(parent.destinationEntity?.name == "MTParent")
        #expect(children.destinationEntity?.name == "MTChild")
    }

    @Test func handBuiltRelationshipDefaults() {
        let r = NSRelationshipDescription()
        #expect(r.maxCount == 1)
        #expect(r.minCount == 0)
        #expect(!r.isToMany)
        #expect(r.deleteRule == .nullifyDeleteRule)
        #expect(r.isOptional)
        #expect(r.destinationEntity == nil)
        #expect(r.inverseRelationship == nil)
        r.maxCount = 0
        #expect(r.isToMany)
        r.maxCount = 5
        #expect(r.isToMany)
    }

    @Test func inheritedPropertiesComeFirst() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [MTDerived.self])
        let e = try #require(model.entitiesByName["MTDerived"])
        #expect(e.properties.map(\.name) == ["created", "serial", "name"])
        #expect(e.attributesByName["created"]?.attributeType == .dateAttributeType)
        #expect(e.attributesByName["created"]?.isOptional == true)
        #expect(e.attributesByName["serial"]?.isIndexed == true)
        #expect(e.attributesByName["name"]?.isOptional == false)
        #expect(e.managedObjectClass == MTDerived.self)
    }
}

/// A property description refers to its entity without keeping it alive; the reference
/// must read `nil` (never trap) once the property left the entity or the entity is gone.
@Suite("A property's reference to its entity") struct PropertyEntityReferenceTests {
    @Test func aPropertyKnowsItsEntityWhileItBelongsToIt() {
        let title = NSAttributeDescription(name: "title", type: .stringAttributeType)
        let entity = NSEntityDescription(name: "Book", properties: [title])
        #expect(title.entity === entity)
    }

    @Test func aRemovedPropertyForgetsItsEntity() {
        let title = NSAttributeDescription(name: "title", type: .stringAttributeType)
        let pages = NSAttributeDescription(name: "pages", type: .integer64AttributeType)
        let entity = NSEntityDescription(name: "Book", properties: [title, pages])
        entity.properties = [pages]
        #expect(title.entity == nil)
        #expect(pages.entity === entity)
    }

    @Test func aPropertyOutlivingItsEntityReadsNil() {
        let title = NSAttributeDescription(name: "title", type: .stringAttributeType)
        do {
            let entity = NSEntityDescription(name: "Book", properties: [title])
            #expect(title.entity === entity)
        }
        #expect(title.entity == nil)
        title.name = "heading"  // setters check mutability through `entity`: must not trap
        #expect(title.name == "heading")
    }

    @Test func aPropertyMovedToAnotherEntityNamesTheNewOne() {
        let title = NSAttributeDescription(name: "title", type: .stringAttributeType)
        let book = NSEntityDescription(name: "Book", properties: [title])
        let note = NSEntityDescription(name: "Note", properties: [title])
        book.properties = []
        #expect(title.entity === note, "leaving Book does not clear the link to Note")
    }
}
