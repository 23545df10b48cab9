import Foundation
import Testing
@testable import PersistenceKit

/// `detectConflicts(for:)`: an object only read is checked at the next save like an edited
/// one, so a change another context saved meanwhile is a merge conflict.
@Suite("Conflict detection for unchanged objects")
struct ConflictDetectionTests {
    /// A container whose store holds one shelf; its ID.
    static func seeded() throws -> (NSPersistentContainer, NSManagedObjectID) {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let shelf = Shelf(context: context)
            shelf.name = "start"
            try context.save()
            return shelf.objectID
        }
        return (container, id)
    }

    /// Renames the shelf in a context of its own and saves.
    static func renameElsewhere(_ container: NSPersistentContainer, _ id: NSManagedObjectID, _ name: String) throws {
        let other = container.newBackgroundContext()
        try other.performAndWait {
            try #require(try other.existingObject(with: id) as? Shelf).name = name
            try other.save()
        }
    }

    @Test("A shelf another context renamed since it was read fails the save under the error policy")
    func staleReadConflicts() throws {
        let (container, id) = try Self.seeded()
        let context = container.newBackgroundContext()
        let error = try context.performAndWait { () -> CoreDataError? in
            let shelf = try #require(try context.existingObject(with: id) as? Shelf)
            #expect(shelf.name == "start")
            try Self.renameElsewhere(container, id, "renamed")
            context.detectConflicts(for: shelf)
            Book(context: context).title = "based on the shelf as read"
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoreDataError
            }
        }
        #expect(error?.code == .managedObjectMerge, "\(String(describing: error))")
        #expect(error?.conflicts.first?.objectID == id)
    }

    @Test("Without a change elsewhere the save goes through; without the mark a stale read is not checked")
    func currentReadSaves() throws {
        let (container, id) = try Self.seeded()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = try #require(try context.existingObject(with: id) as? Shelf)
            context.detectConflicts(for: shelf)
            try context.save()
            // Unmarked, the same stale read saves: only edited objects are checked.
            try Self.renameElsewhere(container, id, "renamed")
            Book(context: context).title = "unchecked"
            try context.save()
        }
    }
}
