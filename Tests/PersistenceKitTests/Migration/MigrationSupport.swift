import Foundation
import Testing
@testable import PersistenceKit

/// Model versions written as Xcode model files, for the migration tests.
enum MigrationSupport {
    /// A `.xcdatamodeld` bundle in `folder` holding `versions` (name → `<entity>` XML), with
    /// `current` as its current version.
    static func bundle(in folder: URL, versions: [(String, String)], current: String) throws -> URL {
        let bundle = folder.appendingPathComponent("Library.xcdatamodeld")
        try? FileManager.default.removeItem(at: bundle)
        for (name, entities) in versions {
            let version = bundle.appendingPathComponent("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: version, withIntermediateDirectories: true)
            let xml = """
                <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
                <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="\(name)">
                \(entities)
                </model>
                """
            try Data(xml.utf8).write(to: version.appendingPathComponent("contents"))
        }
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>\(current).xcdatamodel</string></dict></plist>
            """
        try Data(plist.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        return bundle
    }

    /// Version 1: writers with an age (Integer 16) and a to-one favourite book.
    static let v1 = """
        <entity name="Writer">
            <attribute name="name" attributeType="String" defaultValueString=""/>
            <attribute name="age" optional="YES" attributeType="Integer 16"/>
            <attribute name="nickname" optional="YES" attributeType="String"/>
            <relationship name="favourite" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Book" inverseName="fan" inverseEntity="Book"/>
        </entity>
        <entity name="Book">
            <attribute name="title" attributeType="String" defaultValueString=""/>
            <attribute name="price" optional="YES" attributeType="Float"/>
            <relationship name="fan" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Writer" inverseName="favourite" inverseEntity="Writer"/>
        </entity>
        """

    /// Version 2: `Writer` renamed `Author` (renaming identifier), `age` widened to Integer 64,
    /// `nickname` removed, a new optional `email`, `name` renamed `fullName`; `price` widened
    /// to Double; a new entity `Shelf`.
    static let v2 = """
        <entity name="Author" elementID="Writer">
            <attribute name="fullName" attributeType="String" defaultValueString="" elementID="name"/>
            <attribute name="age" optional="YES" attributeType="Integer 64"/>
            <attribute name="email" optional="YES" attributeType="String"/>
            <relationship name="favourite" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Book" inverseName="fan" inverseEntity="Book"/>
        </entity>
        <entity name="Book">
            <attribute name="title" attributeType="String" defaultValueString=""/>
            <attribute name="price" optional="YES" attributeType="Double"/>
            <relationship name="fan" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="favourite" inverseEntity="Author"/>
        </entity>
        <entity name="Shelf">
            <attribute name="label" attributeType="String" defaultValueString="new"/>
        </entity>
        """

    /// Version 3: `age` becomes required with a default; the favourite book becomes to-many
    /// (`favourites`, its inverse `fans`); a new required `rating` with a default.
    static let v3 = """
        <entity name="Author" elementID="Writer">
            <attribute name="fullName" attributeType="String" defaultValueString="" elementID="name"/>
            <attribute name="age" attributeType="Integer 64" defaultValueString="18"/>
            <attribute name="email" optional="YES" attributeType="String"/>
            <relationship name="favourites" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="fans" inverseEntity="Book" elementID="favourite"/>
        </entity>
        <entity name="Book">
            <attribute name="title" attributeType="String" defaultValueString=""/>
            <attribute name="price" optional="YES" attributeType="Double"/>
            <attribute name="rating" attributeType="Integer 32" defaultValueString="3"/>
            <relationship name="fans" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Author" inverseName="favourites" inverseEntity="Author" elementID="fan"/>
        </entity>
        <entity name="Shelf">
            <attribute name="label" attributeType="String" defaultValueString="new"/>
        </entity>
        """

    /// A container on the file store at `url` with `model`.
    static func container(at url: URL, model: NSManagedObjectModel, staged: NSStagedMigrationManager? = nil) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: "Library", managedObjectModel: model)
        let description = NSPersistentStoreDescription(url: url)
        description.stagedMigrationManager = staged
        container.persistentStoreDescriptions = [description]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// Saves two writers (one with a favourite book, one without an age) with model v1.
    /// Returns the URIs of the writers, by name.
    @discardableResult
    static func seedVersion1(at url: URL, model: NSManagedObjectModel) throws -> [String: URL] {
        let container = try container(at: url, model: model)
        let context = container.newBackgroundContext()
        let uris = try context.performAndWait {
            let ada = NSManagedObject(entity: try #require(model.entitiesByName["Writer"]), insertInto: context)
            ada.setValue("Ada", forKey: "name")
            ada.setValue(Int16(36), forKey: "age")
            ada.setValue("countess", forKey: "nickname")
            let book = NSManagedObject(entity: try #require(model.entitiesByName["Book"]), insertInto: context)
            book.setValue("Notes", forKey: "title")
            book.setValue(Float(2.5), forKey: "price")
            ada.setValue(book, forKey: "favourite")
            let bob = NSManagedObject(entity: try #require(model.entitiesByName["Writer"]), insertInto: context)
            bob.setValue("Bob", forKey: "name")
            try context.save()
            return ["Ada": ada.objectID.uriRepresentation(), "Bob": bob.objectID.uriRepresentation()]
        }
        try FSSupport.close(container)
        return uris
    }
}
