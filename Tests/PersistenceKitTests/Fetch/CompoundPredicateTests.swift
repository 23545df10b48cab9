import Foundation
import Testing
@testable import PersistenceKit

/// Predicates combined after they are built (`setPredicate(matchingAll:)` / `(matchingAny:)`),
/// as a search assembles its filter from the fields that were filled in.
@Suite("Compound predicates") struct CompoundPredicateTests {
    private static let books: [(String, Int64)] = [
        ("Emma", 474), ("Beloved", 324), ("Dune", 412), ("Ulysses", 730), ("Carrie", 199),
    ]

    /// A file store holding the five books, and a context on it.
    private static func context(_ folder: borrowing TemporaryFolder) throws -> (NSPersistentContainer, NSManagedObjectContext) {
        let container = try FSSupport.container(at: folder.storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for (title, pages) in books {
                let book = Book(context: context)
                book.title = title
                book.pages = pages
            }
            try context.save()
        }
        return (container, context)
    }

    private static func titles(_ context: NSManagedObjectContext, _ request: NSFetchRequest<Book>) throws -> [String] {
        try context.performAndWait { try context.fetch(request).map(\.title).sorted() }
    }

    @Test func allOfStoreConditionsRunInTheStore() throws {
        let folder = try TemporaryFolder()
        let (container, context) = try Self.context(folder)
        let request = Book.fetchRequest()
        let minimum: Int64? = 300, maximum: Int64? = 500
        var parts: [Predicate<Book>] = []
        if let minimum { parts.append(#Predicate { $0.pages >= minimum }) }
        if let maximum { parts.append(#Predicate { $0.pages <= maximum }) }
        request.setPredicate(matchingAll: parts)
        #expect(request.predicate == nil)
        let entity = try #require(container.managedObjectModel.entitiesByName["Book"])
        #expect(request.filter?.storeFilter(for: entity)?.conditions.count == 2, "both parts go to the store")
        #expect(try Self.titles(context, request) == ["Beloved", "Dune", "Emma"])
        try FSSupport.close(container)
    }

    @Test func allOfWithAPartOnlyMemoryCanRunIsRunInMemory() throws {
        let folder = try TemporaryFolder()
        let (container, context) = try Self.context(folder)
        let request = Book.fetchRequest()
        // A string's `count` is not a store value: that part, and so the whole, runs on objects.
        request.setPredicate(matchingAll: [#Predicate<Book> { $0.pages > 300 }, #Predicate<Book> { $0.title.contains("e") && $0.title.count > 0 }])
        let entity = try #require(container.managedObjectModel.entitiesByName["Book"])
        #expect(request.filter?.storeFilter(for: entity) == nil)
        #expect(try Self.titles(context, request) == ["Beloved", "Dune", "Ulysses"])
        try FSSupport.close(container)
    }

    @Test func anyOfMatchesEitherPart() throws {
        let folder = try TemporaryFolder()
        let (container, context) = try Self.context(folder)
        let request = Book.fetchRequest()
        request.setPredicate(matchingAny: [#Predicate<Book> { $0.pages < 200 }, #Predicate<Book> { $0.title == "Ulysses" }])
        #expect(try Self.titles(context, request) == ["Carrie", "Ulysses"])
        try FSSupport.close(container)
    }

    /// As Core Data's compound predicates: an empty AND holds for every object, an empty OR
    /// for none.
    @Test func emptyListsMatchEverythingOrNothing() throws {
        let folder = try TemporaryFolder()
        let (container, context) = try Self.context(folder)
        let all = Book.fetchRequest()
        all.setPredicate(matchingAll: [Predicate<Book>]())
        #expect(try Self.titles(context, all).count == 5)
        let none = Book.fetchRequest()
        none.setPredicate(matchingAny: [Predicate<Book>]())
        #expect(try Self.titles(context, none).isEmpty)
        #expect(try context.performAndWait { try context.count(for: none) } == 0)
        try FSSupport.close(container)
    }
}
