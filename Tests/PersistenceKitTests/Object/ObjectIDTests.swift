import Foundation
import TestSupport
import Testing
import PersistenceKit

@Suite("Object IDs: temporary, permanent and URI forms") struct ObjectIDTests {
    /// Compile-time check that a type is Sendable.
    private static func requireSendable<T: Sendable>(_: T.Type) {}

    @Test func objectIDIsSendableAndHashable() async throws {
        Self.requireSendable(NSManagedObjectID.self)
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        // IDs leave the context's queue as the result of an async perform.
        let ids: [NSManagedObjectID] = try await context.perform {
            let a = Book(context: context)
            let b = Book(context: context)
            try context.save()
            return [a.objectID, b.objectID]
        }
        #expect(ids.count == 2)
        #expect(ids[0] != ids[1])
        #expect(Set(ids).count == 2)
        // The same object, looked up in another context, has an equal ID with an equal hash.
        let other = container.newBackgroundContext()
        let (count, again): (Int, NSManagedObjectID) = try await other.perform {
            let fetched = try other.fetch(Book.fetchRequest())
            return (fetched.count, try other.existingObject(with: ids[0]).objectID)
        }
        #expect(count == 2)
        #expect(again == ids[0])
        #expect(again.hashValue == ids[0].hashValue)
        #expect(Set(ids + [again]).count == 2)
        var seen: [NSManagedObjectID: String] = [:]
        seen[ids[0]] = "first"
        #expect(seen[again] == "first")
    }

    @Test func objectIDNamesItsEntity() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            let shelf = Shelf(context: context)
            #expect(book.objectID.entity.name == "Book")
            #expect(book.objectID.entity === container.managedObjectModel.entitiesByName["Book"])
            #expect(book.objectID.entity === book.entity)
            #expect(shelf.objectID.entity.name == "Shelf")
            try context.save()
            #expect(book.objectID.entity.name == "Book")
            #expect(book.objectID.entity === book.entity)
        }
    }

    @Test func temporaryUntilSaved() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            let temporary = book.objectID
            #expect(temporary.isTemporaryID)
            #expect(temporary.persistentStoreIdentifier == nil)
            #expect(context.registeredObject(for: temporary) === book)
            try context.save()
            let permanent = book.objectID
            #expect(!permanent.isTemporaryID)
            #expect(permanent != temporary)
            #expect(permanent.persistentStoreIdentifier == container.persistentStoreCoordinator.persistentStores.first?.identifier)
            #expect(context.registeredObject(for: permanent) === book)
            #expect(context.object(with: permanent) === book)
            // Later saves keep the permanent ID.
            book.title = "again"
            try context.save()
            #expect(book.objectID == permanent)
        }
    }

    /// Objects keep a key and make their `NSManagedObjectID` only when asked (`ObjectKey`).
    /// An object whose ID nobody read before the save must still be registered under its
    /// permanent ID afterwards; a temporary ID read before the save no longer finds it; a
    /// fetched object's lazily made ID equals the saving context's ID, and is made once.
    @Test func idsMadeOnDemandMatchTheKeysObjectsAreRegisteredUnder() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let (unread, readEarly, temporary): (NSManagedObjectID, NSManagedObjectID, NSManagedObjectID) = try writer.performAndWait {
            let quiet = Book(context: writer)
            quiet.title = "never asked"
            let early = Book(context: writer)
            early.title = "asked before saving"
            let temporary = early.objectID
            try writer.save()
            #expect(!quiet.objectID.isTemporaryID)
            #expect(writer.registeredObject(for: quiet.objectID) === quiet)
            #expect(writer.registeredObject(for: early.objectID) === early)
            #expect(writer.registeredObject(for: temporary) == nil)
            #expect(temporary.isTemporaryID)
            return (quiet.objectID, early.objectID, temporary)
        }
        #expect(unread != readEarly && readEarly != temporary)
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = Book.fetchRequest()
            request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: false)]
            let books = try reader.fetch(request)
            #expect(books.map(\.title) == ["never asked", "asked before saving"])
            #expect(books.map(\.objectID) == [unread, readEarly])
            #expect(books[0].objectID === books[0].objectID)
            #expect(reader.object(with: unread) === books[0])
            #expect(reader.registeredObject(for: readEarly) === books[1])
        }
    }

    /// New objects stay out of the context's ID registry until they have permanent IDs
    /// (`NSManagedObjectContext.temporaries`): a temporary ID must still find its object
    /// however and whenever it was made, and stop finding it once the object leaves.
    @Test func temporaryIDsFindInsertedObjectsWheneverTheIDWasMade() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let quiet = Book(context: context)  // its ID is never read before the save
            let read = Book(context: context)
            let id = read.objectID  // made after the insert
            let detached = Book(entity: read.entity, insertInto: nil)
            let earlyID = detached.objectID  // made before the insert
            context.insert(detached)
            for (object, objectID) in [(read, id), (detached, earlyID)] {
                #expect(objectID.isTemporaryID)
                #expect(context.registeredObject(for: objectID) === object)
                #expect(context.object(with: objectID) === object)
                #expect(try context.existingObject(with: objectID) === object)
            }
            #expect(context.registeredObjects == [quiet, read, detached])

            // Deleted before any save: the ID no longer finds it.
            context.delete(detached)
            context.processPendingChanges()
            #expect(context.registeredObject(for: earlyID) == nil)
            #expect(throws: CoreDataError.self) { try context.existingObject(with: earlyID) }
            #expect(context.registeredObjects == [quiet, read])

            // Another context's temporary IDs name nothing here.
            let other = container.newBackgroundContext()
            other.performAndWait { #expect(other.registeredObject(for: id) == nil) }

            try context.save()
            #expect(context.registeredObject(for: id) == nil)
            #expect(context.registeredObject(for: read.objectID) === read)
            #expect(context.registeredObject(for: quiet.objectID) === quiet)
            #expect(context.registeredObjects == [quiet, read])
        }
    }

    /// Keys hold their store as a process-wide number (`StoreNumbers`): the same row of two
    /// stores must still give unequal IDs, each naming its own store.
    @Test func theSameRowOfTwoStoresGivesDifferentIDs() throws {
        func savedBook(_ container: NSPersistentContainer) throws -> NSManagedObjectID {
            let context = container.newBackgroundContext()
            return try context.performAndWait {
                let book = Book(context: context)
                book.title = "first"
                try context.save()
                return book.objectID
            }
        }
        let one = try Fixtures.container(name: "storeOne")
        let two = try Fixtures.container(name: "storeTwo")
        let a = try savedBook(one), b = try savedBook(two)
        #expect(a.uriRepresentation().lastPathComponent == b.uriRepresentation().lastPathComponent)  // the same row
        #expect(a != b)
        #expect(a.persistentStoreIdentifier == one.persistentStoreCoordinator.persistentStores.first?.identifier)
        #expect(b.persistentStoreIdentifier == two.persistentStoreCoordinator.persistentStores.first?.identifier)
        #expect(a.persistentStoreIdentifier != b.persistentStoreIdentifier)
        #expect(one.persistentStoreCoordinator.managedObjectID(forURIRepresentation: a.uriRepresentation()) == a)
        #expect(two.persistentStoreCoordinator.managedObjectID(forURIRepresentation: a.uriRepresentation()) == nil)
    }

    @Test func everyInsertedObjectGetsADistinctTemporaryID() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let objects: [NSManagedObject] = (0..<20).map { i in i % 2 == 0 ? Book(context: context) : Shelf(context: context) }
            let ids = objects.map(\.objectID)
            #expect(ids.allSatisfy { $0.isTemporaryID })
            #expect(Set(ids).count == 20)
            #expect(Set(ids.map { $0.uriRepresentation() }).count == 20)
            try context.save()
            let permanent = objects.map(\.objectID)
            #expect(!permanent.contains { $0.isTemporaryID })
            #expect(Set(permanent).count == 20)
            #expect(Set(permanent.map { $0.uriRepresentation() }).count == 20)
        }
    }

    @Test func obtainPermanentIDsBeforeSaving() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            let shelf = Shelf(context: context)
            book.shelf = shelf
            let saved = Book(context: context)
            try context.obtainPermanentIDs(for: [saved])
            let savedID = saved.objectID
            #expect(!savedID.isTemporaryID)

            try context.obtainPermanentIDs(for: [book, shelf, saved])
            let bookID = book.objectID
            #expect(!bookID.isTemporaryID)
            #expect(!shelf.objectID.isTemporaryID)
            #expect(saved.objectID == savedID, "an object that already has a permanent ID keeps it")
            #expect(book.isInserted, "the object is still an unsaved insert")
            #expect(context.insertedObjects.contains(book))
            #expect(context.registeredObject(for: bookID) === book)
            #expect(book.shelf === shelf)

            try context.save()
            #expect(book.objectID == bookID, "saving keeps the ID obtained earlier")
            #expect(saved.objectID == savedID)
            #expect(!book.isInserted)
        }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            #expect(try other.count(for: Book.fetchRequest()) == 2)
            let shelf = try #require(try other.fetch(Shelf.fetchRequest()).first)
            #expect(shelf.books.count == 1)
        }
    }

    /// A save where some inserts got their permanent IDs early and the rest get them now:
    /// every object is registered under its ID afterwards, whichever way it got it (the
    /// save registers the newly keyed ones as a list of their own, or as the whole insert
    /// list when every insert was keyed by the save).
    @Test func aSaveRegistersInsertsKeyedEarlyAndNowAlike() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let books = (0..<6).map { i -> Book in
                let b = Book(context: context)
                b.title = "B\(i)"
                return b
            }
            try context.obtainPermanentIDs(for: [books[2], books[4]])
            let early = [books[2].objectID, books[4].objectID]
            try context.save()
            #expect([books[2].objectID, books[4].objectID] == early)
            for b in books {
                #expect(!b.objectID.isTemporaryID)
                #expect(context.registeredObject(for: b.objectID) === b, "\(b.title) is registered under its ID")
                #expect(context.object(with: b.objectID) === b)
            }
            let all = books.map(\.objectID)
            #expect(Set(all).count == 6)
            // Every insert keyed by the save: the other path.
            let more = (0..<3).map { _ in Book(context: context) }
            try context.save()
            for b in more { #expect(context.registeredObject(for: b.objectID) === b) }
        }
    }

    @Test func obtainPermanentIDsWithNothingTemporaryIsANoOp() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            try context.obtainPermanentIDs(for: [])
            let book = Book(context: context)
            try context.save()
            let id = book.objectID
            try context.obtainPermanentIDs(for: [book])
            #expect(book.objectID == id)
        }
    }

    @Test func uriRepresentationRoundTrip() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (id, uri): (NSManagedObjectID, URL) = try await context.perform {
            let book = Book(context: context)
            book.title = "By URI"
            try context.save()
            return (book.objectID, book.objectID.uriRepresentation())
        }
        let storeID = try #require(container.persistentStoreCoordinator.persistentStores.first?.identifier)
        #expect(uri.scheme == "x-coredata")
        #expect(uri.host == storeID)
        #expect(uri.absoluteString.hasPrefix("x-coredata://\(storeID)/Book/p"))
        #expect(id.uriRepresentation() == uri, "the URI is stable")

        let resolved = try #require(container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: uri))
        #expect(resolved == id)
        #expect(resolved.hashValue == id.hashValue)
        #expect(resolved.entity === id.entity)
        #expect(!resolved.isTemporaryID)
        #expect(resolved.uriRepresentation() == uri)

        // The resolved ID works in a fresh context.
        let reader = container.newBackgroundContext()
        let title: String = try await reader.perform {
            let book = try #require(try reader.existingObject(with: resolved) as? Book)
            return book.title
        }
        #expect(title == "By URI")

        // A URI rebuilt from its string resolves too.
        let fromString = try #require(URL(string: uri.absoluteString))
        #expect(container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: fromString) == id)
    }

    @Test func temporaryIDURIs() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            let uri = book.objectID.uriRepresentation()
            #expect(uri.scheme == "x-coredata")
            #expect(uri.absoluteString.hasPrefix("x-coredata:///Book/t"))
            #expect(book.objectID.uriRepresentation() == uri)
            // Temporary IDs never resolve through the coordinator.
            #expect(container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: uri) == nil)
        }
    }

    @Test func malformedURIsReturnNil() throws {
        let container = try Fixtures.container()
        let coordinator = container.persistentStoreCoordinator
        let storeID = try #require(coordinator.persistentStores.first?.identifier)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            _ = Book(context: context)
            try context.save()
        }
        let good = "x-coredata://\(storeID)/Book/p1"
        #expect(coordinator.managedObjectID(forURIRepresentation: URL(string: good)!) != nil)

        let bad = [
            "https://\(storeID)/Book/p1",  // wrong scheme
            "x-coredata:///Book/p1",  // no store
            "x-coredata://\(UUID().uuidString)/Book/p1",  // unknown store
            "x-coredata://\(storeID)/Nope/p1",  // unknown entity
            "x-coredata://\(storeID)/Book/1",  // no p prefix
            "x-coredata://\(storeID)/Book/p",  // no key
            "x-coredata://\(storeID)/Book/pabc",  // not a number
            "x-coredata://\(storeID)/Book/p99999999999999999999",  // overflows Int64
            "x-coredata://\(storeID)/Book",  // no key component
            "x-coredata://\(storeID)/Book/p1/extra",  // too many components
            "x-coredata://\(storeID)",  // nothing at all
            "x-coredata://\(storeID)/Book/t1",  // temporary form
            "file:///tmp/Book/p1",
        ]
        for text in bad {
            let url = try #require(URL(string: text), "\(text) should parse as a URL")
            #expect(coordinator.managedObjectID(forURIRepresentation: url) == nil, "\(text)")
        }
    }

    @Test func uriFromAnotherCoordinatorDoesNotResolve() throws {
        let first = try Fixtures.container(name: "first")
        let second = try Fixtures.container(name: "second")
        let context = first.newBackgroundContext()
        let uri: URL = try context.performAndWait {
            let book = Book(context: context)
            try context.save()
            return book.objectID.uriRepresentation()
        }
        #expect(first.persistentStoreCoordinator.managedObjectID(forURIRepresentation: uri) != nil)
        #expect(second.persistentStoreCoordinator.managedObjectID(forURIRepresentation: uri) == nil)
    }

    @Test func uriForARowThatDoesNotExistGivesAnIDButNoObject() throws {
        let container = try Fixtures.container()
        let coordinator = container.persistentStoreCoordinator
        let storeID = try #require(coordinator.persistentStores.first?.identifier)
        let uri = try #require(URL(string: "x-coredata://\(storeID)/Book/p4242"))
        let id = try #require(coordinator.managedObjectID(forURIRepresentation: uri))
        #expect(id.entity.name == "Book")
        #expect(!id.isTemporaryID)
        let context = container.newBackgroundContext()
        context.performAndWait {
            let error = #expect(throws: CoreDataError.self) { try context.existingObject(with: id) }
            #expect(error?.code == .managedObjectReferentialIntegrity)
            // object(with:) hands out a fault without checking the store.
            let fault = context.object(with: id)
            #expect(fault.isFault)
            #expect(fault.objectID == id)
        }
    }

    @Test func objectWithIDIsUniquedPerContext() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let id: NSManagedObjectID = try writer.performAndWait {
            let b = Book(context: writer)
            b.title = "Unique"
            try writer.save()
            return b.objectID
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let a = reader.object(with: id)
            let b = reader.object(with: id)
            #expect(a === b)
            #expect(a.isFault)
            let c = try reader.existingObject(with: id)
            #expect(c === a)
            #expect(!c.isFault)
            let fetched = try reader.fetch(Book.fetchRequest())
            #expect(fetched.count == 1)
            #expect(fetched.first === a)
            #expect((a as? Book)?.title == "Unique")
        }
        writer.performAndWait {
            // The writer's object is a different instance with the same ID.
            let mine = writer.object(with: id)
            #expect(mine.objectID == id)
            #expect((mine as? Book)?.title == "Unique")
        }
    }

    @Test func idsOfDifferentEntitiesWithTheSameKeyDiffer() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            let shelf = Shelf(context: context)
            try context.save()
            // Both are the first row of their entity.
            #expect(book.objectID.uriRepresentation().lastPathComponent == "p1")
            #expect(shelf.objectID.uriRepresentation().lastPathComponent == "p1")
            #expect(book.objectID != shelf.objectID)
            #expect(book.objectID.uriRepresentation() != shelf.objectID.uriRepresentation())
            let coordinator = container.persistentStoreCoordinator
            #expect(coordinator.managedObjectID(forURIRepresentation: shelf.objectID.uriRepresentation())?.entity.name == "Shelf")
        }
    }

    @Test func uriRoundTripForAnUnusualEntityName() throws {
        let name = NSAttributeDescription(name: "name", type: .stringAttributeType)
        let model = NSManagedObjectModel(entities: [NSEntityDescription(name: "Café Menü", properties: [name])])
        let container = NSPersistentContainer(name: "unusual", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        #expect(box.get() == nil)
        let context = container.newBackgroundContext()
        let id: NSManagedObjectID = try context.performAndWait {
            let o = NSEntityDescription.insertNewObject(forEntityName: "Café Menü", into: context)
            o.setValue("x", forKey: "name")
            try context.save()
            return o.objectID
        }
        let uri = id.uriRepresentation()
        #expect(uri.scheme == "x-coredata")
        let resolved = container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: uri)
        #expect(resolved == id)
        #expect(resolved?.entity.name == "Café Menü")
    }
}

/// Object IDs are Codable (as their URIs), so that `#Predicate` can capture them: filtering
/// by a related object is written `$0.shelf?.objectID == shelfID`.
@Suite("Object IDs as Codable values") struct ObjectIDCodingTests {
    @Test func predicatesFilterByARelatedObjectsID() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let science = Shelf(context: context)
            science.name = "Science"
            let fiction = Shelf(context: context)
            fiction.name = "Fiction"
            for (title, shelf) in [("Cosmos", science), ("Dune", fiction), ("Gödel, Escher, Bach", science)] {
                let b = Book(context: context)
                b.title = title
                b.shelf = shelf
            }
            try context.save()
            let scienceID = science.objectID
            let request = Book.fetchRequest()
            request.predicate = #Predicate<Book> { $0.shelf?.objectID == scienceID }
            request.sortDescriptors = [NSSortDescriptor(keyPath: \Book.title, ascending: true)]
            #expect(try context.fetch(request).map(\.title) == ["Cosmos", "Gödel, Escher, Bach"])
        }
    }

    @Test func anIDRoundTripsThroughJSONWithItsCoordinator() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let b = Book(context: context)
            b.title = "encoded"
            try context.save()
            return b.objectID
        }
        let data = try JSONEncoder().encode([id])
        let decoder = JSONDecoder()
        decoder.userInfo[NSManagedObjectID.coordinatorUserInfoKey] = container.persistentStoreCoordinator
        #expect(try decoder.decode([NSManagedObjectID].self, from: data) == [id])
        // Without a coordinator to resolve it, decoding says what is missing.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([NSManagedObjectID].self, from: data) }
    }
}

/// `hasFault(forRelationshipNamed:)` and `objectIDs(forRelationshipNamed:)`, as in Core Data:
/// a relationship's targets, asked about without making objects of them.
@Suite("Relationship targets asked about without faulting them") struct RelationshipFaultTests {
    @Test func relationshipIDsComeWithoutLoadingTheTargets() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let (shelfID, bookIDs, looseID) = try writer.performAndWait {
            let shelf = Shelf(context: writer)
            shelf.name = "Science"
            let books = (0..<2).map { i -> Book in
                let b = Book(context: writer)
                b.title = "b\(i)"
                b.shelf = shelf
                return b
            }
            let loose = Book(context: writer)
            loose.title = "loose"
            try writer.save()
            return (shelf.objectID, Set(books.map(\.objectID)), loose.objectID)
        }
        let reader = container.newBackgroundContext()
        reader.performAndWait {
            let shelf = reader.object(with: shelfID)
            #expect(shelf.isFault && shelf.hasFault(forRelationshipNamed: "books"))
            #expect(Set(shelf.objectIDs(forRelationshipNamed: "books")) == bookIDs)
            #expect(shelf.hasFault(forRelationshipNamed: "books"), "asking for the IDs makes no objects")
            #expect(bookIDs.allSatisfy { reader.registeredObject(for: $0) == nil })
            _ = (shelf as? Shelf)?.books.count
            #expect(!shelf.hasFault(forRelationshipNamed: "books"))

            let book = reader.object(with: bookIDs.first!)
            _ = (book as? Book)?.title
            #expect(book.objectIDs(forRelationshipNamed: "shelf") == [shelfID])
            let loose = reader.object(with: looseID)
            #expect(loose.objectIDs(forRelationshipNamed: "shelf") == [])
            #expect(!loose.hasFault(forRelationshipNamed: "shelf"))
        }
    }

    @Test func askingAboutAnAttributeTraps() async {
        await #expect(processExitsWith: .failure) {
            let context = try Fixtures.container().newBackgroundContext()
            context.performAndWait { _ = Book(context: context).hasFault(forRelationshipNamed: "title") }
        }
    }
}
