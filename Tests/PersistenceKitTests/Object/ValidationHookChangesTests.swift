import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// Validation hooks that change, unlink or delete objects the save had not listed: the save
// saves those changes too, rather than dropping them unsaved while the objects stay flagged
// changed outside the context's sets (which would lose their later edits as well).
// Each test runs on the in-memory store and on the file store.

/// A bin whose update validation renames another bin and takes an item from it.
final class VHBin: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "bin", deleteRule: .nullifyDeleteRule) var items: Set<VHItem>
    /// Not managed: the next `validateForUpdate()` changes this bin.
    var peer: VHBin?

    override func validateForUpdate() throws {
        try super.validateForUpdate()
        if let peer {
            self.peer = nil
            peer.name = "touched by validation"
            if let item = peer.items.first { peer.$items.remove(item) }
        }
    }
}

final class VHItem: NSManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "items", deleteRule: .nullifyDeleteRule) var bin: VHBin?
}

/// A bin whose update validation lets go of one of its own items.
final class VHShedder: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shedder", deleteRule: .nullifyDeleteRule) var items: Set<VHLoose>
    var shedsWhenValidated = false

    override func validateForUpdate() throws {
        try super.validateForUpdate()
        if shedsWhenValidated, let item = items.first {
            shedsWhenValidated = false
            $items.remove(item)
        }
    }
}

final class VHLoose: NSManagedObject {
    @Relationship(inverse: "items", deleteRule: .nullifyDeleteRule) var shedder: VHShedder?
}

/// An object whose update validation deletes another.
final class VHDeleter: NSManagedObject {
    @Attribute var name: String = ""
    var victim: VHDeleter?

    override func validateForUpdate() throws {
        try super.validateForUpdate()
        if let victim, let context = managedObjectContext {
            self.victim = nil
            context.delete(victim)
        }
    }
}

@Suite("Changes made by validation hooks") struct ValidationHookChangesTests {
    private static func container(_ classes: [NSManagedObject.Type], onFile: Bool, at folder: borrowing TemporaryFolder) throws
        -> NSPersistentContainer
    {
        let model = try NSManagedObjectModel(managedObjectClasses: classes)
        return onFile ? try FSSupport.container(at: folder.storeURL, model: model) : try OTSupport.container(model: model)
    }

    /// A hook changes an unchanged object (an attribute and a to-many): this save writes it,
    /// and a later edit of it is saved as usual.
    @Test(arguments: [false, true]) func anObjectAValidationHookChangedIsSaved(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container([VHBin.self, VHItem.self], onFile: onFile, at: folder)
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        let (bID, itemID) = try context.performAndWait {
            let a = VHBin(context: context)
            let b = VHBin(context: context)
            b.name = "b"
            let item = VHItem(context: context)
            item.bin = b
            try context.save()
            _ = b.items.count
            a.peer = b
            a.name = "a2"
            try context.save()  // a's hook changes b
            #expect(!context.hasChanges && !b.hasChanges && !item.hasChanges)
            #expect(b.items.isEmpty && item.bin == nil)
            b.name += "!"
            try context.save()
            #expect(!context.hasChanges)
            return (b.objectID, item.objectID)
        }
        let fresh = container.newBackgroundContext()
        try fresh.performAndWait { () throws in
            let b = try #require(try fresh.existingObject(with: bID) as? VHBin)
            let item = try #require(try fresh.existingObject(with: itemID) as? VHItem)
            #expect(b.name == "touched by validation!")
            #expect(b.items.isEmpty && item.bin == nil)
        }
    }

    /// A hook removes an item from its own to-many: both ends are written by the save, in
    /// the editing context and in the store.
    @Test(arguments: [false, true]) func aLinkAValidationHookRemovedIsRemovedOnBothEnds(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container([VHShedder.self, VHLoose.self], onFile: onFile, at: folder)
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        let (binID, itemID) = try context.performAndWait {
            let bin = VHShedder(context: context)
            let item = VHLoose(context: context)
            item.shedder = bin
            try context.save()
            bin.shedsWhenValidated = true
            bin.name = "renamed"
            try context.save()
            #expect(bin.items.isEmpty && item.shedder == nil)
            #expect(!context.hasChanges)
            return (bin.objectID, item.objectID)
        }
        let fresh = container.newBackgroundContext()
        try fresh.performAndWait { () throws in
            let bin = try #require(try fresh.existingObject(with: binID) as? VHShedder)
            let item = try #require(try fresh.existingObject(with: itemID) as? VHLoose)
            #expect(bin.items.isEmpty && item.shedder == nil)
        }
    }

    /// A hook deletes another object: this save deletes it, and it leaves the context.
    @Test(arguments: [false, true]) func anObjectAValidationHookDeletedIsDeleted(onFile: Bool) throws {
        let folder = try TemporaryFolder()
        let container = try Self.container([VHDeleter.self], onFile: onFile, at: folder)
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let a = VHDeleter(context: context)
            let b = VHDeleter(context: context)
            try context.save()
            a.victim = b
            a.name = "x"
            try context.save()
            #expect(!context.hasChanges && context.deletedObjects.isEmpty)
            #expect(b.managedObjectContext == nil)
        }
        let fresh = container.newBackgroundContext()
        try fresh.performAndWait { () throws in
            #expect(try fresh.count(for: VHDeleter.fetchRequest()) == 1)
        }
    }
}
