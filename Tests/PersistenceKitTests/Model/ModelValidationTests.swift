import Foundation
import Testing
@testable import PersistenceKit

final class MTBox: NSManagedObject {
    @Relationship(inverse: "box", maxCount: 1) var things: Set<MTThing>
}

final class MTThing: NSManagedObject {
    @Relationship(inverse: "things") var box: MTBox?
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

/// A model is checked when it is built from classes, added to a coordinator or loaded by a
/// container; every problem is a `ModelError` naming the entity and property.
@Suite("Model validation") struct ModelValidationTests {
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

    @Test func invalidModelAddedToACoordinatorFails() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: MisuseSupport.invalidModel())
        let error = #expect(throws: CoreDataError.self) {
            try coordinator.addPersistentStore(type: NSInMemoryStoreType, at: nil)
        }
        #expect(error?.code == .coreData)
        let modelError = try #require(error?.underlying as? ModelError)
        #expect(modelError.kind == .unsupportedType(.transformableAttributeType))
        #expect(modelError.entity == "Thing")
        #expect(modelError.property == "blob")
        #expect(error?.description.contains("Thing.blob") == true)
        #expect(coordinator.persistentStores.isEmpty)

        let model = MisuseSupport.invalidModel()
        let direct = #expect(throws: CoreDataError.self) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(InMemoryStore(model: model))
        }
        #expect(direct?.code == .coreData)
    }

    /// A `Set` property with maxCount 1 described a to-one, and reading it trapped.
    @Test func aSetPropertyWithMaxCountOneIsAModelError() throws {
        let model = try? NSManagedObjectModel(managedObjectClasses: [MTBox.self, MTThing.self])
        let error: ModelError?
        if let model {
            error = #expect(throws: ModelError.self) { try model.validate() }
        } else {
            error = #expect(throws: ModelError.self) { _ = try NSManagedObjectModel(managedObjectClasses: [MTBox.self, MTThing.self]) }
        }
        #expect(error?.kind == .invalidCount)
        #expect(error?.entity == "MTBox" && error?.property == "things")
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
        let stray = Fixtures.entity("Stray", [])
        let link = NSRelationshipDescription(name: "link")
        let back = NSRelationshipDescription(name: "back")
        let a = Fixtures.entity("A", [link])
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
        let model = NSManagedObjectModel(entities: [Fixtures.entity("A", [link])])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.entity == "A")
        #expect(error?.property == "link")
        if case .unknownDestination = error?.kind {} else { Issue.record("kind is \(String(describing: error?.kind))") }
    }

    @Test func missingInverse() {
        let b = Fixtures.entity("B", [Fixtures.attribute("name", .stringAttributeType)])
        let link = NSRelationshipDescription(name: "toB")
        link.destinationEntity = b
        let a = Fixtures.entity("A", [link])
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
        let a = Fixtures.entity("A", [toB])
        let b = Fixtures.entity("B", [])
        let c = Fixtures.entity("C", [toA])
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
        let a = Fixtures.entity("A", [first, second])
        let b = Fixtures.entity("B", [owner])
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
            Fixtures.entity("Dup", [Fixtures.attribute("x", .stringAttributeType)]),
            Fixtures.entity("Other", []),
            Fixtures.entity("Dup", [Fixtures.attribute("y", .stringAttributeType)]),
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .duplicateEntity)
        #expect(error?.entity == "Dup")
        #expect(error?.property == nil)
    }

    @Test func duplicatePropertyNames() {
        let model = NSManagedObjectModel(entities: [
            Fixtures.entity("E", [
                Fixtures.attribute("a", .stringAttributeType), Fixtures.attribute("x", .stringAttributeType),
                Fixtures.attribute("x", .integer64AttributeType),
            ])
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .duplicateProperty)
        #expect(error?.entity == "E")
        #expect(error?.property == "x")
    }

    @Test func attributeAndRelationshipWithTheSameName() {
        let b = Fixtures.entity("B", [])
        let rel = NSRelationshipDescription(name: "x")
        let back = NSRelationshipDescription(name: "back")
        let a = Fixtures.entity("A", [Fixtures.attribute("x", .stringAttributeType), rel])
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
            Fixtures.entity("E", [Fixtures.attribute("ok", .stringAttributeType), Fixtures.attribute("blob", type)])
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.kind == .unsupportedType(type))
        #expect(error?.entity == "E")
        #expect(error?.property == "blob")
        // Transformable is a supported type; the attribute fails for its missing transformer name.
        #expect(type.isSupported == (type == .transformableAttributeType))
    }

    @Test func supportedTypesAreSupported() {
        let supported: [NSAttributeType] = [
            .integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .doubleAttributeType,
            .floatAttributeType, .booleanAttributeType, .stringAttributeType, .dateAttributeType,
            .binaryDataAttributeType, .UUIDAttributeType, .URIAttributeType, .decimalAttributeType,
        ]
        for t in supported { #expect(t.isSupported, "\(t)") }
        let model = NSManagedObjectModel(entities: [
            Fixtures.entity("E", supported.enumerated().map { Fixtures.attribute("a\($0.offset)", $0.element) })
        ])
        #expect(throws: Never.self) { try model.validate() }
    }

    @Test func invalidDefaultValues() {
        func check(_ type: NSAttributeType, _ value: Any, sourceLocation: SourceLocation = #_sourceLocation) {
            let a = Fixtures.attribute("value", type)
            a.defaultValue = value
            let model = NSManagedObjectModel(entities: [Fixtures.entity("E", [a])])
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
        let model = NSManagedObjectModel(entities: [Fixtures.entity("E", [a])])
        try model.validate()
        #expect(a.defaultValue as? Int32 == 5)
    }

    @Test func inconsistentCounts() {
        let many = NSRelationshipDescription(name: "many")
        let one = NSRelationshipDescription(name: "one")
        let a = Fixtures.entity("A", [many])
        let b = Fixtures.entity("B", [one])
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
            Fixtures.entity("Zed", [Fixtures.attribute("t", .transformableAttributeType)]),
            Fixtures.entity("Alpha", [Fixtures.attribute("u", .undefinedAttributeType)]),
        ])
        let error = #expect(throws: ModelError.self) { try model.validate() }
        #expect(error?.entity == "Alpha")
        #expect(error?.property == "u")
    }

    @Test func validModelStaysValidAfterRepeatedValidation() throws {
        let model = Fixtures.handBuiltBookshelf()
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
}
