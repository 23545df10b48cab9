import Foundation
import Testing
import PersistenceKit

/// Objects that every insert, fetch and property read retains must have no weak references
/// to them: a weak reference gives its target a side table, and from then on every retain
/// and release of it takes the runtime's slow path. Twice a weak reference crept in for a
/// good reason elsewhere (a context's back-pointer, then `entity()`'s lookup table) and
/// cost 3–5% of inserts and fetches before a profile found it.
///
/// `_getWeakRetainCount` is the standard library's debugger hook: 1 for an object that was
/// never weakly referenced, more once a weak reference exists.
@Suite("No weak references on the hot path") struct HotPathReferenceTests {
    @Test func entitiesAndObjectsOfALoadedModelAreNeverWeaklyReferenced() throws {
        let container = try Fixtures.container()
        let entity = Book.entity()  // registers the model's entities for `entity()`
        #expect(_getWeakRetainCount(entity) == 1, "Book's entity has a weak reference: every object made retains it")
        for entity in container.managedObjectModel.entities {
            #expect(_getWeakRetainCount(entity) == 1, "entity \(entity.name) has a weak reference")
        }
        let writer = container.newBackgroundContext()
        let reader = container.newBackgroundContext()
        try writer.performAndWait {
            let book = Book(context: writer)
            book.title = "Dune"
            try writer.save()
            #expect(_getWeakRetainCount(book) == 1, "an inserted object has a weak reference")
        }
        try reader.performAndWait {
            let books = try reader.fetch(Book.fetchRequest())
            #expect(books.map(\.title) == ["Dune"])
            #expect(books.allSatisfy { _getWeakRetainCount($0) == 1 }, "a fetched object has a weak reference")
        }
    }
}
