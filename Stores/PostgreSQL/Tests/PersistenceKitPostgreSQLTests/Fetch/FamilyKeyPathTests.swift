import Foundation
import PersistenceKit
import Testing

@testable import PersistenceKitPostgreSQL

/// A key path through a to-one into an entity family runs in SQL: the linked row is joined
/// from every table of the family, matched on key and entity (the answers are checked
/// against the in-memory store in `FamilyLinkTests`).
@Suite("PostgreSQL store: key paths through a to-one into an entity family")
struct FamilyKeyPathTests {
    /// The translation of `predicate` on `entity` of the pets model.
    static func translate(_ entity: String, _ predicate: (NSManagedObjectModel) throws -> StorePredicate) throws -> SQLTranslator.Translated {
        let model = try FamilyModels.pets()
        let layouts = try TableLayout.all(of: model, schema: "s")
        var translator = SQLTranslator(layouts: layouts)
        var scope = translator.newScope(try #require(layouts.first { $0.entityName == entity }).entity)
        let t = translator.filter(StoreFilter([], predicate: try predicate(model)), &scope)
        return SQLTranslator.Translated(sql: ([t.sql] + scope.joins).joined(separator: " "), exact: t.exact)
    }

    static func index(_ model: NSManagedObjectModel, _ entity: String, _ property: String) throws -> Int {
        let e = try #require(model.entitiesByName[entity])
        return try #require(e.properties.firstIndex { $0.name == property })
    }

    @Test("An attribute of the linked row, and a key path on through a plain to-one, translate exactly")
    func attributeThroughFamilyToOne() throws {
        let byName = try Self.translate("POwner") { m in
            .compare(
                StorePath(through: [try Self.index(m, "POwner", "favourite")], property: try Self.index(m, "PAnimal", "name")),
                .equal, .string("Rex"))
        }
        #expect(byName.exact)
        #expect(byName.sql.contains("UNION ALL"), "\(byName.sql)")
        #expect(byName.sql.contains("\"favourite__entity\""), "\(byName.sql)")
        let throughOwner = try Self.translate("POwner") { m in
            .compare(
                StorePath(
                    through: [try Self.index(m, "POwner", "favourite"), try Self.index(m, "PAnimal", "owner")],
                    property: try Self.index(m, "POwner", "name")),
                .equal, .string("Ann"))
        }
        #expect(throughOwner.exact)
    }

    @Test("An end read for the linked row is left to memory: its rows match the row's own entity")
    func derivedEndThroughFamilyToOne() throws {
        let count = try Self.translate("POwner") { m in
            .count(
                StorePath(through: [try Self.index(m, "POwner", "favourite")], property: try Self.index(m, "PAnimal", "fans")),
                .equal, 1)
        }
        #expect(!count.exact)
    }
}
