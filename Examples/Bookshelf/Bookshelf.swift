import Foundation
import PersistenceKit

/// Runs the whole example: model, container, inserts, a fetch, an edit, deletes with their
/// delete rules, a failed save, and the view context catching up through automatic merges.
///
/// Work happens on a private-queue context (`importer`) inside `perform` blocks; only
/// `Sendable` values (summaries, counts, object IDs) come out of those blocks. The view
/// context is a main-queue context, used directly here because this function runs on the
/// main actor.
@MainActor
func runBookshelf() async throws {
    print("Bookshelf — a PersistenceKit example\n")

    // 1. The model, built from the classes.
    let model = try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self])
    step(1, "Built the model from the classes:")
    for entity in model.entities {
        let attributes = entity.properties.compactMap { $0 as? NSAttributeDescription }.map(\.name)
        let relationships = entity.properties.compactMap { $0 as? NSRelationshipDescription }.map {
            "\($0.name) → \($0.isToMany ? "many " : "")\($0.destinationEntity?.name ?? "?") (\($0.deleteRule))"
        }
        print("   \(entity.name): \(attributes.joined(separator: ", ")); \(relationships.joined(separator: ", "))")
    }

    // 2. A container with a file store in a folder of its own, emptied first so every run
    //    starts from nothing.
    let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("Bookshelf", isDirectory: true)
    let storeURL = folder.appendingPathComponent("Bookshelf.store")
    for suffix in ["", "-lock"] { try? FileManager.default.removeItem(atPath: storeURL.path + suffix) }
    let container = NSPersistentContainer(name: "Bookshelf", managedObjectModel: model)
    container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: storeURL)]
    try await container.loadPersistentStores()
    let viewContext = container.viewContext
    viewContext.automaticallyMergesChangesFromParent = true
    let importer = container.newBackgroundContext()
    importer.name = "importer"
    step(2, "Loaded \(container.persistentStoreCoordinator.persistentStores.map(\.type)) store; the view context merges saves automatically.")

    // 3. Insert shelves and books on the background context, then save.
    let inserted = try await importer.perform {
        var shelves: [String: Shelf] = [:]
        for seed in Seed.catalogue where shelves[seed.shelf] == nil {
            let shelf = Shelf(context: importer)
            shelf.name = seed.shelf
            shelves[seed.shelf] = shelf
        }
        for seed in Seed.catalogue {
            let book = Book(context: importer)
            book.title = seed.title
            book.author = seed.author
            book.year = seed.year
            book.shelf = shelves[seed.shelf]  // the inverse, shelf.books, follows by itself
        }
        let count = importer.insertedObjects.count
        let temporaryBefore = importer.insertedObjects.allSatisfy { $0.objectID.isTemporaryID }
        try importer.save()
        let dune = try importer.fetch(Book.fetchRequest()).first { $0.title == "Dune" }
        return (count: count, temporaryBefore: temporaryBefore, duneID: dune?.objectID)
    }
    guard let duneID = inserted.duneID else { throw BookshelfError(description: "Dune was not saved") }
    step(3, "Inserted \(inserted.count) objects in context 'importer' (temporary IDs: \(inserted.temporaryBefore)) and saved.")
    print("   Dune's permanent ID: \(duneID.uriRepresentation().absoluteString)")

    // 4. List with a predicate and a sort order.
    let cutoff: Int64 = 1960
    let older = try await importer.perform {
        let request = Book.fetchRequest()
        request.predicate = #Predicate<Book> { $0.year < cutoff }
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.year, ascending: true)]
        return try importer.fetch(request).map(BookSummary.init)
    }
    step(4, "Books published before \(cutoff), oldest first:")
    for book in older { print("   \(book)") }

    // 5. The view context, on the main actor, sees the saved books.
    let everything = Book.fetchRequest()
    everything.sortBy([SortDescriptor(\Book.title)])
    let shown = try viewContext.fetch(everything)
    guard let duneOnScreen = viewContext.object(with: duneID) as? Book else {
        throw BookshelfError(description: "Dune's ID did not give a Book")
    }
    step(5, "The view context lists \(shown.count) books by title; it holds Dune (rating: \(duneOnScreen.rating.map(String.init) ?? "none")).")
    for book in shown { print("   \(BookSummary(book))") }

    // 6. Edit one book in the background; the view context's copy follows.
    let updatedCount = try await importer.perform {
        let request = Book.fetchRequest()
        request.predicate = #Predicate<Book> { $0.title == "Dune" }
        guard let dune = try importer.fetch(request).first else { throw BookshelfError(description: "Dune is missing") }
        dune.rating = 5
        dune.finished = true
        let count = importer.updatedObjects.count
        try importer.save()
        return count
    }
    await mergesArrived(in: viewContext)
    step(6, "Rated Dune 5 stars in 'importer' (\(updatedCount) updated object) and saved.")
    print("   The view context's Dune, without refetching: rating \(duneOnScreen.rating.map(String.init) ?? "none"), finished \(duneOnScreen.finished)")

    // 7. Delete: a book (nullify takes it off its shelf) and a shelf (cascade deletes its books).
    let deletions = try await importer.perform {
        let books = Book.fetchRequest()
        books.predicate = #Predicate<Book> { $0.title == "Neuromancer" }
        let shelves = Shelf.fetchRequest()
        shelves.sortKeys = [SortKey("name")]
        guard let neuromancer = try importer.fetch(books).first,
            let sciFi = neuromancer.shelf,
            let classics = try importer.fetch(shelves).first(where: { $0.name == "Classics" })
        else { throw BookshelfError(description: "the seeded books are missing") }

        var lines: [String] = []
        let before = sciFi.books.count
        importer.delete(neuromancer)
        importer.processPendingChanges()  // delete rules run here (and at the end of perform, and in save)
        lines.append("Deleted Neuromancer: nullify took it off '\(sciFi.name)', which went from \(before) to \(sciFi.$books.count) books.")

        let onShelf = classics.books.map(\.title).sorted()
        importer.delete(classics)
        importer.processPendingChanges()
        let cascaded = importer.deletedObjects.compactMap { $0 as? Book }.map(\.title).filter(onShelf.contains).sorted()
        lines.append("Deleted shelf 'Classics': cascade deleted its books too: \(cascaded.joined(separator: ", ")).")
        lines.append("Pending deletions: \(importer.deletedObjects.count) objects. Saving.")
        try importer.save()
        return lines
    }
    await mergesArrived(in: viewContext)
    step(7, deletions[0])
    for line in deletions.dropFirst() { print("   \(line)") }

    // 8. Validation: a book with no shelf cannot be saved; nothing reaches the store.
    let refusal = try await importer.perform {
        let stray = Book(context: importer)
        stray.title = "Loose Pages"
        do {
            try importer.save()
            return "unexpectedly saved a book without a shelf"
        } catch let error as CoreDataError {
            importer.rollback()  // discard the stray insert
            return "save refused with code \(error.code.rawValue) (\(error.code)) on key '\(error.key ?? "?")'; rolled back."
        }
    }
    step(8, "Tried to save a book with no shelf: \(refusal)")

    // 9. The view context, after the merges, and a fresh count.
    let remaining = try viewContext.fetch(everything)
    let count = try viewContext.count(for: Book.fetchRequest())
    step(9, "The view context now lists \(remaining.count) books (count(for:) says \(count)):")
    for book in remaining { print("   \(BookSummary(book))") }

    // 10. Remove the store (which closes its file) and open the file again in a new
    //     container: the saves are on disk. The reopened store needs no removal: it closes
    //     when the program exits.
    for store in container.persistentStoreCoordinator.persistentStores { try container.persistentStoreCoordinator.remove(store) }
    let reopened = NSPersistentContainer(name: "Bookshelf", managedObjectModel: model)
    reopened.persistentStoreDescriptions = [NSPersistentStoreDescription(url: storeURL)]
    try await reopened.loadPersistentStores()
    let reader = reopened.newBackgroundContext()
    let titles = try await reader.perform {
        let request = Book.fetchRequest()
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: true)]
        return try reader.fetch(request).map(\.title)
    }
    step(10, "Reopened \(storeURL.path): \(titles.count) books on disk — \(titles.joined(separator: ", ")).")
    print("\nDone.")
}

/// Prints a numbered step.
func step(_ number: Int, _ text: String) {
    print("\(number). \(text)")
}

/// Waits until the view context has run every block queued so far, which includes the
/// automatic merges of saves that already returned (they are queued on it during the save).
func mergesArrived(in viewContext: NSManagedObjectContext) async {
    await viewContext.perform(schedule: .enqueued) {}
}
