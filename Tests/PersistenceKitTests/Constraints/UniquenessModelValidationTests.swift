import Foundation
import Testing
@testable import PersistenceKit

@Suite struct UniquenessModelValidationTests {
    /// A hand-built entity with a persistent, a transient attribute and a to-one relationship
    /// (to itself), with `constraints`.
    private func model(_ constraints: [[Any]]) -> NSManagedObjectModel {
        let code = NSAttributeDescription(name: "code", type: .stringAttributeType)
        let scratch = NSAttributeDescription(name: "scratch", type: .stringAttributeType)
        scratch.isTransient = true
        scratch.isOptional = true
        let parent = NSRelationshipDescription()
        parent.name = "parent"
        parent.destinationEntityName = "UCPart"
        parent.inverseName = "children"
        parent.maxCount = 1
        let children = NSRelationshipDescription()
        children.name = "children"
        children.destinationEntityName = "UCPart"
        children.inverseName = "parent"
        let entity = NSEntityDescription(name: "UCPart", properties: [code, scratch, parent, children])
        entity.uniquenessConstraints = constraints
        return NSManagedObjectModel(entities: [entity])
    }

    private func kind(_ constraints: [[Any]]) -> ModelError.Kind? {
        do {
            try model(constraints).validate()
            return nil
        } catch {
            return error.kind
        }
    }

    @Test func constraintsOnPersistentAttributesAreValidByNameOrDescription() throws {
        #expect(kind([["code"]]) == nil)
        let m = model([])
        let code = try #require(m.entitiesByName["UCPart"]?.attributesByName["code"])
        m.entitiesByName["UCPart"]?.uniquenessConstraints = [[code]]
        try m.validate()
    }

    @Test func unknownNameIsAModelError() {
        #expect(kind([["kode"]]) == .unknownConstraintProperty("kode"))
    }

    @Test func relationshipIsAModelError() {
        #expect(kind([["code", "parent"]]) == .relationshipInConstraint("parent"))
    }

    @Test func transientAttributeIsAModelError() {
        #expect(kind([["scratch"]]) == .transientAttributeInConstraint("scratch"))
    }

    @Test func emptyConstraintAndForeignElementsAreModelErrors() {
        #expect(kind([[]]) == .emptyUniquenessConstraint)
        #expect(kind([[42]]) == .unknownConstraintProperty("42"))
    }

    @Test func constraintsEnterTheVersionHashOnlyWhenDeclared() {
        #expect(model([]).versionHash == model([]).versionHash)
        #expect(model([]).versionHash != model([["code"]]).versionHash)
        #expect(model([["code"]]).versionHash == model([["code"]]).versionHash)
        #expect(!model([]).canonicalDescription.contains("unique"))
    }
}
