import Foundation
import PersistenceKit
import Testing

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

/// A relationship whose destination class is not given to the model.
final class MTOrphanLink: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "book") var cover: Cover?
}

/// A relationship whose inverse name does not exist on the destination.
final class MTBadInverseA: NSManagedObject {
    @Relationship(inverse: "nothingHere") var b: MTBadInverseB?
}

final class MTBadInverseB: NSManagedObject {
    @Attribute var name: String = ""
}

/// An inverse whose own destination is a third entity.
final class MTMisA: NSManagedObject {
    @Relationship(inverse: "owner") var items: Set<MTMisB>
}

final class MTMisB: NSManagedObject {
    @Relationship(inverse: "items") var owner: MTMisC?
}

final class MTMisC: NSManagedObject {
    @Relationship(inverse: "owner") var things: Set<MTMisB>
}

/// Two classes whose names collide as entity names.
enum MTFirstScope {
    final class MTSameName: NSManagedObject {
        @Attribute var a: String = ""
    }
}

enum MTSecondScope {
    final class MTSameName: NSManagedObject {
        @Attribute var b: String = ""
    }
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

@Suite struct ModelTests {
    // MARK: Helpers

    /// The bookshelf model, built by hand with the description API.
    static func handBuiltBookshelf() -> NSManagedObjectModel {
        func attr(_ name: String, _ type: NSAttributeType, optional: Bool, default value: Any? = nil, indexed: Bool = false)
            -> NSAttributeDescription
        {
            let a = NSAttributeDescription()
            a.name = name
            a.attributeType = type
            a.isOptional = optional
            a.defaultValue = value
            a.isIndexed = indexed
            return a
        }
        func rel(_ name: String, toMany: Bool, rule: NSDeleteRule) -> NSRelationshipDescription {
            let r = NSRelationshipDescription()
            r.name = name
            r.maxCount = toMany ? 0 : 1
            r.minCount = 0
            r.deleteRule = rule
            r.isOptional = true
            return r
        }
        let shelf = NSEntityDescription()
        shelf.name = "Shelf"
        let book = NSEntityDescription()
        book.name = "Book"
        let author = NSEntityDescription()
        author.name = "Author"
        let cover = NSEntityDescription()
        cover.name = "Cover"

        let shelfBooks = rel("books", toMany: true, rule: .cascadeDeleteRule)
        let bookShelf = rel("shelf", toMany: false, rule: .nullifyDeleteRule)
        let bookAuthors = rel("authors", toMany: true, rule: .nullifyDeleteRule)
        let bookCover = rel("cover", toMany: false, rule: .cascadeDeleteRule)
        let authorBooks = rel("books", toMany: true, rule: .denyDeleteRule)
        let coverBook = rel("book", toMany: false, rule: .nullifyDeleteRule)

        shelfBooks.destinationEntity = book
        shelfBooks.inverseRelationship = bookShelf
        bookShelf.destinationEntity = shelf
        bookShelf.inverseRelationship = shelfBooks
        bookAuthors.destinationEntity = author
        bookAuthors.inverseRelationship = authorBooks
        authorBooks.destinationEntity = book
        authorBooks.inverseRelationship = bookAuthors
        bookCover.destinationEntity = cover
        bookCover.inverseRelationship = coverBook
        coverBook.destinationEntity = book
        coverBook.inverseRelationship = bookCover

        shelf.properties = [attr("name", .stringAttributeType, optional: false, default: ""), shelfBooks]
        // Deliberately a different property order than the class declares.
        book.properties = [
            bookCover, bookAuthors, bookShelf,
            attr("published", .dateAttributeType, optional: true),
            attr("pages", .integer64AttributeType, optional: false, default: Int64(0), indexed: true),
            attr("title", .stringAttributeType, optional: false, default: ""),
        ]
        author.properties = [attr("name", .stringAttributeType, optional: false, default: ""), authorBooks]
        cover.properties = [attr("color", .stringAttributeType, optional: false, default: "white"), coverBook]

        let model = NSManagedObjectModel()
        model.entities = [cover, author, book, shelf]
        return model
    }

    static func entity(_ name: String, _ properties: [NSPropertyDescription]) -> NSEntityDescription {
        NSEntityDescription(name: name, properties: properties)
    }

    static func attribute(_ name: String, _ type: NSAttributeType) -> NSAttributeDescription {
        NSAttributeDescription(name: name, type: type)
    }

    /// Links two relationships as each other's inverse.
    static func pair(
        _ a: NSRelationshipDescription, _ aDestination: NSEntityDescription,
        _ b: NSRelationshipDescription, _ bDestination: NSEntityDescription
    ) {
        a.destinationEntity = aDestination
        a.inverseRelationship = b
        b.destinationEntity = bDestination
        b.inverseRelationship = a
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

    /// Found in review: an entity built in code that names its class only by
    /// `managedObjectClassName` served `init(context:)` but not `entity()`.
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
        let byHand = Self.handBuiltBookshelf()
        try byHand.validate()
        #expect(fromClasses == byHand)
        #expect(fromClasses.versionHash == byHand.versionHash)
        #expect(fromClasses.versionHash.count == 16)
        #expect(fromClasses.versionHashString == byHand.versionHashString)
        #expect(Set(byHand.entitiesByName.keys) == ["Shelf", "Book", "Author", "Cover"])
    }

    @Test func classModelEqualsHandBuiltModelBeforeValidation() throws {
        // Equality must not depend on whether the hand-built model was validated yet.
        #expect(try Fixtures.model() == Self.handBuiltBookshelf())
        #expect(try Fixtures.model().versionHash == Self.handBuiltBookshelf().versionHash)
    }

    @Test func sealingKeepsTheVersionHash() throws {
        // A sealed model answers from the hash computed when it was sealed: it must be the
        // hash of the same canonical form an unsealed equal model computes on demand.
        let sealed = try Fixtures.model()
        let unsealed = Self.handBuiltBookshelf()
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
        let reference = Self.handBuiltBookshelf()
        let changed = Self.handBuiltBookshelf()
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
        let byHand = Self.handBuiltBookshelf()
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
        let small = Self.attribute("small", .integer16AttributeType)
        small.defaultValue = 12  // an Int literal for an Integer 16 attribute
        let ratio = Self.attribute("ratio", .doubleAttributeType)
        ratio.defaultValue = 3  // an Int for a Double
        let e = Self.entity("Thing", [small, ratio])
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

    // MARK: Model errors

    @Test func unknownDestinationFromClasses() {
        let error = #expect(throws: ModelError.self) {
            try NSManagedObjectModel(managedObjectClasses: [MTOrphanLink.self])
        }
        #expect(error?.kind == .unknownDestination("Cover"))
        #expect(error?.entity == "MTOrphanLink")
        #expect(error?.property == "cover")
        #expect(error?.description.contains("MTOrphanLink.cover") == true)
    }

    @Test func unknownDestinationByHand() {
        let stray = Self.entity("Stray", [])
        let link = NSRelationshipDescription(name: "link")
        let back = NSRelationshipDescription(name: "back")
        let a = Self.entity("A", [link])
        stray.properties = [back]
        Self.pair(link, stray, back, a)
        let model = NSManagedObjectModel(entities: [a])  // Stray is not in the model
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .unknownDestination("Stray"))
        #expect(error?.entity == "A")
        #expect(error?.property == "link")
    }

    @Test func relationshipWithoutDestination() {
        let link = NSRelationshipDescription(name: "link")
        let model = NSManagedObjectModel(entities: [Self.entity("A", [link])])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.entity == "A")
        #expect(error?.property == "link")
        if case .unknownDestination = error?.kind {} else { Issue.record("kind is \(String(describing: error?.kind))") }
    }

    @Test func missingInverse() {
        let b = Self.entity("B", [Self.attribute("name", .stringAttributeType)])
        let link = NSRelationshipDescription(name: "toB")
        link.destinationEntity = b
        let a = Self.entity("A", [link])
        let model = NSManagedObjectModel(entities: [a, b])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .missingInverse)
        #expect(error?.entity == "A")
        #expect(error?.property == "toB")
        #expect(error?.description.contains("A.toB") == true)
    }

    @Test func unknownInverseNameFromClasses() {
        let error = #expect(throws: ModelError.self) {
            try NSManagedObjectModel(managedObjectClasses: [MTBadInverseA.self, MTBadInverseB.self])
        }
        #expect(error?.kind == .unknownInverse("nothingHere"))
        #expect(error?.entity == "MTBadInverseA")
        #expect(error?.property == "b")
    }

    @Test func inverseOnAnotherEntity() {
        // A.toB -> B, but its inverse is C.toA.
        let toB = NSRelationshipDescription(name: "toB")
        let toA = NSRelationshipDescription(name: "toA")
        let a = Self.entity("A", [toB])
        let b = Self.entity("B", [])
        let c = Self.entity("C", [toA])
        toB.destinationEntity = b
        toB.inverseRelationship = toA
        toA.destinationEntity = a
        toA.inverseRelationship = toB
        let model = NSManagedObjectModel(entities: [a, b, c])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .mismatchedInverse("toA"))
        #expect(error?.entity == "A")
        #expect(error?.property == "toB")
    }

    @Test func inverseThatPointsElsewhere() {
        // A.first and A.second both name B.owner as inverse; B.owner points back at A.first only.
        let first = NSRelationshipDescription(name: "first")
        let second = NSRelationshipDescription(name: "second")
        let owner = NSRelationshipDescription(name: "owner")
        let a = Self.entity("A", [first, second])
        let b = Self.entity("B", [owner])
        Self.pair(first, b, owner, a)
        second.destinationEntity = b
        second.inverseRelationship = owner
        let model = NSManagedObjectModel(entities: [a, b])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .mismatchedInverse("owner"))
        #expect(error?.entity == "A")
        #expect(error?.property == "second")
    }

    @Test func duplicateEntityNames() {
        let model = NSManagedObjectModel(entities: [
            Self.entity("Dup", [Self.attribute("x", .stringAttributeType)]),
            Self.entity("Other", []),
            Self.entity("Dup", [Self.attribute("y", .stringAttributeType)]),
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .duplicateEntity)
        #expect(error?.entity == "Dup")
        #expect(error?.property == nil)
    }

    @Test func duplicatePropertyNames() {
        let model = NSManagedObjectModel(entities: [
            Self.entity("E", [
                Self.attribute("a", .stringAttributeType), Self.attribute("x", .stringAttributeType),
                Self.attribute("x", .integer64AttributeType),
            ])
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .duplicateProperty)
        #expect(error?.entity == "E")
        #expect(error?.property == "x")
    }

    @Test func attributeAndRelationshipWithTheSameName() {
        let b = Self.entity("B", [])
        let rel = NSRelationshipDescription(name: "x")
        let back = NSRelationshipDescription(name: "back")
        let a = Self.entity("A", [Self.attribute("x", .stringAttributeType), rel])
        b.properties = [back]
        Self.pair(rel, b, back, a)
        let model = NSManagedObjectModel(entities: [a, b])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .duplicateProperty)
        #expect(error?.entity == "A")
        #expect(error?.property == "x")
    }

    @Test(arguments: [NSAttributeType.transformableAttributeType, .undefinedAttributeType, .objectIDAttributeType])
    func unsupportedAttributeType(type: NSAttributeType) {
        let model = NSManagedObjectModel(entities: [
            Self.entity("E", [Self.attribute("ok", .stringAttributeType), Self.attribute("blob", type)])
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .unsupportedType(type))
        #expect(error?.entity == "E")
        #expect(error?.property == "blob")
        #expect(type.isSupported == false)
    }

    @Test func supportedTypesAreSupported() {
        let supported: [NSAttributeType] = [
            .integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .doubleAttributeType,
            .floatAttributeType, .booleanAttributeType, .stringAttributeType, .dateAttributeType,
            .binaryDataAttributeType, .UUIDAttributeType, .URIAttributeType, .decimalAttributeType,
        ]
        for t in supported { #expect(t.isSupported, "\(t)") }
        let model = NSManagedObjectModel(entities: [
            Self.entity("E", supported.enumerated().map { Self.attribute("a\($0.offset)", $0.element) })
        ])
        #expect(throws: Never.self) { try model.validate() }
    }

    @Test func invalidDefaultValues() {
        func check(_ type: NSAttributeType, _ value: Any, sourceLocation: SourceLocation = #_sourceLocation) {
            let a = Self.attribute("value", type)
            a.defaultValue = value
            let model = NSManagedObjectModel(entities: [Self.entity("E", [a])])
            let error = #expect(throws: ModelError.self, sourceLocation: sourceLocation) { try model.validate() }
            #expect(error?.kind == .invalidDefaultValue, sourceLocation: sourceLocation)
            #expect(error?.entity == "E", sourceLocation: sourceLocation)
            #expect(error?.property == "value", sourceLocation: sourceLocation)
        }
        check(.stringAttributeType, 42)
        check(.integer16AttributeType, 100_000)  // does not fit in 16 bits
        check(.integer32AttributeType, "7")
        check(.booleanAttributeType, "yes")
        check(.dateAttributeType, "2024-01-01")
        check(.UUIDAttributeType, "11111111-2222-3333-4444-555555555555")
        check(.URIAttributeType, "https://example.com")
        check(.binaryDataAttributeType, [UInt8]([1, 2]))
    }

    @Test func defaultValueSetBeforeTheType() throws {
        // The default may be given before the type; validation must judge it against the final type.
        let a = NSAttributeDescription()
        a.name = "n"
        a.defaultValue = 5
        a.attributeType = .integer32AttributeType
        let model = NSManagedObjectModel(entities: [Self.entity("E", [a])])
        try model.validate()
        #expect(a.defaultValue as? Int32 == 5)
    }

    @Test func inconsistentCounts() {
        let many = NSRelationshipDescription(name: "many")
        let one = NSRelationshipDescription(name: "one")
        let a = Self.entity("A", [many])
        let b = Self.entity("B", [one])
        Self.pair(many, b, one, a)
        many.minCount = 3
        many.maxCount = 2
        let model = NSManagedObjectModel(entities: [a, b])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .invalidCount)
        #expect(error?.entity == "A")
        #expect(error?.property == "many")
    }

    @Test func emptyEntityName() {
        let model = NSManagedObjectModel(entities: [NSEntityDescription()])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .emptyName)
    }

    @Test func nsManagedObjectItselfIsNotAnEntity() {
        let error = #expect(throws: ModelError.self) {
            try NSManagedObjectModel(managedObjectClasses: [NSManagedObject.self])
        }
        #expect(error?.kind == .unsupportedClass)
    }

    @Test func errorsAreReportedInEntityNameOrder() {
        // Both entities are broken; the report must be deterministic: the first by name.
        let model = NSManagedObjectModel(entities: [
            Self.entity("Zed", [Self.attribute("t", .transformableAttributeType)]),
            Self.entity("Alpha", [Self.attribute("u", .undefinedAttributeType)]),
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.entity == "Alpha")
        #expect(error?.property == "u")
    }

    @Test func validModelStaysValidAfterRepeatedValidation() throws {
        let model = Self.handBuiltBookshelf()
        try model.validate()
        try model.validate()
        #expect(try Fixtures.model() == model)
    }

    @Test func inverseWithAnotherDestinationFromClasses() {
        let error = #expect(throws: ModelError.self) {
            try NSManagedObjectModel(managedObjectClasses: [MTMisA.self, MTMisB.self, MTMisC.self])
        }
        #expect(error?.kind == .mismatchedInverse("owner"))
        #expect(error?.entity == "MTMisA")
        #expect(error?.property == "items")
    }

    @Test func duplicateEntityNamesFromClasses() {
        let error = #expect(throws: ModelError.self) {
            try NSManagedObjectModel(managedObjectClasses: [MTFirstScope.MTSameName.self, MTSecondScope.MTSameName.self])
        }
        #expect(error?.kind == .duplicateEntity)
        #expect(error?.entity == "MTSameName")
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
@Suite struct PropertyEntityReferenceTests {
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
