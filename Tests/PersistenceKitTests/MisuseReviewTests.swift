import Foundation
import PersistenceKit
import Testing

// Misuse and lifetime: programmer errors trap with a message naming the rule, bad input
// to a save is a typed error, nothing saved is lost, and a released model frees its
// entities. Each test failed before its fix.

enum MRSupport {
    static func stderr(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    /// An entity "Item" with an optional string "name", built by hand.
    static func itemEntity(_ name: String = "Item") -> NSEntityDescription {
        let n = NSAttributeDescription(name: "name", type: .stringAttributeType)
        n.isOptional = true
        return NSEntityDescription(name: name, properties: [n])
    }
}

@Suite struct MisuseReviewTests {
    // MARK: 1. An entity in use joins a second model

    /// Putting an entity that a coordinator already uses into another model must trap (it
    /// mutates a model in use). Before the fix, the second model silently takes the entity over and
    /// re-indexes it: the first container's saved rows become invisible (count 0) and its own
    /// object IDs are refused by existingObject(with:) as "another coordinator".
    @Test func anEntityInUseCannotJoinASecondModel() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let item = MRSupport.itemEntity("M")
            let first = try OTSupport.container(model: NSManagedObjectModel(entities: [item]), name: "first")
            let context = first.newBackgroundContext()
            try context.performAndWait {
                NSEntityDescription.insertNewObject(forEntityName: "M", into: context).setValue("saved", forKey: "name")
                try context.save()
            }
            _ = NSManagedObjectModel(entities: [MRSupport.itemEntity("A"), item])
        }
        let text = MRSupport.stderr(result)
        #expect(text.contains("'M'"), "stderr: \(text)")
    }

    // MARK: 2. A relationship to an object that is in no context

    /// Core Data fails such a save ("Dangling reference to an invalid object", 1550). As
    /// found, the save succeeds, the store gets `shelf = nil`, and the book in memory still
    /// shows the shelf: the link is lost without a word.
    @Test func savingALinkToAnObjectNeverInsertedFails() throws {
        let container = try Fixtures.container()
        let model = container.managedObjectModel
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(entity: model.entitiesByName["Book"]!, insertInto: nil)
            let shelf = Shelf(entity: model.entitiesByName["Shelf"]!, insertInto: nil)
            book.shelf = shelf
            context.insert(book)  // the shelf is never inserted
            #expect(throws: CoreDataError.self) { try context.save() }
            #expect(context.hasChanges, "a failed save keeps the changes")
        }
    }

    // MARK: 3. A detached object carrying another coordinator's permanent ID

    /// Before the fix, the insert is accepted and the save overwrites the row with the same
    /// primary key in this coordinator's store: a saved "precious" book is replaced.
    @Test func insertingAnObjectWithAnotherCoordinatorsIDTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let model = try Fixtures.model()  // one model shared by two containers
            let x = try OTSupport.container(model: model, name: "X")
            let y = try OTSupport.container(model: model, name: "Y")
            let yContext = y.newBackgroundContext()
            try yContext.performAndWait {
                Book(context: yContext).title = "precious"
                try yContext.save()
            }
            let xContext = x.newBackgroundContext()
            let detached: Book = try xContext.performAndWait {
                let book = Book(context: xContext)
                book.title = "intruder"
                try xContext.obtainPermanentIDs(for: [book])  // Book/p1 of X's store
                xContext.delete(book)
                xContext.processPendingChanges()  // inserted then deleted: detached, keeps its ID
                return book
            }
            try yContext.performAndWait {
                yContext.insert(detached)
                try yContext.save()
            }
        }
        let text = MRSupport.stderr(result)
        #expect(text.contains("insert(_:)"), "stderr: \(text)")
        #expect(text.contains("coordinator"), "stderr: \(text)")
    }

    // MARK: 4. Replacing a context's coordinator

    /// Core Data raises "Context already has a coordinator; cannot replace." Before the fix, the
    /// setter accepts it and the next save writes an object read from store A into store B
    /// under its row ID, overwriting B's unrelated row.
    @Test func replacingTheCoordinatorOfAContextInUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let model = try Fixtures.model()
            let a = try OTSupport.container(model: model, name: "A")
            let b = try OTSupport.container(model: model, name: "B")
            let context = a.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).title = "in A"
                try context.save()
            }
            context.persistentStoreCoordinator = b.persistentStoreCoordinator
        }
        let text = MRSupport.stderr(result)
        #expect(text.contains("coordinator"), "stderr: \(text)")
    }

    // MARK: 5. setPrimitiveValue with an object of another entity

    /// The doc says setPrimitiveValue "traps on ... a value of the wrong type". Before the fix, an
    /// Author is accepted for Book.shelf and saved: a fresh context then reads a phantom
    /// Shelf (the Author's row decoded as a Shelf) that no fetch of Shelf returns.
    @Test func setPrimitiveValueWithAnObjectOfTheWrongEntityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                book.setPrimitiveValue(Author(context: context), forKey: "shelf")
            }
        }
        let text = MRSupport.stderr(result)
        #expect(text.contains("Book.shelf") || text.contains("'shelf'"), "stderr: \(text)")
        #expect(text.contains("Author"), "stderr: \(text)")
    }

    /// A primitive link to an object of another context must not be saved (Core Data fails
    /// the save: objects in different contexts). Before the fix, it is saved.
    @Test func savingAPrimitiveLinkToAnotherContextsObjectFails() throws {
        let container = try Fixtures.container()
        let other = container.newBackgroundContext()
        let foreign = try other.performAndWait { () -> Shelf in
            let shelf = Shelf(context: other)
            try other.save()
            return shelf
        }
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            book.setPrimitiveValue(foreign, forKey: "shelf")
            #expect(throws: CoreDataError.self) { try context.save() }
        }
    }

    // MARK: 6. An unknown sort key

    /// An unknown sort key traps only when two objects are compared: with zero or one
    /// matching row the same request succeeds, so the bug surfaces only once data grows.
    @Test func anUnknownSortKeyTrapsWhateverTheNumberOfRows() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).title = "only one"
                try context.save()
                let request = Book.fetchRequest()
                request.sortKeys = [SortKey("rating")]
                _ = try context.fetch(request)
            }
        }
        let text = MRSupport.stderr(result)
        #expect(text.contains("rating"), "stderr: \(text)")
    }

    // MARK: 7. Models with relationships are never freed

    /// destinationEntity and inverseRelationship are strong, so entities related to each
    /// other form a reference cycle: every model with a relationship leaks all of its
    /// entity and property descriptions (a model without relationships is freed).
    @Test func theEntitiesOfAModelWithRelationshipsAreFreed() throws {
        weak var book: NSEntityDescription?
        weak var shelfRelationship: NSPropertyDescription?
        do {
            let model = try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self, Cover.self])
            book = model.entitiesByName["Book"]
            shelfRelationship = book?.propertiesByName["shelf"]
        }
        #expect(book == nil)
        #expect(shelfRelationship == nil)
    }

    /// The same through a whole container that was used and released.
    @Test func theModelOfAReleasedContainerIsFreed() throws {
        weak var entity: NSEntityDescription?
        weak var coordinator: NSPersistentStoreCoordinator?
        do {
            let container = try Fixtures.container()
            coordinator = container.persistentStoreCoordinator
            entity = container.managedObjectModel.entitiesByName["Shelf"]
            let context = container.newBackgroundContext()
            try context.performAndWait {
                Book(context: context).shelf = Shelf(context: context)
                try context.save()
            }
        }
        #expect(coordinator == nil)
        #expect(entity == nil)
    }

    // MARK: 8. Malformed merge input is silently ignored

    /// A did-save dictionary whose values are not collections of IDs, objects or URIs, or
    /// whose IDs belong to another coordinator, is a programmer error; before the fix it was ignored
    /// without a word (the context simply misses the changes).
    @Test func mergingAMalformedNotificationTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                context.mergeChanges(
                    fromContextDidSave: Notification(
                        name: .NSManagedObjectContextDidSave, object: nil, userInfo: [NSUpdatedObjectsKey: "not a set"]))
            }
        }
        let text = MRSupport.stderr(result)
        #expect(text.contains(NSUpdatedObjectsKey), "stderr: \(text)")
    }

    @Test func mergingIDsOfAnotherCoordinatorTraps() async {
        await #expect(processExitsWith: .failure) {
            let first = try Fixtures.container(name: "first")
            let second = try Fixtures.container(name: "second")
            let writer = first.newBackgroundContext()
            let id: NSManagedObjectID = try writer.performAndWait {
                let book = Book(context: writer)
                try writer.save()
                return book.objectID
            }
            NSManagedObjectContext.mergeChanges(
                fromRemoteContextSave: [NSDeletedObjectIDsKey: [id]], into: [second.newBackgroundContext()])
        }
    }

    // MARK: 9. A misspelt store option

    /// An unknown durability value ("Normal" for "normal") silently falls back to full.
    @Test func anUnknownDurabilityValueIsReported() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("MisuseReview-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let container = NSPersistentContainer(name: "Durability", managedObjectModel: try Fixtures.model())
        let description = NSPersistentStoreDescription(url: folder.appendingPathComponent("d.store"))
        description.setOption("Normal", forKey: FileStore.durabilityOptionKey)
        container.persistentStoreDescriptions = [description]
        await #expect(throws: CoreDataError.self) { try await container.loadPersistentStores() }
    }

    /// A predicate over a class the entity's objects are not could match nothing: the fetch
    /// and the count say so instead of answering "none".
    @Test func aPredicateOverAnotherClassIsATypedError() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            Book(context: context).title = "kept"
            try context.save()
            let request = NSFetchRequest<NSManagedObject>(entityName: "Book")
            request.setPredicate(#Predicate<Author> { $0.name == "x" })
            let fetchError = #expect(throws: CoreDataError.self) { _ = try context.fetch(request) }
            #expect(fetchError?.message.contains("Author") == true)
            #expect(fetchError?.message.contains("'Book'") == true)
            #expect(throws: CoreDataError.self) { _ = try context.count(for: request) }
            request.setPredicate(#Predicate<Book> { $0.title == "kept" })
            #expect(try context.fetch(request).count == 1)
        }
    }
}
