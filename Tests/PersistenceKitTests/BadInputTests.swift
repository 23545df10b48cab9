import Foundation
import PersistenceKit
import Testing

// Model classes used only by BadInputTests.

final class BITSmall: NSManagedObject {
    @Attribute var small: Int16 = 0
    @Attribute var code: String = ""
    @Attribute var note: String?
}

enum BITSupport {
    static func container(model: NSManagedObjectModel, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// A container whose stores were never loaded.
    static func unloadedContainer(name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try Fixtures.model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        return container
    }

    /// A model that fails validation (a transformable attribute).
    static func invalidModel() -> NSManagedObjectModel {
        let blob = NSAttributeDescription(name: "blob", type: .transformableAttributeType)
        return NSManagedObjectModel(entities: [NSEntityDescription(name: "Thing", properties: [blob])])
    }

    /// The captured standard error of an exit test, as text.
    static func stderr(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }
}

@Suite struct BadInputTests {
    // MARK: Traps (Core Data raises exceptions for these)

    @Test func setValueWithWrongTypeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                book.setValue("many", forKey: "pages")
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("Book.pages"), "stderr: \(text)")
        #expect(text.contains("String"), "stderr: \(text)")
    }

    @Test func setValueOfAnotherEntityOnARelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                let author = Author(context: context)
                book.setValue(author, forKey: "shelf")
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("Book.shelf") || text.contains("'shelf'"), "stderr: \(text)")
        #expect(text.contains("Shelf"), "stderr: \(text)")
        #expect(text.contains("Author"), "stderr: \(text)")
    }

    @Test func keyPathThroughAToManyRelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let shelf = Shelf(context: context)
                _ = shelf.value(forKeyPath: "books.title")
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("books.title"), "stderr: \(text)")
        #expect(text.contains("'books' of entity 'Shelf' is not a to-one relationship"), "stderr: \(text)")
    }

    @Test func unknownKeyInValueForKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                _ = book.value(forKey: "isbn")
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("isbn"), "stderr: \(text)")
        #expect(text.contains("Book"), "stderr: \(text)")
    }

    @Test func unknownKeyInSetValueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let shelf = Shelf(context: context)
                shelf.setValue("x", forKey: "colour")
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("colour"), "stderr: \(text)")
        #expect(text.contains("Shelf"), "stderr: \(text)")
    }

    @Test func objectWithIDFromAnotherCoordinatorTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = try Fixtures.container(name: "first")
            let second = try Fixtures.container(name: "second")
            let writer = first.newBackgroundContext()
            let id: NSManagedObjectID = try writer.performAndWait {
                let book = Book(context: writer)
                try writer.save()
                return book.objectID
            }
            let reader = second.newBackgroundContext()
            reader.performAndWait {
                _ = reader.object(with: id)
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("object(with:"), "stderr: \(text)")
        #expect(text.contains("another coordinator"), "stderr: \(text)")
    }

    @Test func objectWithATemporaryIDFromAnotherContextTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let first = container.newBackgroundContext()
            let id: NSManagedObjectID = first.performAndWait { Book(context: first).objectID }
            let second = container.newBackgroundContext()
            second.performAndWait {
                _ = second.object(with: id)
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("temporary"), "stderr: \(text)")
    }

    @Test func readingAnObjectWhoseDeletionWasSavedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let book = Book(context: context)
                book.title = "Gone"
                try context.save()
                context.delete(book)
                try context.save()
                _ = book.title
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("Book"), "stderr: \(text)")
        #expect(text.contains("title"), "stderr: \(text)")
    }

    /// With `shouldDeleteInaccessibleFaults` off (on, the object becomes a deleted one:
    /// InaccessibleFaultTests).
    @Test func firingAFaultForARowDeletedElsewhereTrapsWhenInaccessibleFaultsAreNotDeleted() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let writer = container.newBackgroundContext()
            let id: NSManagedObjectID = try writer.performAndWait {
                let book = Book(context: writer)
                try writer.save()
                return book.objectID
            }
            let reader = container.newBackgroundContext()
            reader.shouldDeleteInaccessibleFaults = false
            let fault = reader.performAndWait { reader.object(with: id) as? Book }
            try writer.performAndWait {
                writer.delete(writer.object(with: id))
                try writer.save()
            }
            reader.performAndWait {
                _ = fault?.title
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("could not fulfill the fault"), "stderr: \(text)")
        #expect(text.contains("Book"), "stderr: \(text)")
        #expect(text.contains("shouldDeleteInaccessibleFaults"), "stderr: \(text)")
    }

    @Test func relatingObjectsOfDifferentContextsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let a = container.newBackgroundContext()
            let b = container.newBackgroundContext()
            let shelf = a.performAndWait { Shelf(context: a) }
            b.performAndWait {
                let book = Book(context: b)
                a.performAndWait { book.shelf = shelf }
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("shelf"), "stderr: \(text)")
        #expect(text.contains("context"), "stderr: \(text)")
    }

    @Test func mutableSetValueOnAToOneRelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                _ = book.mutableSetValue(forKey: "shelf").count
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("Book.shelf"), "stderr: \(text)")
        #expect(text.contains("to-many"), "stderr: \(text)")
    }

    @Test func insertingAnUnknownEntityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                _ = NSEntityDescription.insertNewObject(forEntityName: "Magazine", into: context)
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("Magazine"), "stderr: \(text)")
    }

    @Test func changingAModelInUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let book = container.managedObjectModel.entitiesByName["Book"]
            book?.attributesByName["title"]?.isIndexed = true
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("Book.title"), "stderr: \(text)")
    }

    // MARK: Thrown errors

    @Test func existingObjectFromAnotherCoordinatorThrows() throws {
        let first = try Fixtures.container(name: "first")
        let second = try Fixtures.container(name: "second")
        let writer = first.newBackgroundContext()
        let id: NSManagedObjectID = try writer.performAndWait {
            let book = Book(context: writer)
            try writer.save()
            return book.objectID
        }
        let reader = second.newBackgroundContext()
        reader.performAndWait {
            let error = #expect(throws: CoreDataError.self) { try reader.existingObject(with: id) }
            #expect(error?.code == .managedObjectExternalRelationship)
            #expect(error?.code.rawValue == 133010)
            #expect(error?.objectID == id)
        }
    }

    @Test func existingObjectFromAnotherCoordinatorWithTheSameModelThrows() throws {
        // Two coordinators sharing one model instance: the store identifier tells them apart.
        let model = try Fixtures.model()
        let first = try BITSupport.container(model: model, name: "first")
        let second = try BITSupport.container(model: model, name: "second")
        let writer = first.newBackgroundContext()
        let id: NSManagedObjectID = try writer.performAndWait {
            let book = Book(context: writer)
            try writer.save()
            return book.objectID
        }
        let reader = second.newBackgroundContext()
        reader.performAndWait {
            let error = #expect(throws: CoreDataError.self) { try reader.existingObject(with: id) }
            #expect(error?.code == .managedObjectExternalRelationship)
        }
    }

    @Test func existingObjectForASavedDeletionThrows() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id: NSManagedObjectID = try context.performAndWait {
            let book = Book(context: context)
            try context.save()
            let id = book.objectID
            context.delete(book)
            try context.save()
            let error = #expect(throws: CoreDataError.self) { try context.existingObject(with: id) }
            #expect(error?.code == .managedObjectReferentialIntegrity)
            #expect(error?.objectID == id)
            return id
        }
        let other = container.newBackgroundContext()
        other.performAndWait {
            let error = #expect(throws: CoreDataError.self) { try other.existingObject(with: id) }
            #expect(error?.code == .managedObjectReferentialIntegrity)
            #expect(error?.code.rawValue == 133000)
        }
    }

    @Test func existingObjectForATemporaryIDOfAnotherContextThrows() throws {
        let container = try Fixtures.container()
        let first = container.newBackgroundContext()
        let id: NSManagedObjectID = first.performAndWait { Book(context: first).objectID }
        let second = container.newBackgroundContext()
        second.performAndWait {
            let error = #expect(throws: CoreDataError.self) { try second.existingObject(with: id) }
            #expect(error?.code == .managedObjectReferentialIntegrity)
        }
    }

    @Test func savingWithNoStoreLoadedThrows() throws {
        let container = try BITSupport.unloadedContainer()
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            book.title = "Nowhere"
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .coreData)
            #expect(error?.code.rawValue == 134060)
            // Nothing changed in the context.
            #expect(context.hasChanges)
            #expect(book.isInserted)
            #expect(book.objectID.isTemporaryID)
            #expect(book.title == "Nowhere")

            let fetchError = #expect(throws: CoreDataError.self) { try context.fetch(Book.fetchRequest()) }
            #expect(fetchError?.code == .coreData)
            let idError = #expect(throws: CoreDataError.self) { try context.obtainPermanentIDs(for: [book]) }
            #expect(idError?.code == .coreData)
        }
    }

    @Test func loadingAStoreTwiceReportsAlreadyAdded() async throws {
        let container = try BITSupport.unloadedContainer()
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        #expect(box.get() == nil)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)

        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get() as? CoreDataError)
        #expect(error.code == .persistentStoreAlreadyAdded)
        #expect(error.code.rawValue == 134081)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)

        // The async form reports it too.
        let asyncError = await #expect(throws: CoreDataError.self) { try await container.loadPersistentStores() }
        #expect(asyncError?.code == .persistentStoreAlreadyAdded)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)
    }

    @Test func addingAStoreAtTheSameURLTwiceReportsAlreadyAdded() throws {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("bit-\(UUID().uuidString).store")
        let container = NSPersistentContainer(name: "twice", managedObjectModel: try Fixtures.model())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url, type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        #expect(box.get() == nil)
        // A new description naming the same location.
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url, type: NSInMemoryStoreType)]
        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get() as? CoreDataError)
        #expect(error.code == .persistentStoreAlreadyAdded)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)

        let direct = #expect(throws: CoreDataError.self) {
            try container.persistentStoreCoordinator.addPersistentStore(type: NSInMemoryStoreType, at: url)
        }
        #expect(direct?.code == .persistentStoreAlreadyAdded)
    }

    @Test func addingTheSameStoreObjectTwiceReportsAlreadyAdded() throws {
        let model = try Fixtures.model()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = InMemoryStore(model: model)
        try coordinator.addPersistentStore(store)
        let error = #expect(throws: CoreDataError.self) { try coordinator.addPersistentStore(store) }
        #expect(error?.code == .persistentStoreAlreadyAdded)
        #expect(coordinator.persistentStores.count == 1)
    }

    @Test func unknownStoreTypeThrows() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try Fixtures.model())
        let error = #expect(throws: CoreDataError.self) {
            try coordinator.addPersistentStore(type: "NoSuchStoreType", at: nil)
        }
        #expect(error?.code == .persistentStoreInvalidType)
        #expect(coordinator.persistentStores.isEmpty)
    }

    @Test func invalidModelAddedToACoordinatorFails() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: BITSupport.invalidModel())
        let error = #expect(throws: CoreDataError.self) {
            try coordinator.addPersistentStore(type: NSInMemoryStoreType, at: nil)
        }
        #expect(error?.code == .coreData)
        let modelError = try #require(error?.underlying as? ModelError)
        #expect(modelError.kind == .unsupportedType(.transformableAttributeType))
        #expect(modelError.entity == "Thing")
        #expect(modelError.property == "blob")
        #expect(error?.description.contains("Thing.blob") == true)
        #expect(coordinator.persistentStores.isEmpty)

        let model = BITSupport.invalidModel()
        let direct = #expect(throws: CoreDataError.self) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(InMemoryStore(model: model))
        }
        #expect(direct?.code == .coreData)
    }

    @Test func invalidModelInAContainerReportsTheErrorOnLoad() throws {
        let container = NSPersistentContainer(name: "invalid", managedObjectModel: BITSupport.invalidModel())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        let error = try #require(box.get() as? CoreDataError)
        #expect(error.code == .coreData)
        #expect((error.underlying as? ModelError)?.property == "blob")
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
    }

    // MARK: validateValue(_:forKey:)

    @Test func validateValueThrowsTypedErrors() throws {
        let container = try BITSupport.container(
            model: try NSManagedObjectModel(managedObjectClasses: [BITSmall.self, Shelf.self, Book.self, Author.self, Cover.self]))
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let small = BITSmall(context: context)
            let book = Book(context: context)
            let shelf = Shelf(context: context)
            let author = Author(context: context)

            var error = #expect(throws: CoreDataError.self) { try book.validateValue("x", forKey: "isbn") }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "isbn")
            #expect(error?.objectID == book.objectID)

            error = #expect(throws: CoreDataError.self) { try book.validateValue("many", forKey: "pages") }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "pages")
            #expect(error?.code.rawValue == 1550)
            #expect(error?.description.contains("Book.pages") == true)

            error = #expect(throws: CoreDataError.self) { try small.validateValue(70_000, forKey: "small") }
            #expect(error?.code == .managedObjectValidation, "70000 does not fit in Integer 16")
            #expect(error?.key == "small")

            error = #expect(throws: CoreDataError.self) { try book.validateValue(nil, forKey: "title") }
            #expect(error?.code == .validationMissingMandatoryProperty)
            #expect(error?.key == "title")
            #expect(error?.code.rawValue == 1570)

            error = #expect(throws: CoreDataError.self) { try book.validateValue(NSNull(), forKey: "title") }
            #expect(error?.code == .validationMissingMandatoryProperty)

            error = #expect(throws: CoreDataError.self) { try book.validateValue(author, forKey: "shelf") }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "shelf")

            error = #expect(throws: CoreDataError.self) {
                try book.validateValue([shelf] as [NSManagedObject], forKey: "authors")
            }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "authors")

            // Good values pass.
            try book.validateValue("A title", forKey: "title")
            try book.validateValue(12, forKey: "pages")
            try book.validateValue(Int64(12), forKey: "pages")
            try book.validateValue(nil, forKey: "published")
            try book.validateValue(Date(), forKey: "published")
            try book.validateValue(shelf, forKey: "shelf")
            try book.validateValue(nil, forKey: "shelf")
            try book.validateValue(Set([author as NSManagedObject]), forKey: "authors")
            try small.validateValue(Int16.max, forKey: "small")
            try small.validateValue(Optional<String>.none, forKey: "note")

            // Validating never changes the object.
            #expect(book.pages == 0)
            #expect(book.title == "")
            #expect(book.shelf == nil)
        }
    }

    @Test func validateValueDoesNotMarkASavedObjectChanged() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            try context.save()
            _ = #expect(throws: CoreDataError.self) { try book.validateValue("bad", forKey: "pages") }
            try book.validateValue(5, forKey: "pages")
            #expect(!book.hasChanges)
            #expect(!context.hasChanges)
        }
    }

    @Test func savingMissingRequiredValuesReportsEveryErrorAndKeepsChanges() throws {
        let container = try BITSupport.container(model: try NSManagedObjectModel(managedObjectClasses: [BITSmall.self]))
        let context = container.newBackgroundContext()
        context.performAndWait {
            let one = BITSmall(context: context)
            one.setValue(nil, forKey: "code")
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .validationMissingMandatoryProperty)
            #expect(error?.key == "code")
            #expect(error?.objectID == one.objectID)

            let two = BITSmall(context: context)
            two.setValue(nil, forKey: "code")
            let both = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(both?.code == .validationMultipleErrors)
            #expect(both?.detailedErrors.count == 2)
            #expect(both?.detailedErrors.allSatisfy { $0.code == .validationMissingMandatoryProperty && $0.key == "code" } == true)
            #expect(Set(both?.detailedErrors.compactMap(\.objectID) ?? []) == [one.objectID, two.objectID])

            // The failed saves left the context as it was, and wrote nothing.
            #expect(context.insertedObjects == [one, two])
            #expect(one.isInserted)
            #expect(one.objectID.isTemporaryID)
        }
        let other = container.newBackgroundContext()
        let stored = try other.performAndWait { try other.count(for: BITSmall.fetchRequest()) }
        #expect(stored == 0)
    }

    @Test func projectedSetOfAToOneRelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                _ = book.$shelf.count
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("shelf"), "stderr: \(text)")
        #expect(text.contains("to-many"), "stderr: \(text)")
    }

    @Test func deletingAnObjectOfAnotherContextTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let a = container.newBackgroundContext()
            let b = container.newBackgroundContext()
            let book = a.performAndWait { Book(context: a) }
            b.performAndWait {
                a.performAndWait { b.delete(book) }
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("delete"), "stderr: \(text)")
        #expect(text.contains("Book"), "stderr: \(text)")
    }

    @Test func valueForKeyOnADeletedAndSavedObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let shelf = Shelf(context: context)
                try context.save()
                context.delete(shelf)
                try context.save()
                _ = shelf.value(forKey: "name")
            }
        }
        let text = BITSupport.stderr(result)
        #expect(text.contains("Shelf"), "stderr: \(text)")
        #expect(text.contains("name"), "stderr: \(text)")
    }
}

/// Found in review: an NSNumber with a fraction was accepted for an integer attribute and
/// cut to its integer part.
@Test func anNSNumberWithAFractionIsNotAnInteger() throws {
    let context = try Fixtures.container().newBackgroundContext()
    try context.performAndWait {
        let book = Book(context: context)
        #expect(throws: (any Error).self) { try book.validateValue(NSNumber(value: 3.7), forKey: "pages") }
        try book.validateValue(NSNumber(value: 3.0), forKey: "pages")
        book.setValue(NSNumber(value: 42), forKey: "pages")
        #expect(book.pages == 42)
    }
}

/// Found in review: a file store took the path of any URL, so `https://host/tmp/x.store`
/// created and locked `/tmp/x.store` on the local disk.
@Test func aFileStoreRefusesAURLThatIsNotAFileURL() async throws {
    let name = "not-a-file-url-\(UUID().uuidString).store"
    let url = try #require(URL(string: "https://example.com/tmp/\(name)"))
    let container = NSPersistentContainer(name: "web", managedObjectModel: try Fixtures.model())
    container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: url)]
    let error = await #expect(throws: CoreDataError.self) { try await container.loadPersistentStores() }
    #expect(error?.code == .persistentStoreOpen)
    #expect(error?.description.contains("file URL") == true)
    #expect(throws: FileStoreError.self) { _ = try FileStore.open(at: url, model: try Fixtures.model()) }
    #expect(!FileManager.default.fileExists(atPath: "/tmp/\(name)"))
    #expect(!FileManager.default.fileExists(atPath: "/tmp/\(name)-lock"))
}
