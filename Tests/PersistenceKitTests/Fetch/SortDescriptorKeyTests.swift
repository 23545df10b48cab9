import Foundation
import Testing
@testable import PersistenceKit

/// `NSSortDescriptor(key:ascending:)` as Core Data code writes it: by an attribute (sorted in
/// the store) or through to-one relationships (`shelf.name`, sorted on objects, an empty
/// to-one first when ascending).
@Suite("Sort descriptors made from keys") struct SortDescriptorKeyTests {
    @Test(arguments: [false, true])
    func keyDescriptorsSortAsTheirValuesDo(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = onFile ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
        try StorePredicateTests.seed(container.newBackgroundContext())
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let byPages = Book.fetchRequest()
            byPages.sortDescriptors = [NSSortDescriptor(key: "pages", ascending: false)]
            byPages.fetchLimit = 2
            #expect(try context.fetchPlan(for: byPages).storeSortsAndCuts)
            #expect(try context.fetch(byPages).map(\.title) == ["Ulysses", "Don Juan"])
            #expect(byPages.sortDescriptors?.first?.ascending == false)

            let byShelf = Book.fetchRequest()
            byShelf.sortDescriptors = [NSSortDescriptor(key: "shelf.name", ascending: true), NSSortDescriptor(key: "title", ascending: true)]
            #expect(try context.fetchPlan(for: byShelf).storeSortsAndCuts == false)
            #expect(try context.fetch(byShelf).map(\.title) == ["Ulysses", "Don Juan", "Endymion", "Lamia", "emma"])

            let descriptor = NSSortDescriptor(key: "title", ascending: true)
            let books = try context.fetch(Book.fetchRequest())
            let lamia = try #require(books.first { $0.title == "Lamia" }), emma = try #require(books.first { $0.title == "emma" })
            #expect(descriptor.compare(lamia, to: emma) == .orderedAscending, "\"L\" sorts before \"e\"")
        }
        if onFile { try FSSupport.close(container) }
    }
}
