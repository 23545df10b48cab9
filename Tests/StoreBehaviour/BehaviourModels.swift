import Foundation
import PersistenceKit

// The models of the behaviour checks, prefixed so that their entities' names say where they
// come from in a store's schema or file.

/// Every attribute type, required (with a default) and optional.
final class SBValues: NSManagedObject {
    @Attribute var key: String = ""
    @Attribute var i16: Int16 = 0
    @Attribute var i32: Int32 = 0
    @Attribute var i64: Int64 = 0
    @Attribute var int: Int = 0
    @Attribute var double: Double = 0
    @Attribute var float: Float = 0
    @Attribute var bool: Bool = false
    @Attribute var string: String = ""
    @Attribute var date: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var data: Data = Data()
    @Attribute var uuid: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Attribute var url: URL = URL(fileURLWithPath: "/")
    @Attribute var decimal: Decimal = 0
    @Attribute var oI16: Int16?
    @Attribute var oI32: Int32?
    @Attribute var oI64: Int64?
    @Attribute var oDouble: Double?
    @Attribute var oFloat: Float?
    @Attribute var oBool: Bool?
    @Attribute var oString: String?
    @Attribute var oDate: Date?
    @Attribute var oData: Data?
    @Attribute var oUUID: UUID?
    @Attribute var oURL: URL?
    @Attribute var oDecimal: Decimal?
}

/// A shelf holds books; deleting it deletes them (cascade).
final class SBShelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf", deleteRule: .cascadeDeleteRule) var books: Set<SBBook>
}

/// A book on at most one shelf, by any number of authors, with at most one cover.
final class SBBook: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.indexed) var pages: Int64 = 0
    @Attribute var published: Date?
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var shelf: SBShelf?
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var authors: Set<SBAuthor>
    @Relationship(inverse: "book", deleteRule: .cascadeDeleteRule) var cover: SBCover?
}

/// An author cannot be deleted while books name them (deny).
final class SBAuthor: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "authors", deleteRule: .denyDeleteRule) var books: Set<SBBook>
}

/// A book's cover (one-to-one).
final class SBCover: NSManagedObject {
    @Attribute var color: String = "white"
    @Relationship(inverse: "cover", deleteRule: .nullifyDeleteRule) var book: SBBook?
}

/// A playlist's songs in order.
final class SBPlaylist: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "playlist", deleteRule: .cascadeDeleteRule) var songs: [SBSong]
}

/// A song on at most one playlist.
final class SBSong: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "songs", deleteRule: .nullifyDeleteRule) var playlist: SBPlaylist?
}

/// An animal of no particular kind; dogs (and their puppies) and cats are animals too.
class SBAnimal: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int64 = 0
}

/// A dog, an animal.
class SBDog: SBAnimal {
    @Attribute var breed: String = ""
}

/// A puppy, a dog.
final class SBPuppy: SBDog {
    @Attribute var toy: String?
}

/// A cat, an animal.
final class SBCat: SBAnimal {
    @Attribute var lives: Int16 = 9
}

/// A tag whose label is unique among tags.
final class SBTag: NSManagedObject {
    @Attribute(.unique) var label: String = ""
    @Attribute var uses: Int64 = 0
}

/// A vehicle whose plate is unique among every vehicle, cars and trucks included.
class SBVehicle: NSManagedObject {
    @Attribute(.unique) var plate: String = ""
    @Attribute var seats: Int64 = 0
}

/// A car, a vehicle; its `vin` is unique among cars only.
final class SBCar: SBVehicle {
    @Attribute(.unique) var vin: String?
}

/// A truck, a vehicle; its `vin` is unique among trucks only.
final class SBTruck: SBVehicle {
    @Attribute(.unique) var vin: String?
    @Attribute var axles: Int64 = 2
}

/// A place: a composite of two numbers and an optional label.
struct SBLocation: CompositeAttribute, Equatable {
    var latitude: Double
    var longitude: Double
    var label: String?
}

/// Settings kept as one encoded value.
struct SBSettings: CodableAttribute, Equatable {
    var retries = 0
    var tags: [String] = []
}

/// An object with a composite attribute and a Codable one.
final class SBPlace: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var location: SBLocation = SBLocation(latitude: 0, longitude: 0, label: nil)
    @Attribute var corner: SBLocation?
    @Attribute(storageMethod: .codable) var settings: SBSettings? = nil
}

enum BehaviourModels {
    static let values: [NSManagedObject.Type] = [SBValues.self]
    static let library: [NSManagedObject.Type] = [SBShelf.self, SBBook.self, SBAuthor.self, SBCover.self]
    static let playlists: [NSManagedObject.Type] = [SBPlaylist.self, SBSong.self]
    static let zoo: [NSManagedObject.Type] = [SBAnimal.self, SBDog.self, SBPuppy.self, SBCat.self]
    static let tags: [NSManagedObject.Type] = [SBTag.self]
    static let fleet: [NSManagedObject.Type] = [SBVehicle.self, SBCar.self, SBTruck.self]
    static let places: [NSManagedObject.Type] = [SBPlace.self]
}
