import Foundation
import Testing
@testable import PersistenceKit

/// `includesPropertyValues` and `fetchBatchSize`: which returned objects keep the values the
/// fetch read. The visible difference is what an object shows after another context saved
/// new values in between: an object the fetch loaded shows the old ones; one that was
/// returned without values reads the store when first touched, and shows the new ones (as
/// does a fault holding the fetched row: it fills from the current row, as Core Data's fill
/// from the coordinator's row cache).
@Suite struct FetchValuesTests {
    private static let titles = ["Beloved", "Carrie", "Dune", "Emma", "Ulysses"]

    /// Saves the five books, then returns a function that renames every book in another
    /// context ("<title> (revised)") and saves.
    private static func seed(_ container: NSPersistentContainer) throws -> @Sendable () throws -> Void {
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            for (i, title) in titles.enumerated() {
                let book = Book(context: writer)
                book.title = title
                book.pages = Int64(100 * (i + 1))
            }
            try writer.save()
        }
        return {
            try writer.performAndWait {
                for book in try writer.fetch(Book.fetchRequest()) { book.title += " (revised)" }
                try writer.save()
            }
        }
    }

    private static func sortedByPages(_ request: NSFetchRequest<Book>) -> NSFetchRequest<Book> {
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.pages, ascending: true)]
        return request
    }

    @Test func loadedObjectsKeepTheValuesTheFetchRead() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Self.sortedByPages(Book.fetchRequest())
            request.returnsObjectsAsFaults = false
            let books = try reader.fetch(request)
            try revise()
            #expect(books.map(\.title) == Self.titles)
        }
    }

    /// By default a fetch returns faults, even when it sorts: the sort reads the rows, not
    /// the objects. Touched after another context's save, they show the saved values.
    @Test func byDefaultObjectsAreFaultsThatFillFromTheCurrentRow() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let books = try reader.fetch(Self.sortedByPages(Book.fetchRequest()))
            #expect(books.allSatisfy { $0.isFault })
            try revise()
            #expect(books.map(\.title) == Self.titles.map { "\($0) (revised)" })
        }
    }

    @Test func withoutPropertyValuesObjectsReadTheStoreWhenTouched() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Self.sortedByPages(Book.fetchRequest())
            request.includesPropertyValues = false
            request.returnsObjectsAsFaults = false  // ignored without property values, as in Core Data
            let books = try reader.fetch(request)
            #expect(books.count == 5)
            #expect(books.allSatisfy { $0.isFault })
            try revise()
            #expect(books.map(\.title) == Self.titles.map { "\($0) (revised)" })
        }
    }

    @Test func withoutPropertyValuesAPredicateRunInMemoryStillFilters() throws {
        let container = try Fixtures.container()
        _ = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Book.fetchRequest()
            request.predicate = #Predicate<Book> { $0.title.contains("e") }  // not a store condition
            request.includesPropertyValues = false
            let books = try reader.fetch(request)
            #expect(books.allSatisfy { $0.isFault }, "faults, though the predicate read them")
            #expect(books.map(\.title).sorted() == ["Beloved", "Carrie", "Dune", "Ulysses"])
        }
    }

    @Test func withoutPropertyValuesUnsavedChangesStay() throws {
        let container = try Fixtures.container()
        _ = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let first = try #require(try reader.fetch(Self.sortedByPages(Book.fetchRequest())).first)
            first.title = "Beloved, annotated"
            let added = Book(context: reader)
            added.title = "Zazie"
            added.pages = 900
            let request = Self.sortedByPages(Book.fetchRequest())
            request.includesPropertyValues = false
            let books = try reader.fetch(request)
            #expect(books.first === first && !first.isFault && first.title == "Beloved, annotated")
            #expect(books.last === added && added.title == "Zazie")
        }
    }

    @Test func aBatchSizeKeepsTheFetchedValuesOfTheFirstBatchOnly() throws {
        let container = try Fixtures.container()
        let revise = try Self.seed(container)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Self.sortedByPages(Book.fetchRequest())
            request.fetchBatchSize = 2
            request.returnsObjectsAsFaults = false  // applies to the first batch
            let books = try reader.fetch(request)
            #expect(books.count == 5, "every object is returned, whatever the batch size")
            #expect(books.map(\.isFault) == [false, false, true, true, true])
            try revise()
            #expect(books.map(\.title) == ["Beloved", "Carrie", "Dune (revised)", "Emma (revised)", "Ulysses (revised)"])
        }
    }
}
