import Foundation
import Testing
@testable import PersistenceKit

/// Small Core Data members that ported code uses: `userInfo` of a context, `faultingState`
/// of an object.
@Suite struct CompatibilityAPITests {
    /// A request's `entityName` names the entity it fetches, also when only `entity` was set.
    @Test func entityNameFollowsTheEntity() throws {
        let model = try Fixtures.model()
        let request = NSFetchRequest<Book>()
        #expect(request.entityName == nil)
        request.entity = model.entitiesByName["Book"]
        #expect(request.entityName == "Book")
        #expect(NSFetchRequest<NSFetchRequestResult>(entityName: "Shelf").entityName == "Shelf")
        #expect(Book.fetchRequest().entityName == "Book")
        request.entityName = "Shelf"  // replaces the entity set before
        #expect(request.entity == nil && request.entityName == "Shelf")
    }

    /// `value(forKeyPath:)` / `setValue(_:forKeyPath:)`, which Core Data tutorials use for
    /// plain keys (found in a compatibility probe: they did not exist): one key reads and
    /// writes as `forKey:`; dots lead through to-one relationships; a nil relationship on
    /// the way reads nil and ignores a write, as key-value coding does.
    @Test func keyPathsReadAndWriteThroughToOneRelationships() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            let book = Book(context: context)
            book.setValue("Dune", forKeyPath: "title")
            #expect(book.title == "Dune")
            #expect(book.value(forKeyPath: "title") as? String == "Dune")
            #expect(book.value(forKeyPath: "shelf.name") == nil)  // no shelf yet
            book.setValue("ignored", forKeyPath: "shelf.name")  // no shelf: nothing happens
            #expect(!context.registeredObjects.contains { ($0 as? Shelf)?.name == "ignored" })
            book.shelf = shelf
            book.setValue("Fiction", forKeyPath: "shelf.name")
            #expect(shelf.name == "Fiction")
            #expect(book.value(forKeyPath: "shelf.name") as? String == "Fiction")
            let cover = Cover(context: context)
            cover.book = book
            #expect(cover.value(forKeyPath: "book.shelf.name") as? String == "Fiction")
            #expect(cover.value(forKeyPath: "book.shelf") as? Shelf === shelf)
            try context.save()
            #expect(try context.existingObject(with: cover.objectID).value(forKeyPath: "book.title") as? String == "Dune")
        }
    }

    /// Core Data's `name` is developer-provided: nil on the container's view context until
    /// set (found in a compatibility review: it read "viewContext"). Messages still call the
    /// view context so (QueueDisciplineTests checks a trap's text).
    @Test @MainActor func theViewContextHasNoNameUntilOneIsGiven() throws {
        let container = try Fixtures.container()
        #expect(container.viewContext.name == nil)
        #expect(container.viewContext.description.contains("viewContext"))
        container.viewContext.name = "main"
        #expect(container.viewContext.name == "main")
        #expect(container.viewContext.description.contains("main"))
        #expect(container.newBackgroundContext().name == nil)
    }

    @Test func aContextKeepsItsUserInfoBetweenPerformBlocks() throws {
        let context = try Fixtures.container().newBackgroundContext()
        context.performAndWait { context.userInfo["importer"] = "nightly" }
        let value = context.performAndWait { context.userInfo["importer"] as? String }
        #expect(value == "nightly")
        let other = try Fixtures.container().newBackgroundContext()
        #expect(other.performAndWait { other.userInfo.count } == 0, "each context has its own")
    }

    @Test func faultingStateIsZeroOnlyOnceValuesAreLoaded() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        let states = context.performAndWait { () -> [Int] in
            let book = context.object(with: seeded.a)
            let before = book.faultingState
            let stillFault = book.isFault  // reading the state does not fire the fault
            _ = book.value(forKey: "title")
            return [before, stillFault ? 1 : 0, book.faultingState]
        }
        #expect(states == [1, 1, 0])
    }
}
