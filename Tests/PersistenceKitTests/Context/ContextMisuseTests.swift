import Foundation
import Testing
import PersistenceKit

/// Objects and IDs of another context or coordinator, unknown entities, a coordinator swapped
/// under a context in use: a trap with a precise message, or a typed error where Core Data throws.
@Suite("Misused contexts trap or throw") struct ContextMisuseTests {
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
        let text = MisuseSupport.stderr(result)
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
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("temporary"), "stderr: \(text)")
    }

    @Test func insertingAnUnknownEntityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                _ = NSEntityDescription.insertNewObject(forEntityName: "Magazine", into: context)
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Magazine"), "stderr: \(text)")
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
        let first = try OTSupport.container(model: model, name: "first")
        let second = try OTSupport.container(model: model, name: "second")
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
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("delete"), "stderr: \(text)")
        #expect(text.contains("Book"), "stderr: \(text)")
    }

    // MARK: A detached object carrying another coordinator's permanent ID

    /// Inserting it traps: were the insert accepted, the save would overwrite the row with the
    /// same primary key in this coordinator's store, replacing a saved "precious" book.
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
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("insert(_:)"), "stderr: \(text)")
        #expect(text.contains("coordinator"), "stderr: \(text)")
    }

    // MARK: Replacing a context's coordinator

    /// Core Data raises "Context already has a coordinator; cannot replace." Were the setter to
    /// accept it, the next save would write an object read from store A into store B under its
    /// row ID, overwriting B's unrelated row.
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
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("coordinator"), "stderr: \(text)")
    }
}
