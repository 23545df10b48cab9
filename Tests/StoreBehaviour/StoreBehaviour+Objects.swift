import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    /// The books of `context` as "title:pages:published", sorted by title.
    static func bookLines(_ context: NSManagedObjectContext) throws -> [String] {
        try all(SBBook.self, in: context, sortedBy: "title").map {
            "\($0.title):\($0.pages):\($0.published.map { "\($0.timeIntervalSinceReferenceDate)" } ?? "nil")"
        }
    }

    static func insertUpdateDelete(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            try await inContext(try await checked.open()) { context in
                for (title, pages) in [("A", 1), ("B", 2), ("C", 3)] {
                    let book = SBBook(context: context)
                    book.title = title
                    book.pages = Int64(pages)
                    book.published = Date(timeIntervalSinceReferenceDate: 1000)
                }
                try context.save()
            }
            let inserted = try await inContext(try await checked.reopen(), bookLines)
            #expect(inserted == ["A:1:1000.0", "B:2:1000.0", "C:3:1000.0"])

            try await inContext(try await checked.reopen()) { context in
                for book in try all(SBBook.self, in: context) {
                    switch book.title {
                    case "B":
                        book.pages = 20
                        book.published = nil
                    case "C": context.delete(book)
                    default: break
                    }
                }
                SBBook(context: context).title = "D"
                try context.save()
            }
            let changed = try await inContext(try await checked.reopen(), bookLines)
            #expect(changed == ["A:1:1000.0", "B:20:nil", "D:0:nil"])

            // A second round of changes to the same objects, after the first reached the store.
            try await inContext(try await checked.reopen()) { context in
                for book in try all(SBBook.self, in: context) {
                    if book.title == "A" { context.delete(book) }
                    if book.title == "D" { book.pages = 4 }
                }
                try context.save()
            }
            let again = try await inContext(try await checked.reopen(), bookLines)
            #expect(again == ["B:20:nil", "D:4:nil"])
        }
    }

    static func objectIDs(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            let container = try await checked.open()
            let (uris, deletedURI) = try await inContext(container) { context in
                let kept = SBBook(context: context)
                kept.title = "kept"
                let other = SBBook(context: context)
                other.title = "obtained"
                let doomed = SBBook(context: context)
                doomed.title = "deleted"
                #expect(kept.objectID.isTemporaryID)
                try context.obtainPermanentIDs(for: [other])
                #expect(!other.objectID.isTemporaryID)
                let obtained = other.objectID
                try context.save()
                #expect(!kept.objectID.isTemporaryID)
                #expect(other.objectID == obtained, "an obtained permanent ID changed at save")
                // A new context of the same coordinator finds the saved objects by their IDs.
                let check = container.newBackgroundContext()
                try check.performAndWait {
                    let found = try #require(try check.existingObject(with: kept.objectID) as? SBBook)
                    #expect(found.title == "kept")
                }
                let uris = [kept.objectID.uriRepresentation(), other.objectID.uriRepresentation()]
                let deletedURI = doomed.objectID.uriRepresentation()
                context.delete(doomed)
                try context.save()
                return (uris, deletedURI)
            }

            let reopened = try await checked.reopen()
            let coordinator = reopened.persistentStoreCoordinator
            let ids = try uris.map { try #require(coordinator.managedObjectID(forURIRepresentation: $0)) }
            let deletedID = try #require(coordinator.managedObjectID(forURIRepresentation: deletedURI))
            try await inContext(reopened) { context in
                let titles = try ids.map { try #require(try context.existingObject(with: $0) as? SBBook).title }
                #expect(titles == ["kept", "obtained"])
                #expect(throws: CoreDataError.self, "existingObject(with:) found a deleted object") {
                    try context.existingObject(with: deletedID)
                }
                // `object(with:)` gives the same instance as the fetch.
                let fetched = try all(SBBook.self, in: context, sortedBy: "title")
                #expect(fetched.map(\.objectID) == ids)
                #expect(context.object(with: ids[0]) === fetched[0])
            }
        }
    }

    static func refresh(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            let mine = try await checked.open("mine")
            let theirs = try await checked.open("theirs")
            let id = try await inContext(mine) { context in
                let book = SBBook(context: context)
                book.title = "T0"
                book.pages = 1
                try context.save()
                return book.objectID
            }
            // One context across the steps, used with `performAndWait` as `inContext` does.
            let context = mine.newBackgroundContext()
            try context.performAndWait {
                let book = try #require(try context.existingObject(with: id) as? SBBook)
                #expect(book.pages == 1)
            }
            // Another coordinator changes the book; this context's copy is now stale.
            try await inContext(theirs) { other in
                let book = try #require(try other.existingObject(with: id) as? SBBook)
                book.pages = 2
                book.title = "T1"
                try other.save()
            }
            try context.performAndWait {
                let book = try #require(context.registeredObject(for: id) as? SBBook)
                context.refresh(book, mergeChanges: false)
                #expect(book.pages == 2)
                #expect(book.title == "T1")
            }
            // Refreshing with changes kept: the stored values under this context's changes.
            try await inContext(theirs) { other in
                let book = try #require(try other.existingObject(with: id) as? SBBook)
                book.pages = 3
                try other.save()
            }
            try context.performAndWait {
                let book = try #require(context.registeredObject(for: id) as? SBBook)
                book.title = "mine"
                context.refresh(book, mergeChanges: true)
                #expect(book.pages == 3)
                #expect(book.title == "mine")
                try context.save()
            }
            // A fetch through a coordinator that stays open reads the store: another
            // coordinator's insertion and deletion show without reopening.
            try await inContext(mine) { context in
                SBBook(context: context).title = "second"
                try context.save()
            }
            #expect(try await inContext(theirs, bookLines) == ["mine:3:nil", "second:0:nil"])
            try await inContext(mine) { context in
                for book in try all(SBBook.self, in: context) where book.title == "second" { context.delete(book) }
                try context.save()
            }
            #expect(try await inContext(theirs, bookLines) == ["mine:3:nil"])
            let stored = try await inContext(try await checked.reopen(), bookLines)
            #expect(stored == ["mine:3:nil"])
        }
    }
}
