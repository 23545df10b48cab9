import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// willSave()/didSave() hooks and conflict resolution, as Core Data documents them: objects
// the willSave hooks change get willSave too, changes made in didSave are ordinary unsaved
// changes, and the overwrite and rollback merge policies leave both ends of every
// relationship agreeing.

/// An item whose willSave calls are counted.
final class SHItem: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var stamp: Int64 = 0
    @Relationship(inverse: "items") var owner: SHOwner?
    var willSaveCalls = 0

    override func willSave() {
        super.willSave()
        willSaveCalls += 1
    }
}

/// An owner whose willSave stamps its items (only when the stamp differs, as Apple advises).
final class SHOwner: NSManagedObject {
    @Attribute var touched: Int64 = 0
    @Relationship(inverse: "owner") var items: Set<SHItem>
    /// When set, the next willSave inserts one new item.
    var spawnItem = false
    /// When set, every willSave changes `touched`: a hook that never settles.
    var restless = false

    override func willSave() {
        super.willSave()
        for item in items where item.stamp != touched + 1 { item.stamp = touched + 1 }
        if spawnItem, let context = managedObjectContext {
            spawnItem = false
            let item = SHItem(context: context)
            item.name = "spawned"
        }
        if restless { touched += 1 }
    }
}

/// An object that bumps its version once per save in willSave, and edits itself or inserts
/// another object in didSave when asked.
final class SHVersioned: NSManagedObject {
    @Attribute var name: String = ""
    @Attribute var version: Int64 = 0
    var willSaveCalls = 0
    var stampedThisSave = false
    var editInDidSave = false
    var insertInDidSave = false

    override func willSave() {
        super.willSave()
        willSaveCalls += 1
        if !stampedThisSave {
            version += 1
            stampedThisSave = true
        }
    }

    override func didSave() {
        super.didSave()
        stampedThisSave = false
        guard let context = managedObjectContext, !isDeleted else { return }
        if editInDidSave {
            editInDidSave = false
            name = "edited in didSave"
        }
        if insertInDidSave {
            insertInDidSave = false
            SHVersioned(context: context).name = "inserted in didSave"
        }
    }
}

/// Counts its awakeFromInsert calls.
final class SHAwake: NSManagedObject {
    @Attribute var name: String = ""
    var awakeCalls = 0

    override func awakeFromInsert() {
        super.awakeFromInsert()
        awakeCalls += 1
    }
}

/// The object IDs each objects-did-change notification of one context carried, by key.
private final class ChangeLog: Sendable {
    private let notes = TestMutex<[[String: Set<NSManagedObjectID>]]>([])
    private let token = TestMutex<(any NSObjectProtocol)?>(nil)

    init(_ context: NSManagedObjectContext) {
        let notes = self.notes
        let observer = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil
        ) { note in
            // Runs on the context's queue, where its objects may be read.
            var seen: [String: Set<NSManagedObjectID>] = [:]
            for (key, value) in note.userInfo ?? [:] {
                guard let key = key as? String else { continue }
                seen[key] = Set(((value as? Set<NSManagedObject>) ?? []).map(\.objectID))
            }
            notes.withLock { $0.append(seen) }
        }
        token.withLock { $0 = observer }
    }

    deinit { if let t = token.withLock({ $0 }) { NotificationCenter.default.removeObserver(t) } }

    var all: [[String: Set<NSManagedObjectID>]] { notes.withLock { $0 } }
    func clear() { notes.withLock { $0.removeAll() } }
}

@Suite("willSave and didSave hooks and observers") struct SaveHooksTests {
    // MARK: willSave

    @Test func objectChangedByAnotherObjectsWillSaveGetsWillSave() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = SHOwner(context: context)
            let item = SHItem(context: context)
            item.owner = owner
            try context.save()
            item.willSaveCalls = 0
            owner.touched = 5  // only the owner changes; its willSave changes the item
            try context.save()
            #expect(item.stamp == 6)
            #expect(item.willSaveCalls == 1)
            #expect(!context.hasChanges)
        }
    }

    @Test func objectInsertedByAWillSaveHookGetsWillSaveAndIsSaved() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = SHOwner(context: context)
            owner.spawnItem = true
            try context.save()
            let items = try context.fetch(SHItem.fetchRequest())
            #expect(items.map(\.name) == ["spawned"])
            #expect(items.first?.willSaveCalls == 1)
            #expect(!context.hasChanges)
        }
    }

    @Test func objectInsertedByAWillSaveObserverGetsWillSave() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextWillSave, object: context, queue: nil) { _ in
            SHItem(context: context).name = "extra"
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try context.performAndWait {
            SHItem(context: context).name = "item"
            try context.save()
            let items = try context.fetch(SHItem.fetchRequest()).sorted { $0.name < $1.name }
            #expect(items.map(\.name) == ["extra", "item"])
            #expect(items.map(\.willSaveCalls) == [1, 1])
        }
    }

    /// Apple: when willSave changes the object through its accessors, Core Data calls
    /// willSave again before saving.
    @Test func willSaveRunsAgainOnAnUpdatedObjectThatChangedItself() throws {
        let container = try OTSupport.container([SHVersioned.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = SHVersioned(context: context)
            try context.save()
            o.willSaveCalls = 0
            o.name = "y"
            try context.save()
            #expect(o.version == 2)
            #expect(o.willSaveCalls == 2)
        }
    }

    @Test func willSaveThatNeverSettlesIsATypedErrorAndSavesNothing() throws {
        let container = try OTSupport.container([SHItem.self, SHOwner.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let owner = SHOwner(context: context)
            try context.save()
            owner.restless = true
            owner.touched = 1
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .coreData)
            #expect(error?.message.contains("100 rounds") == true)
            let reader = container.newBackgroundContext()
            let stored = try reader.performAndWait { try reader.fetch(SHOwner.fetchRequest()).map(\.touched) }
            #expect(stored == [0])
        }
    }

    // MARK: didSave

    /// Apple: changes made in didSave dirty the context and leave it with unsaved changes.
    @Test func changeMadeInDidSaveIsAnnouncedAndSavedNextTime() throws {
        let container = try OTSupport.container([SHVersioned.self])
        let context = container.newBackgroundContext()
        let log = ChangeLog(context)
        try context.performAndWait {
            let o = SHVersioned(context: context)
            o.editInDidSave = true
            try context.save()
            #expect(o.isUpdated && context.hasChanges)
            log.clear()
            context.processPendingChanges()
            #expect(log.all.contains { $0[NSUpdatedObjectsKey]?.contains(o.objectID) == true })
            try context.save()
            let reader = container.newBackgroundContext()
            #expect(try reader.performAndWait { try reader.fetch(SHVersioned.fetchRequest()).map(\.name) } == ["edited in didSave"])
        }
    }

    @Test func insertMadeInDidSaveIsAnnouncedAndSavedNextTime() throws {
        let container = try OTSupport.container([SHVersioned.self])
        let context = container.newBackgroundContext()
        let log = ChangeLog(context)
        try context.performAndWait {
            let o = SHVersioned(context: context)
            o.insertInDidSave = true
            try context.save()
            #expect(context.insertedObjects.count == 1)
            log.clear()
            context.processPendingChanges()
            #expect(log.all.contains { $0[NSInsertedObjectsKey]?.count == 1 })
            try context.save()
            #expect(try context.count(for: SHVersioned.fetchRequest()) == 2)
        }
    }

    /// Apple: awakeFromInsert is invoked only once in the object's lifetime, so an object
    /// deleted before a save (which detaches it) and inserted again does not get it again.
    @Test func awakeFromInsertRunsOnceInAnObjectsLife() throws {
        let container = try OTSupport.container([SHAwake.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let o = SHAwake(context: context)
            o.name = "kept"
            context.delete(o)
            context.processPendingChanges()
            #expect(o.managedObjectContext == nil)
            context.insert(o)
            #expect(o.awakeCalls == 1)
            try context.save()
            let standalone = SHAwake(entity: o.entity, insertInto: nil)
            #expect(standalone.awakeCalls == 0)
            context.insert(standalone)
            #expect(standalone.awakeCalls == 1)
        }
    }

    // MARK: objects-did-change

    @Test func insertDeletedBeforeItWasAnnouncedPostsNothing() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = ChangeLog(context)
        context.performAndWait {
            context.delete(Book(context: context))
            context.processPendingChanges()
        }
        #expect(log.all.isEmpty)
    }
}
