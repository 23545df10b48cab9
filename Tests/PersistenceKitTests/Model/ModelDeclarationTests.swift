import Foundation
import Testing
@testable import PersistenceKit

/// The model-level declarations of inheritance, ordering and versioning, built by hand.
@Suite("Entity inheritance, ordering and versioning declarations")
struct ModelDeclarationTests {
    /// Shape (abstract: name) ← Circle (radius), with a Canvas holding shapes.
    static func shapes(circleRenamedFrom: String? = nil, ordered: Bool = false) -> NSManagedObjectModel {
        let shape = NSEntityDescription(name: "Shape", properties: [NSAttributeDescription(name: "name", type: .stringAttributeType)])
        shape.isAbstract = true
        let radius = NSAttributeDescription(name: "radius", type: .doubleAttributeType)
        radius.renamingIdentifier = circleRenamedFrom
        let circle = NSEntityDescription(name: "Circle", properties: [radius])
        shape.subentities = [circle]
        let canvas = NSEntityDescription(name: "Canvas")
        let shapes = NSRelationshipDescription(name: "shapes")
        shapes.maxCount = 0
        shapes.isOrdered = ordered
        shapes.destinationEntity = shape
        let canvasEnd = NSRelationshipDescription(name: "canvas")
        canvasEnd.destinationEntity = canvas
        shapes.inverseRelationship = canvasEnd
        canvasEnd.inverseRelationship = shapes
        canvas.properties = [shapes]
        shape.properties.append(canvasEnd)
        return NSManagedObjectModel(entities: [shape, circle, canvas])
    }

    @Test func subEntityInheritsPropertiesAheadOfItsOwn() throws {
        let model = Self.shapes()
        try model.validate()
        let shape = try #require(model.entitiesByName["Shape"])
        let circle = try #require(model.entitiesByName["Circle"])
        #expect(circle.superentity === shape)
        #expect(shape.subentities.map(\.name) == ["Circle"])
        #expect(shape.subentitiesByName["Circle"] === circle)
        #expect(circle.properties.map(\.name) == ["name", "canvas", "radius"])
        #expect(circle.propertiesByName["name"]?.entity === shape)
        #expect(circle.propertiesByName["radius"]?.entity === circle)
        #expect(circle.isKindOf(entity: shape))
        #expect(circle.isKindOf(entity: circle))
        #expect(!shape.isKindOf(entity: circle))
        #expect(shape.isAbstract)
        #expect(!circle.isAbstract)
    }

    @Test func inheritanceAbstractnessOrderAndVersioningCountInEquality() {
        #expect(Self.shapes() == Self.shapes())
        #expect(Self.shapes() != Self.shapes(ordered: true))
        #expect(Self.shapes() != Self.shapes(circleRenamedFrom: "size"))
        let flat = Self.shapes()
        flat.entitiesByName["Shape"]?.isAbstract = false
        #expect(flat != Self.shapes())
        let modified = Self.shapes()
        modified.entitiesByName["Circle"]?.versionHashModifier = "2"
        #expect(modified != Self.shapes())
        let renamed = Self.shapes()
        renamed.entitiesByName["Canvas"]?.renamingIdentifier = "Board"
        #expect(renamed != Self.shapes())
    }

    @Test func versionHashesCountModifiersButNotRenamingIdentifiers() {
        let plain = Self.shapes()
        let renamed = Self.shapes(circleRenamedFrom: "size")
        renamed.entitiesByName["Canvas"]?.renamingIdentifier = "Board"
        #expect(renamed.versionHash == plain.versionHash)
        #expect(renamed.layoutHash == plain.layoutHash)
        let modified = Self.shapes()
        modified.entitiesByName["Circle"]?.propertiesByName["radius"]?.versionHashModifier = "cm"
        #expect(modified.versionHash != plain.versionHash)
        #expect(modified.layoutHash != plain.layoutHash)
    }

    @Test func modelsWithoutTheNewDeclarationsKeepTheirHash() {
        let plain = NSEntityDescription(name: "Plain", properties: [NSAttributeDescription(name: "n", type: .integer64AttributeType)])
        let model = NSManagedObjectModel(entities: [plain])
        #expect(model.canonicalDescription == "entity Plain { attr n \(NSAttributeType.integer64AttributeType.rawValue) opt }")
    }

    @Test func aSubEntityOutsideTheModelIsReported() {
        let parent = NSEntityDescription(name: "Parent")
        let stray = NSEntityDescription(name: "Stray")
        parent.subentities = [stray]
        let model = NSManagedObjectModel(entities: [parent])
        #expect(throws: ModelError.self) { try model.validate() }
        do {
            try model.validate()
        } catch {
            #expect(error.kind == .unknownSubentity("Stray"))
            #expect(error.entity == "Parent")
        }
    }

    @Test func movingASubEntityLeavesItsFormerParent() {
        let a = NSEntityDescription(name: "A", properties: [NSAttributeDescription(name: "a", type: .stringAttributeType)])
        let b = NSEntityDescription(name: "B", properties: [NSAttributeDescription(name: "b", type: .stringAttributeType)])
        let c = NSEntityDescription(name: "C")
        a.subentities = [c]
        b.subentities = [c]
        #expect(a.subentities.isEmpty)
        #expect(c.superentity === b)
        #expect(c.properties.map(\.name) == ["b"])
        b.subentities = []
        #expect(c.superentity == nil)
        #expect(c.properties.isEmpty)
    }

    @Test func aPropertyRenamingIdentifierAndHashModifierAreKept() {
        let a = NSAttributeDescription(name: "title", type: .stringAttributeType)
        #expect(a.renamingIdentifier == nil)
        #expect(a.versionHashModifier == nil)
        a.renamingIdentifier = "name"
        a.versionHashModifier = "v2"
        #expect(a.renamingIdentifier == "name")
        #expect(a.versionHashModifier == "v2")
    }
}

final class MDArticle: NSManagedObject, VersionedEntity {
    static let renamingIdentifier: String? = "MDPost"
    static let versionHashModifier: String? = "2"
    static let renamingIdentifiers = ["headline": "title"]
    static let versionHashModifiers = ["body": "markdown", "missing": "ignored"]
    @Attribute var headline: String = ""
    @Attribute var body: String = ""
}

@Suite("Versioning identifiers declared by classes")
struct VersionedEntityTests {
    @Test func aClassDeclaresRenamingIdentifiersAndHashModifiers() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [MDArticle.self])
        let article = try #require(model.entitiesByName["MDArticle"])
        #expect(article.renamingIdentifier == "MDPost")
        #expect(article.versionHashModifier == "2")
        #expect(article.propertiesByName["headline"]?.renamingIdentifier == "title")
        #expect(article.propertiesByName["headline"]?.versionHashModifier == nil)
        #expect(article.propertiesByName["body"]?.versionHashModifier == "markdown")

        // The same model built by hand is equal.
        let headline = NSAttributeDescription(name: "headline", type: .stringAttributeType)
        headline.isOptional = false
        headline.defaultValue = ""
        headline.renamingIdentifier = "title"
        let body = NSAttributeDescription(name: "body", type: .stringAttributeType)
        body.isOptional = false
        body.defaultValue = ""
        body.versionHashModifier = "markdown"
        let entity = NSEntityDescription(name: "MDArticle", properties: [headline, body])
        entity.renamingIdentifier = "MDPost"
        entity.versionHashModifier = "2"
        #expect(NSManagedObjectModel(entities: [entity]) == model)
    }
}
