import Foundation
import Testing
@testable import PersistenceKit

final class ORPlaylist: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "playlist", deleteRule: .cascadeDeleteRule) var songs: [ORSong]
}

final class ORSong: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "songs") var playlist: ORPlaylist?
    @Relationship(inverse: "songs") var albums: Set<ORAlbum>
}

/// The ordered end of a many-to-many relationship.
final class ORAlbum: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "albums") var songs: [ORSong]
}

@Suite("Ordered to-many relationships")
struct OrderedRelationshipTests {
    enum StoreKind: String, CaseIterable, CustomStringConvertible {
        case inMemory, file
        var description: String { rawValue }
    }

    static func model() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [ORPlaylist.self, ORSong.self, ORAlbum.self])
    }

    /// A container on the store at `url` (a file store), or on a fresh in-memory store.
    static func container(_ kind: StoreKind, url: URL, model: NSManagedObjectModel, name: String = #function) throws
        -> NSPersistentContainer
    {
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [
            kind == .file ? NSPersistentStoreDescription(url: url) : NSPersistentStoreDescription(type: NSInMemoryStoreType)
        ]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let error = box.get() { throw error }
        return container
    }

    /// The titles of the one playlist's songs, read in a new context (from the store).
    static func storedTitles(_ container: NSPersistentContainer) throws -> [String] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            try context.fetch(ORPlaylist.fetchRequest()).first?.songs.map(\.title) ?? []
        }
    }

    @Test func anArrayDeclaresAnOrderedRelationship() throws {
        let model = try Self.model()
        let songs = try #require(model.entitiesByName["ORPlaylist"]?.relationshipsByName["songs"])
        #expect(songs.isOrdered && songs.isToMany)
        #expect(model.entitiesByName["ORSong"]?.relationshipsByName["albums"]?.isOrdered == false)
        #expect(model.entitiesByName["ORAlbum"]?.relationshipsByName["songs"]?.isOrdered == true)
    }

    @Test(arguments: StoreKind.allCases)
    func theOrderIsKeptAcrossSaveAndReopen(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        var container = try Self.container(kind, url: folder.storeURL, model: model)
        let context = container.newBackgroundContext()
        let titles = ["e", "b", "d", "a", "c"]
        try context.performAndWait {
            let list = ORPlaylist(context: context)
            list.name = "mix"
            list.songs = titles.map { t in
                let s = ORSong(context: context)
                s.title = t
                return s
            }
            #expect(list.songs.map(\.title) == titles)
            #expect(list.songs.allSatisfy { $0.playlist === list })
            try context.save()
        }
        #expect(try Self.storedTitles(container) == titles)
        if kind == .file {
            try FSSupport.close(container)
            container = try Self.container(kind, url: folder.storeURL, model: model)
            #expect(try Self.storedTitles(container) == titles)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func movesInsertionsAndRemovalsPersist(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        var container = try Self.container(kind, url: folder.storeURL, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let list = ORPlaylist(context: context)
            for t in ["a", "b", "c", "d"] {
                let s = ORSong(context: context)
                s.title = t
                s.playlist = list  // the inverse appends
            }
            #expect(list.songs.map(\.title) == ["a", "b", "c", "d"])
            try context.save()
            list.$songs.move(fromOffsets: IndexSet([0]), toOffset: 3)  // a before d
            #expect(list.songs.map(\.title) == ["b", "c", "a", "d"])
            #expect(context.updatedObjects.contains(list))
            let x = ORSong(context: context)
            x.title = "x"
            list.$songs.insert(x, at: 1)
            #expect(x.playlist === list)
            list.$songs.remove(at: 0)
            #expect(list.songs.map(\.title) == ["x", "c", "a", "d"])
            #expect(list.$songs[2].title == "a")
            #expect(list.$songs.firstIndex(of: x) == 0)
            try context.save()
        }
        #expect(try Self.storedTitles(container) == ["x", "c", "a", "d"])
        if kind == .file {
            try FSSupport.close(container)
            container = try Self.container(kind, url: folder.storeURL, model: model)
            #expect(try Self.storedTitles(container) == ["x", "c", "a", "d"])
        }
        // A move alone (no membership change) is saved too.
        let again = container.newBackgroundContext()
        try again.performAndWait {
            let list = try #require(try again.fetch(ORPlaylist.fetchRequest()).first)
            list.$songs.move(fromOffsets: IndexSet([3]), toOffset: 0)
            #expect(again.hasChanges)
            try again.save()
        }
        #expect(try Self.storedTitles(container) == ["d", "x", "c", "a"])
    }

    @Test(arguments: StoreKind.allCases)
    func theOrderedEndOfAManyToManyKeepsItsOrder(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        let container = try Self.container(kind, url: folder.storeURL, model: model)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let album = ORAlbum(context: context)
            album.name = "best of"
            let songs = ["z", "y", "x"].map { t -> ORSong in
                let s = ORSong(context: context)
                s.title = t
                return s
            }
            album.songs = songs
            #expect(songs[0].albums == [album])
            try context.save()
            // Added from the other side: goes last.
            let w = ORSong(context: context)
            w.title = "w"
            w.albums = [album]
            try context.save()
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let album = try #require(try reader.fetch(ORAlbum.fetchRequest()).first)
            #expect(album.songs.map(\.title) == ["z", "y", "x", "w"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aMergedSaveBringsTheNewOrder(kind: StoreKind) throws {
        let folder = try TemporaryFolder()
        let model = try Self.model()
        let container = try Self.container(kind, url: folder.storeURL, model: model)
        let viewer = container.newBackgroundContext()
        viewer.automaticallyMergesChangesFromParent = true
        let listID = try viewer.performAndWait {
            let list = ORPlaylist(context: viewer)
            for t in ["a", "b", "c"] {
                let s = ORSong(context: viewer)
                s.title = t
                s.playlist = list
            }
            try viewer.save()
            #expect(list.songs.map(\.title) == ["a", "b", "c"])
            return list.objectID
        }
        let editor = container.newBackgroundContext()
        try editor.performAndWait {
            let list = try #require(editor.existingObject(with: listID) as? ORPlaylist)
            list.$songs.move(fromOffsets: IndexSet([2]), toOffset: 0)
            try editor.save()
        }
        viewer.performAndWait {
            let list = viewer.object(with: listID) as? ORPlaylist
            #expect(list?.songs.map(\.title) == ["c", "a", "b"])
        }
    }

    @Test func keyValueCodingReadsAndWritesAnOrderedSet() throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(.inMemory, url: folder.storeURL, model: try Self.model())
        let context = container.newBackgroundContext()
        context.performAndWait {
            let list = ORPlaylist(context: context)
            let a = ORSong(context: context)
            a.title = "a"
            let b = ORSong(context: context)
            b.title = "b"
            list.setValue(NSOrderedSet(array: [b, a]), forKey: "songs")
            let read = list.value(forKey: "songs") as? NSOrderedSet
            #expect(read?.array.compactMap { ($0 as? ORSong)?.title } == ["b", "a"])
            #expect(a.playlist === list)
        }
    }

    @Test func aChildContextSavePassesTheOrderToItsParent() throws {
        let folder = try TemporaryFolder()
        let container = try Self.container(.inMemory, url: folder.storeURL, model: try Self.model())
        let parent = container.newBackgroundContext()
        let listID = try parent.performAndWait {
            let list = ORPlaylist(context: parent)
            for t in ["a", "b", "c"] {
                let s = ORSong(context: parent)
                s.title = t
                s.playlist = list
            }
            try parent.save()
            return list.objectID
        }
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = parent
        try child.performAndWait {
            let list = try #require(child.existingObject(with: listID) as? ORPlaylist)
            list.$songs.move(fromOffsets: IndexSet([0]), toOffset: 3)
            try child.save()
        }
        try parent.performAndWait {
            let list = try #require(parent.existingObject(with: listID) as? ORPlaylist)
            #expect(list.songs.map(\.title) == ["b", "c", "a"])
            try parent.save()
        }
        #expect(try Self.storedTitles(container) == ["b", "c", "a"])
    }
}
