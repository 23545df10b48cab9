import Foundation
import Testing
@testable import PersistenceKit

/// Validation predicates on properties (`setValidationPredicates(_:withValidationWarnings:)`,
/// and an Xcode model's minimum, maximum and regular expression): a value that fails one is
/// refused at save and by `validateValue(_:forKey:)`, with the code its warning names.
@Suite("Validation predicates")
struct ValidationPredicateTests {
    /// An in-memory container for `model`.
    static func container(_ model: NSManagedObjectModel, name: String = #function) async throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        try await container.loadPersistentStores()
        return container
    }

    /// The fixtures' model with `Book.title` at most 5 characters (a Core Data code as
    /// warning) and `Book.pages` not 13 (a warning of the model's own).
    static func bookModel() throws -> NSManagedObjectModel {
        let model = try Fixtures.model()
        let book = try #require(model.entitiesByName["Book"])
        try #require(book.propertiesByName["title"]).setValidationPredicates(
            [NSPredicate(format: "length <= 5")], withValidationWarnings: ["NSValidationStringTooLongError"])
        try #require(book.propertiesByName["pages"]).setValidationPredicates(
            [NSPredicate(format: "SELF != 13")], withValidationWarnings: ["thirteen pages are unlucky"])
        return model
    }

    /// Saves one book with `title` and `pages`; the save's error, or nil.
    static func saveBook(_ container: NSPersistentContainer, title: String, pages: Int64) -> CoreDataError? {
        let context = container.newBackgroundContext()
        return context.performAndWait {
            let b = Book(context: context)
            b.title = title
            b.pages = pages
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoreDataError
            }
        }
    }

    @Test("A value that fails a predicate is refused with the code its warning names; one that passes saves")
    func codesFromWarnings() async throws {
        let container = try await Self.container(try Self.bookModel())
        #expect(Self.saveBook(container, title: "Dune", pages: 412) == nil)
        let long = try #require(Self.saveBook(container, title: "Middlemarch", pages: 880))
        #expect(long.code == .validationStringTooLong)
        #expect(long.code.rawValue == NSValidationStringTooLongError)
        #expect(long.key == "title")
        #expect(long.message.contains("Middlemarch"))
        let unlucky = try #require(Self.saveBook(container, title: "Emma", pages: 13))
        #expect(unlucky.code == .managedObjectValidation)
        #expect(unlucky.message.contains("thirteen pages are unlucky"))
        // Both at once: every error, as Core Data reports several.
        let both = try #require(Self.saveBook(container, title: "Ulysses", pages: 13))
        #expect(both.code == .validationMultipleErrors)
        #expect(Set(both.detailedErrors.map(\.code)) == [.validationStringTooLong, .managedObjectValidation])
        let context = container.newBackgroundContext()
        #expect(try context.performAndWait { try context.count(for: NSFetchRequest<Book>(entityName: "Book")) } == 1)
    }

    @Test("validateValue(_:forKey:) checks the predicates; nil is left to optionality")
    func validateValueChecksPredicates() async throws {
        let container = try await Self.container(try Self.bookModel())
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let b = Book(context: context)
            let error = #expect(throws: CoreDataError.self) { try b.validateValue("A long title", forKey: "title") }
            #expect(error?.code == .validationStringTooLong)
            try b.validateValue("Emma", forKey: "title")
            try b.validateValue(12, forKey: "pages")
            #expect(throws: CoreDataError.self) { try b.validateValue(13, forKey: "pages") }
        }
    }

    /// A model file whose `Item` has a name of 2 to 8 lower-case letters, a count from 1 to
    /// 10, and a date no earlier than the reference date.
    static let itemModel = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Item">
                <attribute name="name" optional="YES" attributeType="String" minValueString="2" maxValueString="8" regularExpressionString="[a-z]+"/>
                <attribute name="count" attributeType="Integer 32" minValueString="1" maxValueString="10" defaultValueString="1"/>
                <attribute name="due" optional="YES" attributeType="Date" minDateTimeInterval="0"/>
            </entity>
        </model>
        """

    @Test("An Xcode model's minimum, maximum and regular expression give Core Data's validation codes")
    func modelFileBounds() async throws {
        let folder = try TemporaryFolder()
        let file = folder.url.appendingPathComponent("Items.xcdatamodel")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        try Data(Self.itemModel.utf8).write(to: file.appendingPathComponent("contents"))
        let model = try NSManagedObjectModel(modelFileAt: file)
        let container = try await Self.container(model)
        func save(_ values: [String: Any]) -> CoreDataError? {
            let context = container.newBackgroundContext()
            return context.performAndWait {
                let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
                for (k, v) in values { item.setValue(v, forKey: k) }
                do {
                    try context.save()
                    return nil
                } catch {
                    return error as? CoreDataError
                }
            }
        }
        #expect(save(["name": "tea", "count": Int32(3), "due": Date(timeIntervalSinceReferenceDate: 100)]) == nil)
        #expect(save(["count": Int32(3)]) == nil, "nil name and date pass: the predicates test values")
        #expect(save(["name": "t", "count": Int32(3)])?.code == .validationStringTooShort)
        #expect(save(["name": "teapotsandcups", "count": Int32(3)])?.code == .validationStringTooLong)
        #expect(save(["name": "Tea", "count": Int32(3)])?.code == .validationStringPatternMatching)
        #expect(save(["name": "tea", "count": Int32(0)])?.code == .validationNumberTooSmall)
        #expect(save(["name": "tea", "count": Int32(11)])?.code == .validationNumberTooLarge)
        #expect(save(["name": "tea", "due": Date(timeIntervalSinceReferenceDate: -1)])?.code == .validationDateTooSoon)
        let attribute = try #require(model.entitiesByName["Item"]?.attributesByName["name"])
        #expect(attribute.validationPredicates.count == 3)
        #expect(attribute.validationWarnings == [
            "NSValidationStringTooShortError", "NSValidationStringTooLongError", "NSValidationStringPatternMatchingError",
        ])
    }

    @Test("A regular expression that does not compile is refused when the model file is read, typed")
    func badPattern() throws {
        let folder = try TemporaryFolder()
        let file = folder.url.appendingPathComponent("Bad.xcdatamodel")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        let xml = Self.itemModel.replacingOccurrences(of: "regularExpressionString=\"[a-z]+\"", with: "regularExpressionString=\"[a-z\"")
        try Data(xml.utf8).write(to: file.appendingPathComponent("contents"))
        let error = #expect(throws: ModelFileError.self) { _ = try NSManagedObjectModel(modelFileAt: file) }
        #expect(error?.kind == .invalidRegularExpression("[a-z"))
        #expect(error?.property == "name")
    }
}
