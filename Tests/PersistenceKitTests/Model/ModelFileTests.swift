import Foundation
import Testing
@testable import PersistenceKit

/// Xcode model files (`.xcdatamodeld` bundles, `.xcdatamodel` folders, their `contents` XML)
/// read into models equal to the ones built in code, with typed errors that name the file,
/// line, entity and property at fault.
@Suite("Reading Xcode model files") struct ModelFileTests {
    static func fixture(_ name: String) throws -> URL {
        let folder = try #require(Bundle.module.url(forResource: "ModelFileFixtures", withExtension: nil))
        return folder.appendingPathComponent(name)
    }

    /// A `contents` file holding `xml`, in a folder of its own.
    static func contents(_ xml: String, in folder: borrowing TemporaryFolder) throws -> URL {
        let url = folder.url.appendingPathComponent("contents")
        try Data(xml.utf8).write(to: url)
        return url
    }

    static func model(entities: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
        \(entities)
        </model>
        """
    }

    // MARK: Bundles and versions

    @Test func aBundleReadsItsCurrentVersion() throws {
        let model = try #require(NSManagedObjectModel(contentsOf: try Self.fixture("Bookshelf.xcdatamodeld")))
        #expect(Set(model.entities.map(\.name)) == ["Author", "Book", "Cover", "Shelf"])
        #expect(model.versionIdentifiers == ["2"])
    }

    @Test func aVersionFolderReadsThatVersion() throws {
        let url = try Self.fixture("Bookshelf.xcdatamodeld/Bookshelf.xcdatamodel")
        let model = try NSManagedObjectModel(modelFileAt: url)
        #expect(Set(model.entities.map(\.name)) == ["Book", "Shelf"])
        #expect(model.versionIdentifiers == ["1"])
        let direct = try NSManagedObjectModel(modelFileAt: url.appendingPathComponent("contents"))
        #expect(direct == model)
    }

    @Test func theModelFileEqualsTheModelBuiltFromClasses() throws {
        let read = try NSManagedObjectModel(modelFileAt: try Self.fixture("Bookshelf.xcdatamodeld"))
        #expect(read == (try Fixtures.model()))
        #expect(read.versionHash == (try Fixtures.model()).versionHash)
        let older = try NSManagedObjectModel(modelFileAt: try Self.fixture("Bookshelf.xcdatamodeld/Bookshelf.xcdatamodel"))
        #expect(older != (try Fixtures.model()))
    }

    @Test func withoutClassesObjectsAreGeneric() throws {
        let model = try #require(NSManagedObjectModel(contentsOf: try Self.fixture("Bookshelf.xcdatamodeld")))
        let book = try #require(model.entitiesByName["Book"])
        #expect(book.managedObjectClass == NSManagedObject.self)
        #expect(book.managedObjectClassName == "Book", "the leading dot of 'current product module' is dropped")
    }

    @Test func classesRepresentTheirEntitiesAndDataRoundTrips() throws {
        let url = try Self.fixture("Bookshelf.xcdatamodeld")
        let model = try NSManagedObjectModel(modelFileAt: url, managedObjectClasses: [Shelf.self, Book.self, Author.self, Cover.self])
        #expect(model.entitiesByName["Book"]?.managedObjectClass == Book.self)
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "Read from XML"
            let book = Book(context: context)
            book.title = "Contents"
            book.pages = 12
            book.shelf = shelf
            try context.save()
        }
        try FSSupport.close(container)

        let reopened = try FSSupport.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: url, managedObjectClasses: [Shelf.self, Book.self, Author.self, Cover.self]))
        let reader = reopened.newBackgroundContext()
        try reader.performAndWait {
            let books = try reader.fetch(NSFetchRequest<Book>(entityName: "Book"))
            #expect(books.map(\.title) == ["Contents"])
            #expect(books.first?.pages == 12)
            #expect(books.first?.shelf?.name == "Read from XML")
        }
        try FSSupport.close(reopened)
    }

    // MARK: Everything a model file declares

    @Test func everyDeclarationIsRead() throws {
        let model = try NSManagedObjectModel(modelFileAt: try Self.fixture("Catalog.xcdatamodel"))
        #expect(model.versionIdentifiers == ["catalog-3"])
        let item = try #require(model.entitiesByName["Item"])
        let novel = try #require(model.entitiesByName["Novel"])
        let magazine = try #require(model.entitiesByName["Magazine"])
        let rack = try #require(model.entitiesByName["Rack"])

        #expect(item.isAbstract)
        #expect(item.versionHashModifier == "v2")
        #expect(Set(item.subentities.map(\.name)) == ["Novel", "Magazine"])
        #expect(novel.superentity === item)
        #expect(novel.renamingIdentifier == "Book")
        #expect(novel.properties.map(\.name) == ["code", "price", "added", "shelf", "pages", "rating", "signed", "title"])
        #expect(item.managedObjectClassName == "CatalogItem")
        #expect(item.uniquenessConstraints.map { $0.compactMap { $0 as? String } } == [["code"]])

        let attributes = novel.attributesByName
        #expect(attributes["price"]?.attributeType == .decimalAttributeType)
        #expect(attributes["price"]?.defaultValue as? Decimal == Decimal(string: "9.99"))
        #expect(attributes["added"]?.defaultValue as? Date == Date(timeIntervalSinceReferenceDate: 0))
        #expect(attributes["added"]?.isOptional == true)
        #expect(attributes["code"]?.isOptional == false)
        #expect(attributes["pages"]?.attributeType == .integer32AttributeType)
        #expect(attributes["pages"]?.defaultValue as? Int32 == 100)
        #expect(attributes["pages"]?.isIndexed == true, "a compound fetch index indexes its first element")
        #expect(attributes["rating"]?.defaultValue as? Double == 2.5)
        #expect(attributes["signed"]?.defaultValue as? Bool == false)
        #expect(attributes["title"]?.defaultValue as? String == "Untitled")
        #expect(attributes["title"]?.renamingIdentifier == "name")
        #expect(attributes["title"]?.versionHashModifier == "renamed")

        let magazineAttributes = magazine.attributesByName
        #expect(magazineAttributes["issue"]?.attributeType == .integer16AttributeType)
        #expect(magazineAttributes["cover"]?.attributeType == .binaryDataAttributeType)
        #expect(magazineAttributes["site"]?.attributeType == .URIAttributeType)
        #expect(magazineAttributes["serial"]?.attributeType == .UUIDAttributeType)
        #expect(magazineAttributes["weight"]?.defaultValue as? Float == 0.25)
        #expect(magazineAttributes["views"]?.isTransient == true)
        let location = try #require(magazineAttributes["location"] as? NSCompositeAttributeDescription)
        #expect(location.elements.map(\.name) == ["aisle", "bay"])
        #expect(location.elements.first?.attributeType == .integer16AttributeType)

        let derived = try #require(rack.attributesByName["itemCount"] as? NSDerivedAttributeDescription)
        #expect(derived.derivationExpression?.keyPath == "items.@count")
        let tagline = try #require(rack.attributesByName["tagline"])
        #expect(tagline.attributeType == .transformableAttributeType)
        #expect(tagline.valueTransformerName == "NSSecureUnarchiveFromData")
        #expect(tagline.attributeValueClassName == "NSString")
        #expect(ModelFileBuilder.derivation("sum:(items.price)").function == "sum:")
        #expect(ModelFileBuilder.derivation("sum:(items.price)").arguments?.first?.keyPath == "items.price")

        let items = try #require(rack.relationshipsByName["items"])
        #expect(items.isToMany && items.isOrdered)
        #expect(items.maxCount == 50)
        #expect(items.deleteRule == .cascadeDeleteRule)
        #expect(items.destinationEntity === item)
        #expect(items.inverseRelationship === item.relationshipsByName["shelf"])
        let shelf = try #require(novel.relationshipsByName["shelf"])
        #expect(!shelf.isToMany && shelf.isOptional)
        #expect(shelf.destinationEntity === rack)
        try model.validate()
    }

    @Test func aModelFileWithInheritanceOrderAndConstraintsRoundTripsData() throws {
        let url = try Self.fixture("Catalog.xcdatamodel")
        let model = try NSManagedObjectModel(modelFileAt: url)
        let folder = try TemporaryFolder()
        let container = try FSSupport.container(at: folder.storeURL, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let rack = NSManagedObject(entity: try #require(model.entitiesByName["Rack"]), insertInto: context)
            rack.setValue("front", forKey: "label")
            let novel = NSManagedObject(entity: try #require(model.entitiesByName["Novel"]), insertInto: context)
            novel.setValue("N-1", forKey: "code")
            novel.setValue("Dune", forKey: "title")
            let magazine = NSManagedObject(entity: try #require(model.entitiesByName["Magazine"]), insertInto: context)
            magazine.setValue("M-1", forKey: "code")
            rack.setValue(NSOrderedSet(array: [magazine, novel]), forKey: "items")
            try context.save()
            // The abstract parent's constraint on `code` holds across the family.
            let duplicate = NSManagedObject(entity: try #require(model.entitiesByName["Novel"]), insertInto: context)
            duplicate.setValue("N-1", forKey: "code")
            #expect(throws: (any Error).self) { try context.save() }
            context.rollback()
            let sibling = NSManagedObject(entity: try #require(model.entitiesByName["Magazine"]), insertInto: context)
            sibling.setValue("N-1", forKey: "code")
            #expect(throws: (any Error).self) { try context.save() }
            context.rollback()
        }
        try FSSupport.close(container)

        let reopened = try FSSupport.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: url))
        let reader = reopened.newBackgroundContext()
        try reader.performAndWait {
            let items = try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Item"))
            #expect(Set(items.map(\.entity.name)) == ["Novel", "Magazine"], "a fetch of the parent returns sub-entity objects")
            let rack = try #require(try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Rack")).first)
            let ordered = try #require(rack.value(forKey: "items") as? NSOrderedSet)
            #expect(ordered.array.compactMap { ($0 as? NSManagedObject)?.value(forKey: "code") as? String } == ["M-1", "N-1"])
            #expect(rack.value(forKey: "itemCount") as? Int64 == 2, "the derived count is kept at save")
        }
        try FSSupport.close(reopened)
    }

    // MARK: Typed errors

    @Test func anUnknownAttributeTypeNamesItsLineEntityAndProperty() throws {
        let folder = try TemporaryFolder()
        let url = try Self.contents(
            Self.model(entities: """
                <entity name="Note">
                    <attribute name="body" attributeType="Text"/>
                </entity>
                """), in: folder)
        let error = #expect(throws: ModelFileError.self) { try NSManagedObjectModel(modelFileAt: url) }
        #expect(error?.kind == .unknownAttributeType("Text"))
        #expect(error?.entity == "Note")
        #expect(error?.property == "body")
        #expect(error?.line == 4)
        #expect(error?.description.contains("Integer 16") == true)
        #expect(NSManagedObjectModel(contentsOf: url) == nil)
    }

    @Test func anUnknownDestinationIsTyped() throws {
        let folder = try TemporaryFolder()
        let url = try Self.contents(
            Self.model(entities: """
                <entity name="Note">
                    <relationship name="folder" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Folder" inverseName="notes"/>
                </entity>
                """), in: folder)
        let error = #expect(throws: ModelFileError.self) { try NSManagedObjectModel(modelFileAt: url) }
        #expect(error?.kind == .unknownDestination("Folder"))
        #expect(error?.property == "folder")
    }

    @Test func aMissingInverseIsReportedByModelValidation() throws {
        let folder = try TemporaryFolder()
        let url = try Self.contents(
            Self.model(entities: """
                <entity name="Note">
                    <relationship name="next" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Note"/>
                </entity>
                """), in: folder)
        let model = try NSManagedObjectModel(modelFileAt: url)
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .missingInverse)
    }

    @Test func badDefaultsRulesAndParentsAreTyped() throws {
        let cases: [(String, ModelFileError.Kind)] = [
            (#"<entity name="A"><attribute name="n" attributeType="Integer 16" defaultValueString="lots"/></entity>"#, .invalidDefaultValue("lots")),
            (#"<entity name="A"><relationship name="r" deletionRule="Destroy" destinationEntity="A" inverseName="r"/></entity>"#, .unknownDeleteRule("Destroy")),
            (#"<entity name="A" parentEntity="Base"/>"#, .unknownParentEntity("Base")),
            (#"<entity name="A"><attribute name="p" attributeType="Composite" composite="Point"/></entity>"#, .unknownComposite("Point")),
            (#"<entity name="A"><attribute attributeType="String"/></entity>"#, .missingXMLAttribute("name")),
            (#"<entity name="A"><uniquenessConstraints><uniquenessConstraint><constraint value="slug"/></uniquenessConstraint></uniquenessConstraints></entity>"#, .unknownProperty("slug")),
            (#"<entity name="A"><relationship name="r" toMany="YES" maxCount="many" destinationEntity="A" inverseName="r"/></entity>"#, .invalidNumber("maxCount")),
        ]
        for (entities, kind) in cases {
            let folder = try TemporaryFolder()
            let url = try Self.contents(Self.model(entities: entities), in: folder)
            let error = #expect(throws: ModelFileError.self, "\(entities)") { try NSManagedObjectModel(modelFileAt: url) }
            #expect(error?.kind == kind)
            #expect(error?.entity == "A")
        }
    }

    @Test func malformedXMLAndOtherDocumentsAreTyped() throws {
        let folder = try TemporaryFolder()
        let broken = try Self.contents("<model><entity name=\"A\"></model>", in: folder)
        let error = #expect(throws: ModelFileError.self) { try NSManagedObjectModel(modelFileAt: broken) }
        guard case .malformedXML = error?.kind else {
            Issue.record("expected malformedXML, got \(String(describing: error))")
            return
        }
        let other = try TemporaryFolder()
        let plist = try Self.contents("<plist version=\"1.0\"><dict/></plist>", in: other)
        #expect(throws: ModelFileError(.notAModel("plist"), url: plist, line: 1)) { try NSManagedObjectModel(modelFileAt: plist) }
    }

    @Test func missingFilesAndVersionsAreTyped() throws {
        let folder = try TemporaryFolder()
        let nowhere = folder.url.appendingPathComponent("Nothing.xcdatamodeld")
        #expect(throws: ModelFileError(.missingFile, url: nowhere)) { try NSManagedObjectModel(modelFileAt: nowhere) }

        let bundle = folder.url.appendingPathComponent("Lost.xcdatamodeld")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>Lost 3.xcdatamodel</string></dict></plist>
            """
        try Data(plist.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        let error = #expect(throws: ModelFileError.self) { try NSManagedObjectModel(modelFileAt: bundle) }
        #expect(error?.kind == .unknownCurrentVersion("Lost 3.xcdatamodel"))
    }
}
