import Foundation
import Testing
@testable import PersistenceKit

/// Version hashes change with what changes how data is stored, and with the user's
/// modifier, and with nothing else.
@Suite("Model version hashes") struct VersionHashTests {
    @Test func sha256MatchesTheStandardVectors() {
        #expect(NSManagedObjectModel.hex(SHA256.hash(Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(NSManagedObjectModel.hex(SHA256.hash([UInt8]()))
            == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(NSManagedObjectModel.hex(SHA256.hash(long))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func equalModelsHaveEqualHashesByEntity() throws {
        let fromClasses = try Fixtures.model()
        let byHand = Fixtures.handBuiltBookshelf()
        #expect(fromClasses.entityVersionHashesByName == byHand.entityVersionHashesByName)
        #expect(fromClasses.entityVersionHashesByName.count == 4)
        #expect(fromClasses.entityVersionHashesByName.values.allSatisfy { $0.count == 32 })
    }

    @Test func whatAffectsStorageChangesTheHash() {
        func hash(_ change: (NSAttributeDescription) -> Void) -> Data {
            let a = NSAttributeDescription(name: "title", type: .stringAttributeType)
            change(a)
            return a.versionHash
        }
        let base = hash { _ in }
        #expect(hash { $0.attributeType = .binaryDataAttributeType } != base)
        #expect(hash { $0.isOptional = false } != base)
        #expect(hash { $0.isTransient = true } != base)
        #expect(hash { $0.versionHashModifier = "2" } != base)
        #expect(hash { $0.name = "name" } != base)
        #expect(hash { $0.defaultValue = "x" } == base, "default values do not enter the hash")
        #expect(hash { $0.isIndexed = true } == base, "indexes do not enter the hash")
        #expect(hash { $0.renamingIdentifier = "old" } == base, "renaming identifiers do not enter the hash")
    }

    @Test func entityHashesFollowTheirPropertiesAndFlags() throws {
        let model = Fixtures.handBuiltBookshelf()
        let book = try #require(model.entitiesByName["Book"])
        let before = book.versionHash
        book.versionHashModifier = "v2"
        #expect(book.versionHash != before)
        book.versionHashModifier = nil
        #expect(book.versionHash == before)
        book.isAbstract = true
        #expect(book.versionHash != before)
        book.isAbstract = false
        book.managedObjectClassName = "Other"
        #expect(book.versionHash == before, "the class does not enter the hash")
        book.properties = book.properties.reversed()
        #expect(book.versionHash == before, "property order does not enter the hash")
    }

    @Test func relationshipHashesFollowTheirShape() throws {
        let model = Fixtures.handBuiltBookshelf()
        let shelf = try #require(model.entitiesByName["Shelf"]?.relationshipsByName["books"])
        let before = shelf.versionHash
        shelf.isOrdered = true
        #expect(shelf.versionHash != before)
        shelf.isOrdered = false
        shelf.deleteRule = .denyDeleteRule
        #expect(shelf.versionHash == before, "delete rules do not enter the hash")
        shelf.maxCount = 10
        #expect(shelf.versionHash != before)
    }

    @Test func aSubentityHashCoversItsParent() {
        let parent = NSEntityDescription()
        parent.name = "Item"
        parent.properties = [NSAttributeDescription(name: "code", type: .stringAttributeType)]
        let child = NSEntityDescription()
        child.name = "Novel"
        parent.subentities = [child]
        let before = child.versionHash
        parent.versionHashModifier = "changed"
        #expect(child.versionHash != before)
    }
}

/// An added store's metadata carries the entity version hashes, which
/// `isConfiguration(withName:compatibleWithStoreMetadata:)` compares.
@Suite("Store metadata version hashes") struct StoreVersionHashMetadataTests {
    @Test func anAddedStoresMetadataHasTheEntityHashes() throws {
        let container = try Fixtures.container()
        let coordinator = container.persistentStoreCoordinator
        let store = try #require(coordinator.persistentStores.first)
        let metadata = coordinator.metadata(for: store)
        let hashes = try #require(metadata[NSStoreModelVersionHashesKey] as? [String: Data])
        #expect(hashes == (try Fixtures.model()).entityVersionHashesByName)
        #expect(try Fixtures.model().isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        var changed = hashes
        changed["Book"] = Data(repeating: 0, count: 32)
        #expect(!(try Fixtures.model()).isConfiguration(withName: nil, compatibleWithStoreMetadata: [NSStoreModelVersionHashesKey: changed]))
    }
}
