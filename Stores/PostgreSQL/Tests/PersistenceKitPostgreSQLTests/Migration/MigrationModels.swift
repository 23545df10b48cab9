import Foundation
import PersistenceKit
import Testing

/// Model versions written as an Xcode model bundle in a temporary folder, so that a model
/// read from it finds its older versions (as lightweight migration needs).
struct MigrationModels {
    let folder: URL
    let bundle: URL

    /// A bundle holding `versions` (name → `<entity>` XML), `current` its current version.
    init(_ versions: [(String, String)], current: String) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-pg-migration-\(UUID().uuidString)")
        bundle = folder.appendingPathComponent("Library.xcdatamodeld")
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
    }

    /// The model of version `name` alone (it knows no other version).
    func version(_ name: String) throws -> NSManagedObjectModel {
        try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("\(name).xcdatamodel"))
    }

    /// The bundle's current version, which knows the others.
    func current() throws -> NSManagedObjectModel { try NSManagedObjectModel(modelFileAt: bundle) }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    /// Version 1: writers (an indexed Integer 16 age, a nickname) and their books (a unique
    /// title, an Integer 16 page count), linked writer ↔ books.
    static let v1 = """
        <entity name="Writer">
            <attribute name="name" attributeType="String" defaultValueString=""/>
            <attribute name="age" optional="YES" attributeType="Integer 16" indexed="YES"/>
            <attribute name="nickname" optional="YES" attributeType="String"/>
            <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="writer" inverseEntity="Book"/>
        </entity>
        <entity name="Book">
            <attribute name="title" attributeType="String" defaultValueString=""/>
            <attribute name="pages" optional="YES" attributeType="Integer 16"/>
            <relationship name="writer" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Writer" inverseName="books" inverseEntity="Writer"/>
            <uniquenessConstraints><uniquenessConstraint><constraint value="title"/></uniquenessConstraint></uniquenessConstraints>
        </entity>
        """

    /// Version 2: `Writer` renamed `Author` and `name` renamed `fullName` (renaming
    /// identifiers), `age` and `pages` widened to Integer 64, `nickname` removed, a new
    /// optional `email` and a new required `rank` with a default, the to-one renamed
    /// `author`, and a new entity `Shelf`.
    static let v2 = """
        <entity name="Author" elementID="Writer">
            <attribute name="fullName" attributeType="String" defaultValueString="" elementID="name"/>
            <attribute name="age" optional="YES" attributeType="Integer 64" indexed="YES"/>
            <attribute name="email" optional="YES" attributeType="String"/>
            <attribute name="rank" attributeType="Integer 32" defaultValueString="7"/>
            <relationship name="books" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Book" inverseName="author" inverseEntity="Book"/>
        </entity>
        <entity name="Book">
            <attribute name="title" attributeType="String" defaultValueString=""/>
            <attribute name="pages" optional="YES" attributeType="Integer 64"/>
            <relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author" elementID="writer"/>
            <uniquenessConstraints><uniquenessConstraint><constraint value="title"/></uniquenessConstraint></uniquenessConstraints>
        </entity>
        <entity name="Shelf">
            <attribute name="label" attributeType="String" defaultValueString="new"/>
        </entity>
        """

    /// Version 3: version 2 with a book's author to-many (`authors`, still renamed from
    /// version 1's `writer`), so writers and books are many to many.
    static let v3 = v2.replacingOccurrences(
        of: "inverseName=\"author\" inverseEntity=\"Book\"", with: "inverseName=\"authors\" inverseEntity=\"Book\""
    ).replacingOccurrences(
        of: "<relationship name=\"author\" optional=\"YES\" maxCount=\"1\"",
        with: "<relationship name=\"authors\" optional=\"YES\" toMany=\"YES\""
    )

    /// Version 3 with a writer's books turned to-one (`book`): refused by a writer holding
    /// two books.
    static let booksToOne = v3.replacingOccurrences(
        of: "<relationship name=\"books\" optional=\"YES\" toMany=\"YES\" deletionRule=\"Nullify\" destinationEntity=\"Book\"",
        with: "<relationship name=\"book\" optional=\"YES\" maxCount=\"1\" elementID=\"books\" deletionRule=\"Nullify\" destinationEntity=\"Book\""
    ).replacingOccurrences(of: "<relationship name=\"authors\" optional=\"YES\" toMany=\"YES\"", with: "<relationship name=\"authors\" optional=\"YES\" maxCount=\"1\"")
        .replacingOccurrences(of: "inverseName=\"books\" inverseEntity=\"Author\"", with: "inverseName=\"book\" inverseEntity=\"Author\"")

    /// Version 1 with `age` turned into a string: a change lightweight migration refuses.
    static let ageAsText = v1.replacingOccurrences(of: "attributeType=\"Integer 16\" indexed", with: "attributeType=\"String\" indexed")

    /// Version 2 with `age` required and without a default: refused only by the stored
    /// writer without an age, after the step's other statements ran.
    static let ageRequired = v2.replacingOccurrences(
        of: "<attribute name=\"age\" optional=\"YES\" attributeType=\"Integer 64\"", with: "<attribute name=\"age\" attributeType=\"Integer 64\"")
}
