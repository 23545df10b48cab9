import Foundation
import Testing
@testable import PersistenceKit

/// Loading a store written with an older model version migrates it to the current one,
/// inferring the mapping as Core Data's lightweight migration does; what cannot be inferred
/// is a typed error that leaves the store as it was.
@Suite("Lightweight migration on load") struct LightweightMigrationTests {
    typealias S = MigrationSupport

    static func fetch(_ entity: String, in container: NSPersistentContainer) throws -> [[String: Any]] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: entity)
            return try context.fetch(request).map { object in
                var values: [String: Any] = [:]
                for p in object.entity.properties {
                    if let r = p as? NSRelationshipDescription {
                        let value = object.value(forKey: r.name)
                        if r.isToMany {
                            values[r.name] = ((value as? Set<NSManagedObject>) ?? []).count
                        } else {
                            values[r.name] = (value as? NSManagedObject).map { _ in "set" } ?? "nil"
                        }
                    } else if let v = object.value(forKey: p.name) {
                        values[p.name] = v
                    }
                }
                values["uri"] = object.objectID.uriRepresentation()
                return values
            }
        }
    }

    @Test func aModelFileVersionMigratesRenamesWideningsAndNewProperties() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", S.v1), ("V2", S.v2)], current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        let uris = try S.seedVersion1(at: folder.storeURL, model: v1)

        let v2 = try NSManagedObjectModel(modelFileAt: bundle)
        let container = try S.container(at: folder.storeURL, model: v2)
        let authors = try Self.fetch("Author", in: container).sorted { ($0["fullName"] as? String ?? "") < ($1["fullName"] as? String ?? "") }
        #expect(authors.map { $0["fullName"] as? String } == ["Ada", "Bob"], "entity and attribute renamed by renaming identifiers")
        #expect(authors[0]["age"] as? Int64 == 36, "Integer 16 widened to Integer 64")
        #expect(authors[1]["age"] == nil)
        #expect(authors[0]["email"] == nil, "a new optional attribute starts empty")
        #expect(authors[0]["nickname"] == nil, "a removed attribute is gone")
        #expect(authors[0]["favourite"] as? String == "set", "to-one kept through the renamed entity")
        let ada = try #require(authors[0]["uri"] as? URL)
        let old = try #require(uris["Ada"])
        #expect(ada.host == old.host, "the store keeps its identifier")
        #expect(ada.lastPathComponent == old.lastPathComponent, "objects keep their primary keys")
        let books = try Self.fetch("Book", in: container)
        #expect(books.first?["price"] as? Double == 2.5, "Float widened to Double")
        #expect(books.first?["fan"] as? String == "set")
        #expect(try Self.fetch("Shelf", in: container).isEmpty)

        // The migrated store opens again without migrating, and takes new saves.
        try FSSupport.close(container)
        let reopened = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        #expect(try Self.fetch("Author", in: reopened).count == 2)
        try FSSupport.close(reopened)
    }

    @Test func threeVersionsMigrateInOneLoad() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", S.v1), ("V2", S.v2), ("V3", S.v3)], current: "V3")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        try S.seedVersion1(at: folder.storeURL, model: v1)

        let v3 = try NSManagedObjectModel(modelFileAt: bundle)
        let container = try S.container(at: folder.storeURL, model: v3)
        let authors = try Self.fetch("Author", in: container).sorted { ($0["fullName"] as? String ?? "") < ($1["fullName"] as? String ?? "") }
        #expect(authors.map { $0["fullName"] as? String } == ["Ada", "Bob"])
        #expect(authors.map { $0["age"] as? Int64 } == [36, 18], "a stored nil of a now required attribute takes its default")
        #expect(authors.map { $0["favourites"] as? Int } == [1, 0], "a to-one became to-many")
        let books = try Self.fetch("Book", in: container)
        #expect(books.first?["rating"] as? Int32 == 3, "a new required attribute starts at its default")
        #expect(books.first?["fans"] as? Int == 1)
        try FSSupport.close(container)
    }

    @Test func migrationCanBeTurnedOff() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", S.v1), ("V2", S.v2)], current: "V2")
        try S.seedVersion1(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel")))
        let container = NSPersistentContainer(name: "Library", managedObjectModel: try NSManagedObjectModel(modelFileAt: bundle))
        let description = NSPersistentStoreDescription(url: folder.storeURL)
        description.shouldInferMappingModelAutomatically = false
        container.persistentStoreDescriptions = [description]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        #expect((box.get() as? CoreDataError)?.code == .persistentStoreIncompatibleVersionHash)
    }

    // MARK: What cannot be inferred

    /// Seeds with v1, then loads `entities` as the current version: the load fails with a
    /// `MigrationError`, and the store still opens with v1 and holds its objects.
    static func expectRefused(_ entities: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> MigrationError? {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V1", S.v1), ("V9", entities)], current: "V9")
        let v1URL = bundle.appendingPathComponent("V1.xcdatamodel")
        try S.seedVersion1(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: v1URL))
        let error = #expect(throws: CoreDataError.self, sourceLocation: sourceLocation) {
            _ = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        }
        #expect(error?.code == .migration, sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: folder.storeURL.path + FileStoreMigration.temporarySuffix), sourceLocation: sourceLocation)
        let again = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: v1URL))
        #expect(try Self.fetch("Writer", in: again).count == 2, "the store is unchanged", sourceLocation: sourceLocation)
        try FSSupport.close(again)
        return error?.underlying as? MigrationError
    }

    @Test func aTypeChangeItCannotConvertIsTyped() throws {
        let entities = S.v1.replacingOccurrences(of: #"name="nickname" optional="YES" attributeType="String""#, with: #"name="nickname" optional="YES" attributeType="Date""#)
        let error = try Self.expectRefused(entities)
        #expect(error?.kind == .incompatibleType(from: .stringAttributeType, to: .dateAttributeType))
        #expect(error?.entity == "Writer")
        #expect(error?.property == "nickname")
    }

    @Test func aRequiredAttributeWithoutDefaultOverAStoredNilIsTyped() throws {
        let entities = S.v1.replacingOccurrences(of: #"name="age" optional="YES" attributeType="Integer 16""#, with: #"name="age" attributeType="Integer 16""#)
        let error = try Self.expectRefused(entities)
        guard case .requiredWithoutDefault = error?.kind else {
            Issue.record("expected requiredWithoutDefault, got \(String(describing: error))")
            return
        }
        #expect(error?.property == "age")
    }

    @Test func aNarrowingThatDoesNotFitIsTyped() throws {
        let folder = try TemporaryFolder()
        let wide = #"<entity name="Counter"><attribute name="value" attributeType="Integer 64" defaultValueString="0"/></entity>"#
        let narrow = #"<entity name="Counter"><attribute name="value" attributeType="Integer 16" defaultValueString="0"/></entity>"#
        let bundle = try S.bundle(in: folder.url, versions: [("V1", wide), ("V2", narrow)], current: "V2")
        let v1 = try NSManagedObjectModel(modelFileAt: bundle.appendingPathComponent("V1.xcdatamodel"))
        let seed = try S.container(at: folder.storeURL, model: v1)
        let context = seed.newBackgroundContext()
        try context.performAndWait {
            for value in [Int64(7), 70_000] {
                let counter = NSManagedObject(entity: try #require(v1.entitiesByName["Counter"]), insertInto: context)
                counter.setValue(value, forKey: "value")
            }
            try context.save()
        }
        try FSSupport.close(seed)
        let error = #expect(throws: CoreDataError.self) {
            _ = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        }
        let migration = error?.underlying as? MigrationError
        guard case .valueDoesNotFit = migration?.kind else {
            Issue.record("expected valueDoesNotFit, got \(String(describing: error))")
            return
        }
        #expect(migration?.entity == "Counter")
        #expect(migration?.property == "value")
    }

    @Test func anAttributeBecomingARelationshipIsTyped() throws {
        let entities = S.v1.replacingOccurrences(
            of: #"<attribute name="nickname" optional="YES" attributeType="String"/>"#,
            with: #"<relationship name="nickname" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Book" inverseName="nicknamed" inverseEntity="Book"/>"#
        ).replacingOccurrences(
            of: #"<attribute name="title" attributeType="String" defaultValueString=""/>"#,
            with: #"<attribute name="title" attributeType="String" defaultValueString=""/><relationship name="nicknamed" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Writer" inverseName="nickname" inverseEntity="Writer"/>"#)
        let error = try Self.expectRefused(entities)
        #expect(error?.kind == .kindChanged)
        #expect(error?.property == "nickname")
    }

    @Test func aStoreOfAnUnknownVersionIsMissingItsSourceModel() throws {
        let folder = try TemporaryFolder()
        let bundle = try S.bundle(in: folder.url, versions: [("V2", S.v2)], current: "V2")
        let other = try S.bundle(in: folder.url.appendingPathComponent("old"), versions: [("V1", S.v1)], current: "V1")
        try S.seedVersion1(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: other))
        let error = #expect(throws: CoreDataError.self) {
            _ = try S.container(at: folder.storeURL, model: try NSManagedObjectModel(modelFileAt: bundle))
        }
        #expect(error?.code == .migrationMissingSourceModel)
        guard case .missingSourceModel = (error?.underlying as? MigrationError)?.kind else {
            Issue.record("expected missingSourceModel, got \(String(describing: error))")
            return
        }
    }
}
