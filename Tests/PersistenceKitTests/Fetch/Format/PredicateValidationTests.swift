import Foundation
import Testing
@testable import PersistenceKit

/// Key paths checked against an entity: errors name the key's column and the entity.
@Suite("Predicate format validation") struct PredicateValidationTests {
    /// Kept for the whole test: entities hold their model and destinations weakly.
    private let model: NSManagedObjectModel

    init() throws { model = try Fixtures.model() }

    private func entity(_ name: String) throws -> NSEntityDescription {
        try #require(model.entitiesByName[name])
    }

    private func validationError(_ format: String, on entityName: String = "Book") throws -> PredicateFormatError? {
        let syntax = try PredicateParser.parse(format, arguments: [])
        let entity = try entity(entityName)
        do throws(PredicateFormatError) {
            try validate(syntax, for: entity, format: format)
            return nil
        } catch {
            return error
        }
    }

    @Test func validKeyPathsPass() throws {
        let valid = [
            "title == 'a' AND pages > 1", "shelf.name == 'x'", "ANY authors.name == 'x'", "authors.@count > 1",
            "shelf.books.@sum.pages > 1", "cover.book.shelf.name == 'x'", "SUBQUERY(authors, $a, $a.name == 'x').@count > 0",
            "SELF == nil", "pages > $MIN",
        ]
        for format in valid { #expect(try validationError(format) == nil, "\(format)") }
        #expect(try validationError("books.@avg.pages > 1", on: "Shelf") == nil)
    }

    @Test func unknownKeysNameColumnAndEntity() throws {
        let e = try #require(try validationError("pages > 1 AND titel == 'x'"))
        #expect(e.kind == .key)
        #expect(e.column == 15)
        #expect(e.entityName == "Book")
        #expect(e.problem.contains("entity 'Book' has no attribute or relationship 'titel'"))
        let through = try #require(try validationError("shelf.nam == 'x'"))
        #expect(through.column == 7)
        #expect(through.entityName == "Shelf")
        let inSubquery = try #require(try validationError("SUBQUERY(authors, $a, $a.nme == 'x').@count > 0"))
        #expect(inSubquery.column == 26)
        #expect(inSubquery.entityName == "Author")
    }

    @Test func collectionOperatorsOnlyOnToManys() throws {
        let toOne = try #require(try validationError("shelf.@count > 1"))
        #expect(toOne.column == 7)
        #expect(toOne.problem.contains("@count must follow a to-many relationship"))
        let attribute = try #require(try validationError("title.@sum > 1"))
        #expect(attribute.column == 7)
        let past = try #require(try validationError("title.length > 1"))
        #expect(past.column == 7)
        #expect(past.problem.contains("'title' of entity 'Book' is an attribute"))
    }

    @Test func validatingInitializerChecksKeys() throws {
        let book = try entity("Book")
        #expect(throws: PredicateFormatError.self) {
            _ = try NSPredicate(validatingFormat: "titel == %@", argumentArray: ["x"], entity: book)
        }
        let p = try NSPredicate(validatingFormat: "title == %@", argumentArray: ["x"], entity: book)
        #expect(p.formatSyntax != nil)
    }
}
