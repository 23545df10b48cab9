import Foundation
import Testing
@testable import PersistenceKit

/// An in-memory container for `Note` and `Tagged`.
private func notesContainer() async throws -> NSPersistentContainer {
    let model = try NSManagedObjectModel(managedObjectClasses: [Note.self, Tagged.self])
    let container = NSPersistentContainer(name: "notes", managedObjectModel: model)
    container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
    try await container.loadPersistentStores()
    return container
}

final class Note: NSManagedObject {
    @Attribute var text: String = ""
    @Attribute var stars: Int64 = 0
}

final class Tagged: NSManagedObject {
    @Attribute var text: String = ""
    @Attribute(.transient) var scratch: String = ""
}

/// A fetched object keeps its values in its snapshot until something needs slots
/// (`NSManagedObject.slots`). Every way of reading, changing, merging or re-snapshotting
/// such an object must see the values it would have seen with decoded slots. (Merging into
/// such an object: MergingTests.mergeChangesFromContextDidSave.)
@Suite("Values read from the row snapshot") struct SnapshotValuesTests {
    /// Seeds the fixture shelf and runs `body` on a fresh context with book "A" (100 pages,
    /// on shelf "Shelf") loaded from the store.
    private func withSeededBook(_ body: @escaping @Sendable (Book) throws -> Void) async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        try await context.perform {
            try body(try #require(try context.existingObject(with: seeded.a) as? Book))
        }
    }

    @Test func attributeReadsComeFromTheSnapshotAndRelationshipsDecodeSlots() async throws {
        try await withSeededBook { book in
            #expect(book.title == "A")
            #expect(book.pages == 100)
            #expect(book.valueStorage == .snapshot)
            #expect(book.shelf?.name == "Shelf")  // a relationship needs slots
            #expect(book.valueStorage == .slots)
            #expect(book.title == "A")
            #expect(!book.hasChanges)
        }
    }

    @Test func settingOneValueKeepsTheOthers() async throws {
        try await withSeededBook { book in
            book.pages = 500
            #expect(book.title == "A")
            #expect(book.changedValues().keys.sorted() == ["pages"])
            #expect(book.committedValues(forKeys: ["pages"])["pages"] as? Int64 == 100)
        }
    }

    @Test func replacingTheSnapshotKeepsTheCurrentValues() async throws {
        try await withSeededBook { book in
            let old = try #require(book.snapshot)
            var newer = old.values
            newer[0] = .string("Persuasion")
            book.snapshot = StoreRow(id: old.id, version: old.version + 1, values: newer)
            #expect(book.title == "A")  // the values were the old snapshot's
            #expect(book.committedValues(forKeys: ["title"])["title"] as? String == "Persuasion")
        }
    }

    /// An entity of persistent attributes only keeps a saved object's values once, in its
    /// snapshot; reading, changing and saving again work as before.
    @Test func savedObjectsOfAttributeOnlyEntitiesKeepOneCopyOfTheirValues() async throws {
        let container = try await notesContainer()
        let context = container.newBackgroundContext()
        try await context.perform {
            let note = Note(context: context)
            note.text = "first"
            note.stars = 3
            let tagged = Tagged(context: context)
            tagged.text = "kept"
            tagged.scratch = "transient"
            try context.save()
            #expect(note.valueStorage == .snapshot)
            #expect(tagged.valueStorage == .slots)  // a transient value lives only in slots
            #expect(tagged.scratch == "transient")
            #expect(note.text == "first" && note.stars == 3)
            note.stars = 4
            #expect(note.changedValues().keys.sorted() == ["stars"])
            #expect(note.committedValues(forKeys: ["stars"])["stars"] as? Int64 == 3)
            try context.save()
            #expect(note.text == "first" && note.stars == 4 && !note.hasChanges)
        }
        let reader = container.newBackgroundContext()
        let stars = try await reader.perform { try reader.fetch(Note.fetchRequest()).map(\.stars) }
        #expect(stars == [4])
    }

    /// New and changed objects of an entity of persistent attributes only keep their values
    /// in one array of store values (`ValueStorage.values`), which the save hands to the store
    /// and keeps as the snapshot.
    @Test func valuesOfAttributeOnlyObjectsLiveInOneArray() async throws {
        let container = try await notesContainer()
        let context = container.newBackgroundContext()
        let id = try await context.perform {
            let note = Note(context: context)
            #expect(note.valueStorage == .values)
            #expect(note.text == "" && note.stars == 0)  // the defaults
            note.text = "draft"
            #expect(note.changedValues().keys.sorted() == ["stars", "text"])  // all of a new object's values
            try context.save()
            #expect(note.valueStorage == .snapshot)
            return note.objectID
        }
        let editor = container.newBackgroundContext()
        try await editor.perform {
            let note = try #require(try editor.existingObject(with: id) as? Note)
            #expect(note.valueStorage == .snapshot)
            note.stars = 5
            #expect(note.valueStorage == .values)
            #expect(note.text == "draft")
            #expect(note.changedValues().keys.sorted() == ["stars"])
            editor.rollback()
            #expect(note.stars == 0 && note.text == "draft" && !note.hasChanges)
            note.text = "final"
            try editor.save()
            #expect(note.valueStorage == .snapshot && !note.hasChanges)
        }
        let reader = container.newBackgroundContext()
        let saved = try await reader.perform { try reader.fetch(Note.fetchRequest()).map { "\($0.text) \($0.stars)" } }
        #expect(saved == ["final 0"])
    }
}
