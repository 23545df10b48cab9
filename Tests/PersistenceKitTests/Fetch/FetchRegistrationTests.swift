import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

/// Counts `awakeFromFetch()` per title, so a test sees which rows became live objects.
final class AwakeCountingNote: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var rank: Int64 = 0
    @Relationship(inverse: "notes", deleteRule: .nullifyDeleteRule) var folder: NoteFolder?
    static let awakened = TestMutex<[String: Int]>([:])
    override func awakeFromFetch() {
        let t = title
        Self.awakened.withLock { $0[t, default: 0] += 1 }
    }
}

final class NoteFolder: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "folder", deleteRule: .nullifyDeleteRule) var notes: Set<AwakeCountingNote>
}

/// A fetch registers the objects it returns, not every row it judged: Core Data's SQL store
/// filters, sorts and limits rows before any object exists, and its fetched objects are
/// faults. A sort, a window or a predicate run in memory must not make a live object of
/// every row of the entity, run `awakeFromFetch()` on rows that do not match, or leave the
/// context holding them all.
@Suite("Objects a fetch registers") struct FetchRegistrationTests {
    /// 50 notes titled "<prefix>-0" … "<prefix>-49", rank = index, every tenth in a folder
    /// named "<prefix>-folder"; the context is reset afterwards.
    private static func seed(_ prefix: String) throws -> NSManagedObjectContext {
        let container = try OTSupport.container(
            model: NSManagedObjectModel(managedObjectClasses: [AwakeCountingNote.self, NoteFolder.self]), name: prefix)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let folder = NoteFolder(context: context)
            folder.name = "\(prefix)-folder"
            for i in 0..<50 {
                let note = AwakeCountingNote(context: context)
                note.title = "\(prefix)-\(i)"
                note.rank = Int64(i)
                if i % 10 == 0 { note.folder = folder }
            }
            try context.save()
            context.reset()
        }
        return context
    }

    private static func awakenings(_ prefix: String) -> Int {
        AwakeCountingNote.awakened.withLock { $0.filter { $0.key.hasPrefix(prefix + "-") }.values.reduce(0, +) }
    }

    @Test func aSortedWindowRegistersOnlyItsResultsAsFaults() throws {
        let context = try Self.seed("window")
        try context.performAndWait {
            let request = NSFetchRequest<AwakeCountingNote>(entityName: "AwakeCountingNote")
            request.sortDescriptors = [NSSortDescriptor(keyPath: \AwakeCountingNote.rank, ascending: false)]
            request.fetchLimit = 3
            let notes = try context.fetch(request)
            #expect(context.registeredObjects.count == 3)
            #expect(notes.allSatisfy { $0.isFault })
            #expect(Self.awakenings("window") == 0)
            #expect(notes.map(\.title) == ["window-49", "window-48", "window-47"])
            #expect(Self.awakenings("window") == 3)
        }
    }

    @Test func aPredicateRunInMemoryAwakensNoRowItRejects() throws {
        let context = try Self.seed("memory")
        try context.performAndWait {
            let request = NSFetchRequest<AwakeCountingNote>(entityName: "AwakeCountingNote")
            request.predicate = #Predicate<AwakeCountingNote> { $0.title.contains("-7") }  // not a store condition
            let notes = try context.fetch(request)
            #expect(notes.map(\.title) == ["memory-7"])
            #expect(Self.awakenings("memory") == 1)
            #expect(context.registeredObjects.count == 1)
        }
    }

    /// Relationships of rows judged in memory resolve to this context's objects, so reading
    /// through a to-one works.
    @Test func aPredicateThroughARelationshipJudgesUnregisteredRows() throws {
        let context = try Self.seed("related")
        try context.performAndWait {
            let folders = try context.fetch(NSFetchRequest<NoteFolder>(entityName: "NoteFolder"))
            let folder = try #require(folders.first)
            let folderID = folder.objectID
            let byObject = NSFetchRequest<AwakeCountingNote>(entityName: "AwakeCountingNote")
            byObject.predicate = #Predicate<AwakeCountingNote> { $0.folder?.objectID == folderID && $0.rank > 5 }
            byObject.sortDescriptors = [NSSortDescriptor(keyPath: \AwakeCountingNote.rank, ascending: true)]
            #expect(try context.fetch(byObject).map(\.rank) == [10, 20, 30, 40])
            let byName = NSFetchRequest<AwakeCountingNote>(entityName: "AwakeCountingNote")
            byName.predicate = #Predicate<AwakeCountingNote> { $0.folder?.name == "related-folder" }
            #expect(try context.count(for: byName) == 5)
            // The folder, the four notes returned; nothing for the rows only judged or counted.
            #expect(context.registeredObjects.count == 5)
        }
    }

    @Test func objectIDsAndCountsRegisterNothing() throws {
        let context = try Self.seed("ids")
        try context.performAndWait {
            let request = NSFetchRequest<NSManagedObjectID>(entityName: "AwakeCountingNote")
            request.resultType = .managedObjectIDResultType
            request.setPredicate(#Predicate<AwakeCountingNote> { $0.title.contains("5") })
            let ids = try context.fetch(request)
            #expect(ids.count == 5)
            let counted = NSFetchRequest<AwakeCountingNote>(entityName: "AwakeCountingNote")
            counted.predicate = #Predicate<AwakeCountingNote> { $0.title.contains("5") }
            #expect(try context.count(for: counted) == 5)
            #expect(context.registeredObjects.isEmpty)
            #expect(Self.awakenings("ids") == 0)
            // The IDs name the objects a later fetch registers.
            let fetched = try context.fetch(counted)
            #expect(Set(fetched.map(\.objectID)) == Set(ids))
        }
    }

    /// Rows are judged by their saved values; an object registered here with unsaved
    /// changes by its in-memory values, in the same sort.
    @Test func registeredChangedObjectsSortAmongUnregisteredRows() throws {
        let context = try Self.seed("mixed")
        try context.performAndWait {
            let all = NSFetchRequest<AwakeCountingNote>(entityName: "AwakeCountingNote")
            all.predicate = #Predicate<AwakeCountingNote> { $0.rank == 3 }
            let three = try #require(try context.fetch(all).first)
            three.rank = 100
            let request = NSFetchRequest<AwakeCountingNote>(entityName: "AwakeCountingNote")
            request.sortDescriptors = [NSSortDescriptor(keyPath: \AwakeCountingNote.rank, ascending: false)]
            request.fetchLimit = 2
            let top = try context.fetch(request)
            #expect(top.first === three)
            #expect(top.map(\.rank) == [100, 49])
        }
    }
}
