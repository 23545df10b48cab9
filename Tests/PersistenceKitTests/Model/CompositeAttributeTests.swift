import Foundation
import Testing
@testable import PersistenceKit

/// A composite of a place: two required doubles and an optional label.
struct CALocation: CompositeAttribute, Equatable {
    var latitude: Double
    var longitude: Double
    var label: String?
}

/// A composite holding one element of each kind the typed form maps.
struct CAMixed: CompositeAttribute, Equatable {
    var small: Int16
    var count: Int
    var when: Date
    var id: UUID
    var link: URL?
    var amount: Decimal
    var flag: Bool
}

final class CAPlace: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var location: CALocation = CALocation(latitude: 0, longitude: 0, label: nil)
    @Attribute var mixed: CAMixed?
}

/// A struct nesting a composite: not a valid composite.
struct CANested: CompositeAttribute {
    var inner: CALocation
}

final class CANestedOwner: NSManagedObject {
    @Attribute var nested: CANested?
}

/// A struct with an element type a composite cannot hold.
struct CAArrayElement: CompositeAttribute {
    var values: [Double]
}

final class CAArrayOwner: NSManagedObject {
    @Attribute var shape: CAArrayElement?
}

@Suite("Composite attributes") struct CompositeAttributeTests {
    /// `Spot` with `location` of latitude, longitude (Double) and an optional label.
    static func handModel() -> NSManagedObjectModel {
        let latitude = NSAttributeDescription(name: "latitude", type: .doubleAttributeType)
        latitude.isOptional = false
        let longitude = NSAttributeDescription(name: "longitude", type: .doubleAttributeType)
        longitude.isOptional = false
        let label = NSAttributeDescription(name: "label", type: .stringAttributeType)
        let location = NSCompositeAttributeDescription(name: "location", elements: [latitude, longitude, label])
        let name = NSAttributeDescription(name: "name", type: .stringAttributeType)
        return NSManagedObjectModel(entities: [Fixtures.entity("Spot", [name, location])])
    }

    static func inMemoryContainer(_ model: NSManagedObjectModel, name: String = #function) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    static func insertSpots(_ context: NSManagedObjectContext) throws {
        let spots: [(String, [String: Any])] = [
            ("north", ["latitude": 60.5, "longitude": 10.0, "label": "Oslo"]),
            ("south", ["latitude": -33.9, "longitude": 151.2]),
            ("middle", ["latitude": 12.0, "longitude": 0.0, "label": "Equator-ish"]),
        ]
        for (name, location) in spots {
            let spot = NSEntityDescription.insertNewObject(forEntityName: "Spot", into: context)
            spot.setValue(name, forKey: "name")
            spot.setValue(location, forKey: "location")
        }
        try context.save()
    }

    static func names(_ context: NSManagedObjectContext, format: String? = nil, sort: [SortKey] = [SortKey("name")]) throws -> [String] {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Spot")
        if let format { request.predicate = NSPredicate(format: format) }
        request.sortKeys = sort
        return try context.fetch(request).map { $0.value(forKey: "name") as? String ?? "?" }
    }

    static func checkSpots(_ context: NSManagedObjectContext) throws {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Spot")
        request.sortKeys = [SortKey("name")]
        let spots = try context.fetch(request)
        #expect(spots.count == 3)
        let north = try #require(spots.first { $0.value(forKey: "name") as? String == "north" })
        let location = try #require(north.value(forKey: "location") as? [String: Any])
        #expect(location["latitude"] as? Double == 60.5)
        #expect(location["longitude"] as? Double == 10.0)
        #expect(location["label"] as? String == "Oslo")
        let south = try #require(spots.first { $0.value(forKey: "name") as? String == "south" })
        let southLocation = try #require(south.value(forKey: "location") as? [String: Any])
        #expect(southLocation.keys.sorted() == ["latitude", "longitude"])  // the absent label has no entry
        #expect(try names(context, format: "location.latitude > 10") == ["middle", "north"])
        #expect(try names(context, format: "location.label == 'Oslo'") == ["north"])
        #expect(try names(context, format: "location.label == nil") == ["south"])
        #expect(try names(context, sort: [SortKey("location.latitude")]) == ["south", "middle", "north"])
        #expect(try names(context, sort: [SortKey("location.longitude", ascending: false)]) == ["south", "north", "middle"])
    }

    @Test func aHandBuiltCompositeRoundTripsThroughAFileStore() throws {
        let folder = try TemporaryFolder()
        do {
            let container = try FSSupport.container(at: folder.storeURL, model: Self.handModel())
            let context = container.newBackgroundContext()
            try context.performAndWait { try Self.insertSpots(context) }
            try FSSupport.close(container)
        }
        let container = try FSSupport.container(at: folder.storeURL, model: Self.handModel())
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        try context.performAndWait { try Self.checkSpots(context) }
    }

    @Test func aHandBuiltCompositeWorksInMemory() throws {
        let container = try Self.inMemoryContainer(Self.handModel())
        try container.viewContext.performAndWait {
            try Self.insertSpots(container.viewContext)
            let reader = container.newBackgroundContext()
            try reader.performAndWait { try Self.checkSpots(reader) }
        }
    }

    @Test func theTypedFormMakesTheSameModelAsTheHandBuiltOne() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [CAPlace.self])
        let entity = try #require(model.entitiesByName["CAPlace"])
        let location = try #require(entity.attributesByName["location"] as? NSCompositeAttributeDescription)
        #expect(location.attributeType == .compositeAttributeType)
        #expect(location.elements.map(\.name) == ["latitude", "longitude", "label"])
        #expect(location.elements.map(\.attributeType) == [.doubleAttributeType, .doubleAttributeType, .stringAttributeType])
        #expect(location.elements.map(\.isOptional) == [false, false, true])
        #expect(!location.isOptional)
        let mixed = try #require(entity.attributesByName["mixed"] as? NSCompositeAttributeDescription)
        #expect(mixed.isOptional)
        #expect(
            mixed.elements.map(\.attributeType) == [
                .integer16AttributeType, .integer64AttributeType, .dateAttributeType, .UUIDAttributeType, .URIAttributeType,
                .decimalAttributeType, .booleanAttributeType,
            ])
        #expect(mixed.elements.map(\.isOptional) == [false, false, false, false, true, false, false])

        // Elements take part in equality and in the layout hash.
        let other = try NSManagedObjectModel(managedObjectClasses: [CAPlace.self])
        #expect(model == other)
        let changed = try NSManagedObjectModel(managedObjectClasses: [CAPlace.self])
        let changedLocation = try #require(changed.entitiesByName["CAPlace"]?.attributesByName["location"] as? NSCompositeAttributeDescription)
        changedLocation.elements[2].attributeType = .UUIDAttributeType
        #expect(model != changed)
        #expect(model.layoutHash != changed.layoutHash)
    }

    @Test func typedValuesRoundTripThroughAFileStore() throws {
        let folder = try TemporaryFolder()
        let id = UUID()
        let mixed = CAMixed(
            small: -7, count: 1 << 40, when: Date(timeIntervalSinceReferenceDate: 12.5), id: id, link: URL(string: "https://x.invalid/a"),
            amount: Decimal(string: "12.34")!, flag: true)
        do {
            let container = try FSSupport.container(at: folder.storeURL, model: try NSManagedObjectModel(managedObjectClasses: [CAPlace.self]))
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let place = CAPlace(context: context)
                place.name = "typed"
                #expect(place.location == CALocation(latitude: 0, longitude: 0, label: nil))  // the declared default
                place.location = CALocation(latitude: 48.85, longitude: 2.35, label: "Paris")
                place.mixed = mixed
                try context.save()
            }
            try FSSupport.close(container)
        }
        let container = try FSSupport.container(at: folder.storeURL, model: try NSManagedObjectModel(managedObjectClasses: [CAPlace.self]))
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let place = try #require(try context.fetch(CAPlace.fetchRequest()).first)
            #expect(place.location == CALocation(latitude: 48.85, longitude: 2.35, label: "Paris"))
            #expect(place.mixed == mixed)
            let dictionary = try #require(place.value(forKey: "mixed") as? [String: Any])
            #expect(dictionary["small"] as? Int16 == -7)
            #expect(dictionary["count"] as? Int64 == 1 << 40)
            #expect(dictionary["id"] as? UUID == id)

            // Untyped writes reach the typed property, and the other way round.
            place.setValue(["latitude": 1, "longitude": 2.5], forKey: "location")
            #expect(place.location == CALocation(latitude: 1, longitude: 2.5, label: nil))
            place.location.label = "Here"
            #expect((place.value(forKey: "location") as? [String: Any])?["label"] as? String == "Here")
            place.mixed = nil
            #expect(place.value(forKey: "mixed") == nil)
            try context.save()
        }
    }

    @Test func typedValuesWorkInMemoryWithPredicatesAndSortKeys() throws {
        let container = try Self.inMemoryContainer(try NSManagedObjectModel(managedObjectClasses: [CAPlace.self]))
        let context = container.viewContext
        try context.performAndWait {
            for (name, latitude) in [("a", 5.0), ("b", 50.0), ("c", 20.0)] {
                let place = CAPlace(context: context)
                place.name = name
                place.location = CALocation(latitude: latitude, longitude: -latitude, label: nil)
            }
            try context.save()
            let request = CAPlace.fetchRequest()
            request.predicate = NSPredicate(format: "location.latitude >= %f", 20.0)
            request.sortKeys = [SortKey("location.latitude", ascending: false)]
            #expect(try context.fetch(request).map(\.name) == ["b", "c"])
            let byLongitude = CAPlace.fetchRequest()
            byLongitude.sortKeys = [SortKey("location.longitude")]
            #expect(try context.fetch(byLongitude).map(\.name) == ["b", "c", "a"])

            // A typed predicate reads the element through the struct.
            let typed = CAPlace.fetchRequest()
            typed.predicate = #Predicate<CAPlace> { $0.location.latitude > 10 }
            #expect(try context.fetch(typed).map(\.name).sorted() == ["b", "c"])

            // A dictionary fetch gives the composite as its dictionary.
            let dictionaries = NSFetchRequest<[String: Any]>(entityName: "CAPlace")
            dictionaries.resultType = .dictionaryResultType
            dictionaries.propertiesToFetch = ["name", "location"]
            dictionaries.sortKeys = [SortKey("name")]
            let rows = try context.fetch(dictionaries)
            #expect(rows.count == 3)
            let first = try #require(rows.first?["location"] as? [String: Any])
            #expect(first["latitude"] as? Double == 5)
            #expect(first["longitude"] as? Double == -5)
        }
    }

    @Test func aWrongShapeIsRefusedByValidation() throws {
        let container = try Self.inMemoryContainer(Self.handModel())
        let context = container.viewContext
        try context.performAndWait {
            let spot = NSEntityDescription.insertNewObject(forEntityName: "Spot", into: context)
            #expect(throws: CoreDataError.self) { try spot.validateValue(["latitude": "north"], forKey: "location") }
            #expect(throws: CoreDataError.self) { try spot.validateValue(["latitude": 1.0, "longitude": 2.0, "height": 3.0], forKey: "location") }
            #expect(throws: CoreDataError.self) { try spot.validateValue(["latitude": 1.0], forKey: "location") }  // longitude is required
            #expect(throws: CoreDataError.self) { try spot.validateValue(3.5, forKey: "location") }
            try spot.validateValue(["latitude": 1.0, "longitude": 2.0, "label": NSNull()], forKey: "location")
        }
    }

    @Test func nestedCompositesAreAModelError() throws {
        let error = #expect(throws: ModelError.self) { try NSManagedObjectModel(managedObjectClasses: [CANestedOwner.self]) }
        #expect(error?.kind == .invalidCompositeElement("inner"))
        #expect(error?.property == "nested")

        let inner = NSCompositeAttributeDescription(
            name: "inner", elements: [NSAttributeDescription(name: "x", type: .doubleAttributeType)])
        let outer = NSCompositeAttributeDescription(name: "outer", elements: [inner])
        let model = NSManagedObjectModel(entities: [Fixtures.entity("Nest", [outer])])
        let handError = #expect(throws: ModelError.self) { try model.validate() }
        #expect(handError?.kind == .invalidCompositeElement("inner"))
        #expect(handError?.entity == "Nest")
    }

    @Test func unsupportedElementTypesAreAModelError() throws {
        let error = #expect(throws: ModelError.self) { try NSManagedObjectModel(managedObjectClasses: [CAArrayOwner.self]) }
        #expect(error?.kind == .invalidCompositeElement("values"))

        let transformable = NSAttributeDescription(name: "blob", type: .transformableAttributeType)
        let model = NSManagedObjectModel(
            entities: [Fixtures.entity("Bad", [NSCompositeAttributeDescription(name: "c", elements: [transformable])])])
        #expect(throws: ModelError.self) { try model.validate() }
        let empty = NSManagedObjectModel(entities: [Fixtures.entity("Empty", [NSCompositeAttributeDescription(name: "c", elements: [])])])
        let emptyError = #expect(throws: ModelError.self) { try empty.validate() }
        #expect(emptyError?.kind == .invalidCompositeElement(""))
        let x = NSAttributeDescription(name: "x", type: .doubleAttributeType)
        let x2 = NSAttributeDescription(name: "x", type: .stringAttributeType)
        let twice = NSManagedObjectModel(entities: [Fixtures.entity("Twice", [NSCompositeAttributeDescription(name: "c", elements: [x, x2])])])
        let twiceError = #expect(throws: ModelError.self) { try twice.validate() }
        #expect(twiceError?.kind == .invalidCompositeElement("x"))
    }

    @Test func predicatesOnUnknownElementsAreRefused() throws {
        let model = Self.handModel()
        try model.validate()
        let entity = try #require(model.entitiesByName["Spot"])
        let good = try PredicateParser.parse("location.latitude > 1", arguments: [])
        try validate(good, for: entity)
        let bad = try PredicateParser.parse("location.altitude > 1", arguments: [])
        #expect(throws: PredicateFormatError.self) { try validate(bad, for: entity) }
    }

    @Test func theStoredFormIsVersionedAndDeterministic() throws {
        let a = CompositeValueCoding.encode(["b": .double(1), "a": .string("x"), "c": .null])
        let b = CompositeValueCoding.encode(["a": .string("x"), "b": .double(1)])
        #expect(a == b)
        #expect(a.first == CompositeValueCoding.version)
        #expect(CompositeValueCoding.decode(a) == ["a": .string("x"), "b": .double(1)])
        #expect(CompositeValueCoding.decode(Data([9, 0, 0, 0, 0])) == nil)
        #expect(CompositeValueCoding.decode(a + Data([0])) == nil)
    }
}
