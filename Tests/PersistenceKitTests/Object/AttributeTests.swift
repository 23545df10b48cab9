import Foundation
import Testing
@testable import PersistenceKit

/// Every supported attribute type, required and optional.
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

/// Attribute values of every supported type, as properties, by key and as primitives.
@Suite("Attribute values: types, optionals, defaults and key-value access") struct AttributeTests {
    /// An NSNumber with a fraction is not an integer: an integer attribute refuses it rather
    /// than cut it to its integer part.
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

    /// `value(forKeyPath:)` / `setValue(_:forKeyPath:)`, which Core Data tutorials use for
    /// plain keys: one key reads and
    /// writes as `forKey:`; dots lead through to-one relationships; a nil relationship on
    /// the way reads nil and ignores a write, as key-value coding does.
    @Test func keyPathsReadAndWriteThroughToOneRelationships() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = Shelf(context: context)
            let book = Book(context: context)
            book.setValue("Dune", forKeyPath: "title")
            #expect(book.title == "Dune")
            #expect(book.value(forKeyPath: "title") as? String == "Dune")
            #expect(book.value(forKeyPath: "shelf.name") == nil)  // no shelf yet
            book.setValue("ignored", forKeyPath: "shelf.name")  // no shelf: nothing happens
            #expect(!context.registeredObjects.contains { ($0 as? Shelf)?.name == "ignored" })
            book.shelf = shelf
            book.setValue("Fiction", forKeyPath: "shelf.name")
            #expect(shelf.name == "Fiction")
            #expect(book.value(forKeyPath: "shelf.name") as? String == "Fiction")
            let cover = Cover(context: context)
            cover.book = book
            #expect(cover.value(forKeyPath: "book.shelf.name") as? String == "Fiction")
            #expect(cover.value(forKeyPath: "book.shelf") as? Shelf === shelf)
            try context.save()
            #expect(try context.existingObject(with: cover.objectID).value(forKeyPath: "book.title") as? String == "Dune")
        }
    }

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

    // MARK: More routes

    @Test func subclassesWorkWithAHandBuiltModel() throws {
        // The hand-built bookshelf lists Book's properties in another order than the class
        // declares them; property wrappers must find their slots by name.
        let model = Fixtures.handBuiltBookshelf()
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
