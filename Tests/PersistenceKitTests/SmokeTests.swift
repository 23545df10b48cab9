import Foundation
import Testing
@testable import PersistenceKit

@Suite struct SmokeTests {
    @Test func insertSaveFetchInBackground() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let titles: [String] = try await context.perform {
            let shelf = Shelf(context: context)
            shelf.name = "Fiction"
            for i in 0..<3 {
                let b = Book(context: context)
                b.title = "Book \(i)"
                b.pages = Int64(100 * i)
                b.shelf = shelf
            }
            #expect(shelf.books.count == 3)
            #expect(shelf.$books.count == 3)
            try context.save()
            let request = Book.fetchRequest()
            request.predicate = #Predicate<Book> { $0.pages >= 100 }
            request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: false)]
            return try context.fetch(request).map(\.title)
        }
        #expect(titles == ["Book 2", "Book 1"])
    }
}
