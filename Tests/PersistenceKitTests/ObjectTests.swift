import Foundation
import PersistenceKit
import Testing

// Model classes used only by ObjectTests.

final class OTAllTypes: NSManagedObject {
    @Attribute var i16: Int16 = 0
    @Attribute var i32: Int32 = 0
    @Attribute var i64: Int64 = 0
    @Attribute var int: Int = 0
    @Attribute var double: Double = 0
    @Attribute var float: Float = 0
    @Attribute var bool: Bool = false
    @Attribute var string: String = ""
    @Attribute var date: Date = Date(timeIntervalSince1970: 0)
    @Attribute var data: Data = Data()
    @Attribute var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    @Attribute var uri: URL = URL(string: "about:blank")!
    @Attribute var decimal: Decimal = 0

    @Attribute var optI16: Int16?
    @Attribute var optI32: Int32?
    @Attribute var optI64: Int64?
    @Attribute var optInt: Int?
    @Attribute var optDouble: Double?
    @Attribute var optFloat: Float?
    @Attribute var optBool: Bool?
    @Attribute var optString: String?
    @Attribute var optDate: Date?
    @Attribute var optData: Data?
    @Attribute var optUUID: UUID?
    @Attribute var optURI: URL?
    @Attribute var optDecimal: Decimal?

    @Attribute(.transient) var scratch: String = "unset"
}

/// Attributes only: an object made outside a context holds no values until written or
/// inserted (`ValueStorage.defaults`).
final class OTDetached: NSManagedObject {
    @Attribute var name: String = "untitled"
    @Attribute var count: Int64 = 7
    @Attribute var note: String?
}

/// Records every lifecycle hook call, in order.
final class OTHooked: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var stamp: String = ""
    var calls: [String] = []

    override func awakeFromInsert() {
        super.awakeFromInsert()
        calls.append("awakeFromInsert")
        stamp = "inserted"  // initial values set here are part of the insert
    }
    override func awakeFromFetch() {
        super.awakeFromFetch()
        calls.append("awakeFromFetch")
    }
    override func willSave() {
        super.willSave()
        calls.append("willSave")
    }
    override func didSave() {
        super.didSave()
        calls.append("didSave")
    }
    override func prepareForDeletion() {
        super.prepareForDeletion()
        calls.append("prepareForDeletion")
    }
}

enum OTSupport {
    static let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    static let date = Date(timeIntervalSinceReferenceDate: 123_456.789)
    static let url = URL(string: "https://example.com/path?q=1#frag")!
    static let decimal = Decimal(string: "12345.6789")!

    static func container(_ classes: [NSManagedObject.Type], name: String = #function) throws -> NSPersistentContainer {
        try container(model: NSManagedObjectModel(managedObjectClasses: classes), name: name)
    }

    static func container(model: NSManagedObjectModel, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// A model built by hand, used with plain `NSManagedObject`: Note (title, count, weight,
    /// flag, tag?) ←→ Folder (notes).
    static func handModel() -> NSManagedObjectModel {
        func attr(_ name: String, _ type: NSAttributeType, optional: Bool = true, default value: Any? = nil)
            -> NSAttributeDescription
        {
            let a = NSAttributeDescription(name: name, type: type)
            a.isOptional = optional
            a.defaultValue = value
            return a
        }
        let note = NSEntityDescription()
        note.name = "Note"
        let folder = NSEntityDescription()
        folder.name = "Folder"
        let notes = NSRelationshipDescription(name: "notes")
        notes.maxCount = 0
        let folderRel = NSRelationshipDescription(name: "folder")
        notes.destinationEntity = note
        notes.inverseRelationship = folderRel
        folderRel.destinationEntity = folder
        folderRel.inverseRelationship = notes
        note.properties = [
            attr("title", .stringAttributeType, optional: false, default: "untitled"),
            attr("count", .integer16AttributeType, optional: false, default: 0),
            attr("weight", .doubleAttributeType),
            attr("flag", .booleanAttributeType, optional: false, default: false),
            attr("tag", .UUIDAttributeType),
            folderRel,
        ]
        folder.properties = [attr("name", .stringAttributeType, optional: false, default: ""), notes]
        return NSManagedObjectModel(entities: [note, folder])
    }
}

@Suite struct ObjectTests {
    // MARK: Typed access round trip

    @Test func everyAttributeTypeRoundTripsThroughASave() throws {
        let container = try OTSupport.container([OTAllTypes.self])
        let writer = container.newBackgroundContext()
        let id: NSManagedObjectID = try writer.performAndWait {
            let o = OTAllTypes(context: writer)
            o.i16 = .min
            o.i32 = .max
            o.i64 = .min
            o.int = -42
            o.double = .pi
            o.float = 1.5
            o.bool = true
            o.string = "héllo 🌍"
            o.date = OTSupport.date
            o.data = Data([0, 255, 1, 128])
            o.uuid = OTSupport.uuid
            o.uri = OTSupport.url
            o.decimal = OTSupport.decimal
            o.optI16 = 16
            o.optI32 = -32
            o.optI64 = 64
            o.optInt = Int(Int32.max) + 1
            o.optDouble = -0.5
            o.optFloat = 3.25
            o.optBool = false
            o.optString = ""
            o.optDate = Date(timeIntervalSince1970: -1)
            o.optData = Data()
            o.optUUID = OTSupport.uuid
            o.optURI = URL(string: "file:///tmp/a%20b")!
            o.optDecimal = Decimal(string: "-0.001")!
            o.scratch = "transient"
            // Read back in the same context before saving.
            #expect(o.i16 == .min)
            #expect(o.string == "héllo 🌍")
            #expect(o.optBool == false)
            #expect(o.scratch == "transient")
            try writer.save()
            return o.objectID
        }

        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let fetched = try reader.fetch(OTAllTypes.fetchRequest())
            #expect(fetched.count == 1)
            let o = try #require(fetched.first)
            #expect(o.objectID == id)
            #expect(o.i16 == .min)
            #expect(o.i32 == .max)
            #expect(o.i64 == .min)
            #expect(o.int == -42)
            #expect(o.double == .pi)
            #expect(o.float == 1.5)
            #expect(o.bool == true)
            #expect(o.string == "héllo 🌍")
            #expect(o.date == OTSupport.date)
            #expect(o.data == Data([0, 255, 1, 128]))
            #expect(o.uuid == OTSupport.uuid)
            #expect(o.uri == OTSupport.url)
            #expect(o.decimal == OTSupport.decimal)
            #expect(o.optI16 == 16)
            #expect(o.optI32 == -32)
            #expect(o.optI64 == 64)
            #expect(o.optInt == Int(Int32.max) + 1)
            #expect(o.optDouble == -0.5)
            #expect(o.optFloat == 3.25)
            #expect(o.optBool == false)
            #expect(o.optString == "")
            #expect(o.optDate == Date(timeIntervalSince1970: -1))
            #expect(o.optData == Data())
            #expect(o.optUUID == OTSupport.uuid)
            #expect(o.optURI == URL(string: "file:///tmp/a%20b"))
            #expect(o.optDecimal == Decimal(string: "-0.001"))
            // Transient values are not saved: a fetched object has the default.
            #expect(o.scratch == "unset")
        }
    }

    @Test func optionalsRoundTripAsNilAndDefaultsApply() async throws {
        let container = try OTSupport.container([OTAllTypes.self])
        let writer = container.newBackgroundContext()
        let id = try await writer.perform {
            let o = OTAllTypes(context: writer)
            // Nothing set: required attributes hold their defaults, optionals are nil.
            try writer.save()
            return o.objectID
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let o = try #require(try reader.existingObject(with: id) as? OTAllTypes)
            #expect(o.i16 == 0)
            #expect(o.string == "")
            #expect(o.bool == false)
            #expect(o.date == Date(timeIntervalSince1970: 0))
            #expect(o.uri == URL(string: "about:blank"))
            #expect(o.decimal == 0)
            #expect(o.optI16 == nil)
            #expect(o.optI32 == nil)
            #expect(o.optI64 == nil)
            #expect(o.optInt == nil)
            #expect(o.optDouble == nil)
            #expect(o.optFloat == nil)
            #expect(o.optBool == nil)
            #expect(o.optString == nil)
            #expect(o.optDate == nil)
            #expect(o.optData == nil)
            #expect(o.optUUID == nil)
            #expect(o.optURI == nil)
            #expect(o.optDecimal == nil)
            #expect(o.value(forKey: "optString") == nil)
            #expect(o.value(forKey: "optI16") == nil)
        }
    }

    @Test func settingAnOptionalBackToNilIsSaved() throws {
        let container = try OTSupport.container([OTAllTypes.self])
        let writer = container.newBackgroundContext()
        let id: NSManagedObjectID = try writer.performAndWait {
            let o = OTAllTypes(context: writer)
            o.optString = "x"
            o.optUUID = OTSupport.uuid
            try writer.save()
            o.optString = nil
            o.optUUID = nil
            #expect(o.isUpdated)
            try writer.save()
            return o.objectID
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let o = try #require(try reader.existingObject(with: id) as? OTAllTypes)
            #expect(o.optString == nil)
            #expect(o.optUUID == nil)
        }
    }

    @Test func keyValueAccessMatchesTypedAccess() throws {
        let container = try OTSupport.container([OTAllTypes.self])
        let context = container.newBackgroundContext()
        context.performAndWait {
            let o = OTAllTypes(context: context)
            o.setValue(Int16(5), forKey: "i16")
            o.setValue(6, forKey: "i32")  // an Int literal converts to Integer 32
            o.setValue(Int64(7), forKey: "i64")
            o.setValue(8, forKey: "int")
            o.setValue(2.5, forKey: "double")
            o.setValue(Float(0.5), forKey: "float")
            o.setValue(true, forKey: "bool")
            o.setValue("kv", forKey: "string")
            o.setValue(OTSupport.date, forKey: "date")
            o.setValue(Data([9]), forKey: "data")
            o.setValue(OTSupport.uuid, forKey: "uuid")
            o.setValue(OTSupport.url, forKey: "uri")
            o.setValue(OTSupport.decimal, forKey: "decimal")
            o.setValue(Optional<String>.some("wrapped"), forKey: "optString")
            #expect(o.i16 == 5)
            #expect(o.i32 == 6)
            #expect(o.i64 == 7)
            #expect(o.int == 8)
            #expect(o.double == 2.5)
            #expect(o.float == 0.5)
            #expect(o.bool)
            #expect(o.string == "kv")
            #expect(o.date == OTSupport.date)
            #expect(o.data == Data([9]))
            #expect(o.uuid == OTSupport.uuid)
            #expect(o.uri == OTSupport.url)
            #expect(o.decimal == OTSupport.decimal)
            #expect(o.optString == "wrapped")
            // value(forKey:) returns the Swift type of the attribute type.
            #expect(o.value(forKey: "i16") as? Int16 == 5)
            #expect(o.value(forKey: "i32") as? Int32 == 6)
            #expect(o.value(forKey: "i64") as? Int64 == 7)
            #expect(o.value(forKey: "int") as? Int64 == 8)
            #expect(o.value(forKey: "double") as? Double == 2.5)
            #expect(o.value(forKey: "float") as? Float == 0.5)
            #expect(o.value(forKey: "bool") as? Bool == true)
            #expect(o.value(forKey: "string") as? String == "kv")
            #expect(o.value(forKey: "date") as? Date == OTSupport.date)
            #expect(o.value(forKey: "data") as? Data == Data([9]))
            #expect(o.value(forKey: "uuid") as? UUID == OTSupport.uuid)
            #expect(o.value(forKey: "uri") as? URL == OTSupport.url)
            #expect(o.value(forKey: "decimal") as? Decimal == OTSupport.decimal)
            o.setValue(nil, forKey: "optString")
            #expect(o.optString == nil)
            o.i16 = -3
            #expect(o.value(forKey: "i16") as? Int16 == -3)
        }
    }

    // MARK: Plain NSManagedObject with a hand-built entity

    @Test func plainObjectsOfAHandBuiltEntity() throws {
        let container = try OTSupport.container(model: OTSupport.handModel())
        let writer = container.newBackgroundContext()
        let tag = UUID()
        let noteID: NSManagedObjectID = try writer.performAndWait {
            let note = NSEntityDescription.insertNewObject(forEntityName: "Note", into: writer)
            #expect(type(of: note) == NSManagedObject.self)
            #expect(note.entity.name == "Note")
            // Defaults from the entity description.
            #expect(note.value(forKey: "title") as? String == "untitled")
            #expect(note.value(forKey: "count") as? Int16 == 0)
            #expect(note.value(forKey: "weight") == nil)
            note.setValue("Groceries", forKey: "title")
            note.setValue(3, forKey: "count")
            note.setValue(1.5, forKey: "weight")
            note.setValue(true, forKey: "flag")
            note.setValue(tag, forKey: "tag")
            let entity = try #require(NSEntityDescription.entity(forEntityName: "Folder", in: writer))
            let folder = NSManagedObject(entity: entity, insertInto: writer)
            folder.setValue("Home", forKey: "name")
            note.setValue(folder, forKey: "folder")
            let notes = try #require(folder.value(forKey: "notes") as? Set<NSManagedObject>)
            #expect(notes == [note])
            try writer.save()
            return note.objectID
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
            let notes = try reader.fetch(request)
            #expect(notes.count == 1)
            let note = try #require(notes.first)
            #expect(note.objectID == noteID)
            #expect(note.value(forKey: "title") as? String == "Groceries")
            #expect(note.value(forKey: "count") as? Int16 == 3)
            #expect(note.value(forKey: "weight") as? Double == 1.5)
            #expect(note.value(forKey: "flag") as? Bool == true)
            #expect(note.value(forKey: "tag") as? UUID == tag)
            let folder = try #require(note.value(forKey: "folder") as? NSManagedObject)
            #expect(folder.value(forKey: "name") as? String == "Home")
            #expect((folder.value(forKey: "notes") as? Set<NSManagedObject>) == [note])
            // Setting through the to-many side keeps the to-one side.
            let other = NSEntityDescription.insertNewObject(forEntityName: "Note", into: reader)
            folder.mutableSetValue(forKey: "notes").insert(other)
            #expect(other.value(forKey: "folder") as? NSManagedObject === folder)
            folder.setValue([note], forKey: "notes")  // an Array replaces the set
            #expect(other.value(forKey: "folder") == nil)
            #expect((folder.value(forKey: "notes") as? Set<NSManagedObject>) == [note])
        }
    }

    // MARK: Primitive accessors

    @Test func primitiveAccessorsSkipChangeTrackingAndInverses() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            book.title = "Saved"
            let shelf = Shelf(context: context)
            shelf.name = "S"
            try context.save()
            #expect(!book.hasChanges)

            book.setPrimitiveValue("Primitive", forKey: "title")
            #expect(book.primitiveValue(forKey: "title") as? String == "Primitive")
            #expect(book.title == "Primitive")
            #expect(!book.isUpdated)
            #expect(!context.hasChanges)

            book.willChangeValue(forKey: "title")
            book.setPrimitiveValue("Announced", forKey: "title")
            book.didChangeValue(forKey: "title")
            #expect(book.isUpdated)
            #expect(context.updatedObjects.contains(book))
            #expect(book.value(forKey: "title") as? String == "Announced")

            // No inverse upkeep for primitive relationship writes.
            book.setPrimitiveValue(shelf, forKey: "shelf")
            #expect(book.primitiveValue(forKey: "shelf") as? Shelf === shelf)
            #expect(book.shelf === shelf)
            #expect(shelf.books.isEmpty)
            #expect(shelf.$books.count == 0)
        }
    }

    // MARK: State flags

    @Test func stateFlagsThroughInsertSaveUpdateDelete() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            #expect(book.isInserted)
            #expect(!book.isUpdated)
            #expect(!book.isDeleted)
            #expect(!book.isFault)
            #expect(book.hasChanges)
            #expect(book.managedObjectContext === context)
            book.title = "One"
            #expect(book.isInserted)
            #expect(!book.isUpdated, "changing an inserted object does not make it updated")

            try context.save()
            #expect(!book.isInserted)
            #expect(!book.isUpdated)
            #expect(!book.hasChanges)
            #expect(!book.hasPersistentChangedValues)
            #expect(!book.isFault)

            book.title = "Two"
            #expect(book.isUpdated)
            #expect(book.hasChanges)
            #expect(book.hasPersistentChangedValues)
            book.title = "One"
            #expect(!book.hasPersistentChangedValues, "value is back to the committed one")

            try context.save()
            #expect(!book.hasChanges)

            context.delete(book)
            #expect(book.isDeleted)
            #expect(book.hasChanges)
            #expect(!book.isUpdated)
            #expect(context.deletedObjects == [book])
            try context.save()
            #expect(book.managedObjectContext == nil)
            #expect(!context.hasChanges)
        }
    }

    @Test func fetchedObjectsAreFaultsUntilRead() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            let b = Book(context: writer)
            b.title = "Faulty"
            try writer.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let books = try reader.fetch(Book.fetchRequest())
            let book = try #require(books.first)
            #expect(book.isFault)
            #expect(!book.hasChanges)
            #expect(book.title == "Faulty")
            #expect(!book.isFault)
            #expect(!book.isInserted)
            #expect(!book.isUpdated)
        }
    }

    @Test func transientChangesAreNotPersistentChanges() throws {
        let container = try OTSupport.container([OTAllTypes.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = OTAllTypes(context: context)
            try context.save()
            o.scratch = "changed"
            #expect(o.hasChanges)
            #expect(!o.hasPersistentChangedValues)
            #expect(o.changedValues().isEmpty)
        }
    }

    @Test func changedAndCommittedValues() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "Old shelf"
            let book = Book(context: context)
            book.title = "Before"
            book.pages = 10
            book.published = OTSupport.date
            book.shelf = shelf
            #expect(book.committedValues(forKeys: nil).isEmpty, "never saved: nothing committed")
            #expect(book.changedValues()["title"] as? String == "Before")
            try context.save()
            #expect(book.changedValues().isEmpty)

            book.title = "After"
            book.published = nil
            let changed = book.changedValues()
            #expect(Set(changed.keys) == ["title", "published"])
            #expect(changed["title"] as? String == "After")
            #expect(changed["published"] is NSNull)

            let committed = book.committedValues(forKeys: ["title", "pages", "published", "shelf"])
            #expect(Set(committed.keys) == ["title", "pages", "published", "shelf"])
            #expect(committed["title"] as? String == "Before")
            #expect(committed["pages"] as? Int64 == 10)
            #expect(committed["published"] as? Date == OTSupport.date)
            #expect(committed["shelf"] as? Shelf === shelf)

            let all = book.committedValues(forKeys: nil)
            #expect(Set(all.keys) == ["title", "pages", "published", "shelf", "authors", "cover"])
            #expect(all["cover"] is NSNull)
            #expect((all["authors"] as? Set<NSManagedObject>)?.isEmpty == true)

            // A relationship change shows up on both sides.
            let newShelf = Shelf(context: context)
            book.shelf = newShelf
            #expect(book.changedValues()["shelf"] as? Shelf === newShelf)
            #expect(shelf.changedValues().keys.contains("books"))
            #expect((shelf.committedValues(forKeys: ["books"])["books"] as? Set<NSManagedObject>) == [book])

            try context.save()
            #expect(book.committedValues(forKeys: ["title"])["title"] as? String == "After")
            #expect(book.committedValues(forKeys: ["published"])["published"] is NSNull)
        }
    }

    // MARK: Lifecycle hooks

    @Test func lifecycleHooksAreCalledInOrder() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        let id: NSManagedObjectID = try context.performAndWait {
            let o = OTHooked(context: context)
            #expect(o.calls == ["awakeFromInsert"])
            #expect(o.stamp == "inserted")
            #expect(o.isInserted)
            #expect(!o.isUpdated)
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "willSave", "didSave"])
            #expect(o.stamp == "inserted")

            o.name = "changed"
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "willSave", "didSave", "willSave", "didSave"])

            // No changes: no hooks.
            try context.save()
            #expect(o.calls.count == 5)
            return o.objectID
        }

        let other = container.newBackgroundContext()
        try other.performAndWait {
            let fetched = try #require(try other.fetch(OTHooked.fetchRequest()).first)
            #expect(fetched.objectID == id)
            #expect(fetched.calls.isEmpty, "a fetched object is not inserted, and a fault is not awake yet")
            #expect(fetched.name == "changed")
            #expect(fetched.calls == ["awakeFromFetch"])
            #expect(fetched.stamp == "inserted")
            _ = fetched.name
            #expect(fetched.calls == ["awakeFromFetch"], "awakeFromFetch runs once per fault firing")

            other.delete(fetched)
            other.processPendingChanges()
            #expect(fetched.calls == ["awakeFromFetch", "prepareForDeletion"])
            try other.save()
            #expect(fetched.calls == ["awakeFromFetch", "prepareForDeletion", "willSave", "didSave"])
        }
    }

    @Test func willSaveChangesAreSaved() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        let id: NSManagedObjectID = try context.performAndWait {
            let o = OTHooked(context: context)
            o.name = "n"
            try context.save()
            #expect(!context.hasChanges)
            return o.objectID
        }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            let o = try #require(try other.existingObject(with: id) as? OTHooked)
            #expect(o.stamp == "inserted")
            #expect(o.name == "n")
        }
    }

    @Test func insertedThenDeletedObjectGetsPrepareForDeletionButNoSaveHooks() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = OTHooked(context: context)
            context.delete(o)
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "prepareForDeletion"])
            #expect(!context.hasChanges)
            #expect(try context.count(for: OTHooked.fetchRequest()) == 0)
        }
    }

    // MARK: Relationships

    @Test func toOneAndToManyAsProperties() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let shelf = Shelf(context: context)
            let b1 = Book(context: context)
            let b2 = Book(context: context)
            let b3 = Book(context: context)
            #expect(shelf.books.isEmpty)
            #expect(b1.shelf == nil)

            b1.shelf = shelf
            #expect(shelf.books == [b1])

            shelf.books = [b1, b2]
            #expect(b2.shelf === shelf)
            #expect(shelf.books == [b1, b2])

            shelf.books = [b2, b3]  // replacing the set unlinks b1 and links b3
            #expect(b1.shelf == nil)
            #expect(b2.shelf === shelf)
            #expect(b3.shelf === shelf)
            #expect(shelf.books == [b2, b3])

            b2.shelf = nil
            #expect(shelf.books == [b3])

            shelf.books = []
            #expect(b3.shelf == nil)
            #expect(shelf.books.isEmpty)
        }
    }

    @Test func projectedSetOperations() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let shelf = Shelf(context: context)
            let books = (0..<5).map { i -> Book in
                let b = Book(context: context)
                b.title = "B\(i)"
                return b
            }
            #expect(shelf.$books.count == 0)
            #expect(shelf.$books.isEmpty)

            shelf.$books.insert(books[0])
            #expect(shelf.$books.count == 1)
            #expect(shelf.$books.contains(books[0]))
            #expect(!shelf.$books.contains(books[1]))
            #expect(books[0].shelf === shelf)

            shelf.$books.insert(books[0])  // inserting twice changes nothing
            #expect(shelf.$books.count == 1)

            shelf.$books.insert(contentsOf: books[1...3])
            #expect(shelf.$books.count == 4)
            #expect(books[1...3].allSatisfy { $0.shelf === shelf })
            #expect(books[4].shelf == nil)

            shelf.$books.remove(books[1])
            #expect(shelf.$books.count == 3)
            #expect(books[1].shelf == nil)
            #expect(!shelf.$books.contains(books[1]))

            shelf.$books.remove(books[4])  // not a member: nothing happens
            #expect(shelf.$books.count == 3)

            shelf.$books.remove(contentsOf: [books[0], books[2]])
            #expect(shelf.$books.count == 1)
            #expect(books[0].shelf == nil)
            #expect(books[2].shelf == nil)
            #expect(shelf.$books.objects == [books[3]])
            #expect(shelf.books == [books[3]])

            shelf.$books.removeAll()
            #expect(shelf.$books.isEmpty)
            #expect(books[3].shelf == nil)
        }
    }

    @Test func mutableSetValueKeepsInverses() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            let a1 = Author(context: context)
            let a2 = Author(context: context)
            let authors = book.mutableSetValue(forKey: "authors")
            authors.insert(a1)
            authors.insert(contentsOf: [a2])
            #expect(authors.count == 2)
            #expect(book.authors == [a1, a2])
            #expect(a1.books == [book])
            #expect(a2.books == [book])
            authors.remove(a1)
            #expect(a1.books.isEmpty)
            #expect(book.authors == [a2])
            #expect(authors.contains(a2))
        }
    }

    @Test func oneToOneInverseUpkeep() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let book = Book(context: context)
            let c1 = Cover(context: context)
            let c2 = Cover(context: context)
            book.cover = c1
            #expect(c1.book === book)

            c2.book = book  // takes the book from c1
            #expect(book.cover === c2)
            #expect(c1.book == nil)

            let other = Book(context: context)
            other.cover = c2  // takes c2 from book
            #expect(c2.book === other)
            #expect(book.cover == nil)

            other.cover = nil
            #expect(c2.book == nil)
            #expect(other.cover == nil)
        }
    }

    @Test func movingABookBetweenShelves() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let s1 = Shelf(context: context)
            let s2 = Shelf(context: context)
            let book = Book(context: context)
            let stay = Book(context: context)
            s1.books = [book, stay]
            try context.save()

            book.shelf = s2
            #expect(s1.books == [stay])
            #expect(s2.books == [book])

            s1.$books.insert(book)  // and back, through the to-many side
            #expect(book.shelf === s1)
            #expect(s2.books.isEmpty)
            #expect(s1.books == [book, stay])

            s2.books = [book]  // replacing s2's set also takes the book from s1
            #expect(book.shelf === s2)
            #expect(s1.books == [stay])
            try context.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let shelves = try reader.fetch(Shelf.fetchRequest())
            #expect(shelves.map { $0.books.count }.sorted() == [1, 1])
            #expect(try reader.count(for: Book.fetchRequest()) == 2)
        }
    }

    @Test func manyToManyInverseUpkeep() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let b1 = Book(context: context)
            let b2 = Book(context: context)
            let a1 = Author(context: context)
            let a2 = Author(context: context)

            b1.authors = [a1, a2]
            #expect(a1.books == [b1])
            #expect(a2.books == [b1])

            a2.$books.insert(b2)
            #expect(b2.authors == [a2])
            #expect(a2.books == [b1, b2])

            b1.$authors.remove(a1)
            #expect(a1.books.isEmpty)
            #expect(b1.authors == [a2])

            a2.books = [b2]
            #expect(b1.authors.isEmpty)
            #expect(b2.authors == [a2])
        }
    }

    @Test func relationshipsRoundTripThroughASave() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let ids: (shelf: NSManagedObjectID, book: NSManagedObjectID) = try writer.performAndWait {
            let shelf = Shelf(context: writer)
            shelf.name = "Poetry"
            let book = Book(context: writer)
            book.title = "Odes"
            book.shelf = shelf
            let cover = Cover(context: writer)
            cover.color = "blue"
            book.cover = cover
            let a1 = Author(context: writer)
            a1.name = "Keats"
            let a2 = Author(context: writer)
            a2.name = "Shelley"
            book.authors = [a1, a2]
            let lonely = Book(context: writer)
            lonely.title = "Lonely"
            lonely.authors = [a2]
            try writer.save()
            return (shelf.objectID, book.objectID)
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let shelf = try #require(try reader.existingObject(with: ids.shelf) as? Shelf)
            #expect(shelf.name == "Poetry")
            #expect(shelf.books.map(\.title) == ["Odes"])
            let book = try #require(shelf.books.first)
            #expect(book.objectID == ids.book)
            #expect(book.shelf === shelf)
            #expect(book.cover?.color == "blue")
            #expect(book.cover?.book === book)
            #expect(Set(book.authors.map(\.name)) == ["Keats", "Shelley"])
            let shelley = try #require(book.authors.first { $0.name == "Shelley" })
            #expect(Set(shelley.books.map(\.title)) == ["Odes", "Lonely"])
            #expect(shelley.$books.count == 2)
            // Uniquing across relationships: the same row is the same object.
            let lonely = try #require(shelley.books.first { $0.title == "Lonely" })
            #expect(lonely.authors.first === shelley)
        }
    }

    @Test func relationshipChangesMarkBothSidesUpdated() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let s1 = Shelf(context: context)
            let s2 = Shelf(context: context)
            let book = Book(context: context)
            book.shelf = s1
            try context.save()
            book.shelf = s2
            #expect(context.updatedObjects == [s1, s2, book])
            #expect(s1.hasPersistentChangedValues)
            #expect(s2.hasPersistentChangedValues)
            #expect(book.hasPersistentChangedValues)
        }
    }

    // MARK: More routes

    @Test func subclassesWorkWithAHandBuiltModel() throws {
        // The hand-built bookshelf lists Book's properties in another order than the class
        // declares them; property wrappers must find their slots by name.
        let model = ModelTests.handBuiltBookshelf()
        let classes: [String: NSManagedObject.Type] = ["Shelf": Shelf.self, "Book": Book.self, "Author": Author.self, "Cover": Cover.self]
        for e in model.entities { e.managedObjectClass = try #require(classes[e.name]) }
        let container = try OTSupport.container(model: model)
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            let shelf = Shelf(context: writer)
            shelf.name = "Hand"
            let book = Book(context: writer)
            book.title = "Built"
            book.pages = 321
            book.published = OTSupport.date
            book.shelf = shelf
            #expect(book.value(forKey: "title") as? String == "Built")
            #expect(book.value(forKey: "pages") as? Int64 == 321)
            #expect(shelf.books == [book])
            try writer.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let book = try #require(try reader.fetch(Book.fetchRequest()).first)
            #expect(book.title == "Built")
            #expect(book.pages == 321)
            #expect(book.published == OTSupport.date)
            #expect(book.shelf?.name == "Hand")
            #expect(book.cover == nil)
        }
    }

    @Test func inheritedPropertiesRoundTrip() throws {
        let container = try OTSupport.container([MTDerived.self])
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            let o = MTDerived(context: writer)
            o.created = OTSupport.date
            o.serial = 77
            o.name = "derived"
            #expect(o.value(forKey: "serial") as? Int64 == 77)
            try writer.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let o = try #require(try reader.fetch(MTDerived.fetchRequest()).first)
            #expect(o.created == OTSupport.date)
            #expect(o.serial == 77)
            #expect(o.name == "derived")
        }
    }

    @Test func keyValueAcceptsNSNumber() throws {
        let container = try OTSupport.container(model: OTSupport.handModel())
        let context = container.newBackgroundContext()
        context.performAndWait {
            let note = NSEntityDescription.insertNewObject(forEntityName: "Note", into: context)
            note.setValue(NSNumber(value: 12), forKey: "count")
            note.setValue(NSNumber(value: 0.25), forKey: "weight")
            note.setValue(NSNumber(value: true), forKey: "flag")
            #expect(note.value(forKey: "count") as? Int16 == 12)
            #expect(note.value(forKey: "weight") as? Double == 0.25)
            #expect(note.value(forKey: "flag") as? Bool == true)
        }
    }

    @Test func aDetachedObjectReadsItsDefaultsAndSavesWhatWasWrittenBeforeItsInsert() throws {
        let container = try OTSupport.container([OTDetached.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let entity = try #require(NSEntityDescription.entity(forEntityName: "OTDetached", in: context))
            let written = OTDetached(entity: entity, insertInto: nil)
            let untouched = OTDetached(entity: entity, insertInto: nil)
            #expect(written.name == "untitled" && written.count == 7 && written.note == nil)
            #expect(written.value(forKey: "count") as? Int64 == 7)
            written.count = 9
            written.note = "kept"
            // The write copied the defaults: other objects of the entity still read them.
            #expect(written.name == "untitled" && written.count == 9)
            #expect(untouched.count == 7 && untouched.note == nil)
            #expect(OTDetached(entity: entity, insertInto: nil).count == 7)
            try written.validateForInsert()
            try untouched.validateForInsert()
            let emptied = OTDetached(entity: entity, insertInto: nil)
            emptied.setValue(nil, forKey: "name")
            #expect(throws: CoreDataError.self) { try emptied.validateForInsert() }

            context.insert(written)
            context.insert(untouched)
            #expect(untouched.count == 7)
            try context.save()
            context.reset()
            let request = OTDetached.fetchRequest()
            request.sortDescriptors = [NSSortDescriptor(keyPath: \OTDetached.count, ascending: true)]
            let saved = try context.fetch(request)
            #expect(saved.map(\.count) == [7, 9])
            #expect(saved.map(\.name) == ["untitled", "untitled"])
            #expect(saved.map(\.note) == [nil, "kept"])
        }
    }

    @Test func awakeFromInsertRunsWhenTheObjectIsInsertedLater() throws {
        let container = try OTSupport.container([OTHooked.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let entity = try #require(NSEntityDescription.entity(forEntityName: "OTHooked", in: context))
            let o = OTHooked(entity: entity, insertInto: nil)
            #expect(o.calls.isEmpty)
            #expect(o.managedObjectContext == nil)
            #expect(o.objectID.isTemporaryID)
            context.insert(o)
            #expect(o.calls == ["awakeFromInsert"])
            #expect(o.isInserted)
            #expect(context.insertedObjects == [o])
            context.insert(o)  // inserting again does nothing
            #expect(o.calls == ["awakeFromInsert"])
            try context.save()
            #expect(o.calls == ["awakeFromInsert", "willSave", "didSave"])
        }
    }

    @Test func aDeletedObjectIsReadableUntilTheDeletionIsSaved() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            let book = Book(context: context)
            book.title = "Doomed"
            book.shelf = shelf
            try context.save()
            context.delete(book)
            context.processPendingChanges()
            #expect(book.isDeleted)
            #expect(book.title == "Doomed")
            #expect(book.managedObjectContext === context)
            #expect(!shelf.books.contains(book), "nullify removed the book from the shelf")
            // Undo the deletion by inserting the object again.
            context.insert(book)
            #expect(!book.isDeleted)
            #expect(context.deletedObjects.isEmpty)
        }
    }

    @Test func inverseUpkeepOnFetchedFaults() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let ids: [NSManagedObjectID] = try writer.performAndWait {
            let s1 = Shelf(context: writer)
            s1.name = "one"
            let s2 = Shelf(context: writer)
            s2.name = "two"
            let book = Book(context: writer)
            book.shelf = s1
            let a1 = Author(context: writer)
            let a2 = Author(context: writer)
            book.authors = [a1, a2]
            try writer.save()
            return [s1.objectID, s2.objectID, book.objectID, a1.objectID, a2.objectID]
        }
        let editor = container.newBackgroundContext()
        try editor.performAndWait {
            // Only the book is loaded; the shelves and authors are faults.
            let book = try #require(try editor.existingObject(with: ids[2]) as? Book)
            let s1 = try #require(editor.object(with: ids[0]) as? Shelf)
            let s2 = try #require(editor.object(with: ids[1]) as? Shelf)
            let a1 = try #require(editor.object(with: ids[3]) as? Author)
            #expect(s1.isFault)
            #expect(a1.isFault)
            book.shelf = s2
            #expect(s1.books.isEmpty)
            #expect(s2.books == [book])
            book.$authors.remove(a1)
            #expect(a1.books.isEmpty)
            #expect(book.authors.map(\.objectID) == [ids[4]])
            try editor.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let s1 = try #require(try reader.existingObject(with: ids[0]) as? Shelf)
            let s2 = try #require(try reader.existingObject(with: ids[1]) as? Shelf)
            let a1 = try #require(try reader.existingObject(with: ids[3]) as? Author)
            let a2 = try #require(try reader.existingObject(with: ids[4]) as? Author)
            #expect(s1.books.isEmpty)
            #expect(s2.books.map(\.objectID) == [ids[2]])
            #expect(a1.books.isEmpty)
            #expect(a2.books.map(\.objectID) == [ids[2]])
        }
    }

    @Test func transientValuesSurviveASaveInTheSameContext() throws {
        let container = try OTSupport.container([OTAllTypes.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = OTAllTypes(context: context)
            o.scratch = "kept"
            try context.save()
            #expect(o.scratch == "kept")
            #expect(o.committedValues(forKeys: nil)["scratch"] == nil, "transient properties have no committed value")
        }
    }
}
