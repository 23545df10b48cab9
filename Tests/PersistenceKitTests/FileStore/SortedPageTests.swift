import Foundation
import Testing
@testable import PersistenceKit

/// Sorted, windowed fetches the file store answers itself — from an attribute index in value
/// order, or by keeping the best rows while it scans — return what sorting every object
/// returns (the in-memory store sorts the plain way), ties in primary-key order.
@Suite("Sorted pages read by the store") struct SortedPageTests {
    /// The same 300 books, with many equal page counts, in a file store and an in-memory store.
    static func containers(_ folder: borrowing TemporaryFolder) throws -> (file: NSPersistentContainer, memory: NSPersistentContainer) {
        let file = try FSSupport.container(at: folder.storeURL)
        let memory = try Fixtures.container()
        for container in [file, memory] {
            let context = container.newBackgroundContext()
            try context.performAndWait {
                for i in 0..<300 {
                    let b = Book(context: context)
                    b.title = "b\((i * 37) % 300)"
                    b.pages = Int64((i * 7919) % 40)
                }
                try context.save()
            }
        }
        return (file, memory)
    }

    @Test func pagesAgreeWithSortingEveryObject() throws {
        let folder = try TemporaryFolder()
        let (file, memory) = try Self.containers(folder)
        var rng = SystemRandomNumberGenerator()
        let filters: [NSPredicate?] = [nil, NSPredicate(format: "title BEGINSWITH 'b1'"), NSPredicate(format: "pages > 30")]
        for round in 0..<60 {
            let ascending = Bool.random(using: &rng)
            let byKey = Bool.random(using: &rng)
            let limit = Int.random(in: 1...40, using: &rng)
            let offset = Int.random(in: 0...30, using: &rng)
            let filter = filters.randomElement(using: &rng)!
            func titles(_ container: NSPersistentContainer) throws -> [String] {
                let context = container.newBackgroundContext()
                return try context.performAndWait {
                    let request = Book.fetchRequest()
                    request.predicate = filter
                    if byKey {
                        request.sortKeys = [SortKey("pages", ascending: ascending)]
                    } else {
                        request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.pages, ascending: ascending)]
                    }
                    request.fetchLimit = limit
                    request.fetchOffset = offset
                    #expect(try context.fetchPlan(for: request).storeSortsAndCuts)
                    return try context.fetch(request).map { "\($0.pages):\($0.title)" }
                }
            }
            let expected = try titles(memory)
            #expect(try titles(file) == expected, "round \(round): ascending \(ascending) limit \(limit) offset \(offset) \(String(describing: filter))")
        }
        try FSSupport.close(file)
    }
}
