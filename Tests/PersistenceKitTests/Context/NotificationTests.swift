import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

// Context notifications: names, user-info keys and value types, the posting context as
// `object`, the order of a save's notifications, and that every one is posted on the
// context's own queue. Observers filter on the context under test, so tests running in
// parallel never see each other's notifications; each test removes its observers.

/// What an observer saw, reduced to Sendable values inside the observer (on the poster's thread).
private struct SeenNote: Sendable {
    var name: Notification.Name
    var objectIsContext: Bool
    /// Whether the observer ran on the context's queue, as the context itself and an
    /// independent check (a main-queue marker for main-queue contexts) see it.
    var onQueue: Bool
    var keys: Set<String>
    /// Object IDs under each key, whatever the collection type (objects, IDs, arrays).
    var ids: [String: Set<NSManagedObjectID>]
    /// How each key's value was typed: "objects", "objectIDs", "idArray" or "other".
    var kinds: [String: String]
    var userInfoIsNil: Bool
}

private final class NoteLog: Sendable {
    private let notes = TestMutex<[SeenNote]>([])
    func append(_ n: SeenNote) { notes.withLock { $0.append(n) } }
    var all: [SeenNote] { notes.withLock { $0 } }
    func named(_ name: Notification.Name) -> [SeenNote] { all.filter { $0.name == name } }
    func clear() { notes.withLock { $0.removeAll() } }
}

private let noteMainQueueMarker: DispatchSpecificKey<UInt8> = {
    let key = DispatchSpecificKey<UInt8>()
    DispatchQueue.main.setSpecific(key: key, value: 1)
    return key
}()

/// Whether the caller runs on the main dispatch queue. (`Thread.isMainThread` is false for
/// main-queue work under the Linux test runner, where a worker thread drains the main queue.)
private func isOnMainQueue() -> Bool { DispatchQueue.getSpecific(key: noteMainQueueMarker) != nil }

private func summarize(_ note: Notification, context: NSManagedObjectContext) -> SeenNote {
    var onQueue = context.queue.isCurrent
    if context.concurrencyType == .mainQueueConcurrencyType {
        onQueue = onQueue && isOnMainQueue()
    }
    if onQueue { _ = context.hasChanges }  // a queue-checked member; traps if the claim is wrong
    var ids: [String: Set<NSManagedObjectID>] = [:]
    var kinds: [String: String] = [:]
    var keys = Set<String>()
    for (key, value) in note.userInfo ?? [:] {
        guard let key = key as? String else { continue }
        keys.insert(key)
        if let objects = value as? Set<NSManagedObject> {
            ids[key] = Set(objects.map(\.objectID))
            kinds[key] = "objects"
        } else if let set = value as? Set<NSManagedObjectID> {
            ids[key] = set
            kinds[key] = "objectIDs"
        } else if let array = value as? [NSManagedObjectID] {
            ids[key] = Set(array)
            kinds[key] = "idArray"
        } else {
            kinds[key] = "other"
        }
    }
    return SeenNote(
        name: note.name, objectIsContext: (note.object as AnyObject?) === context, onQueue: onQueue, keys: keys,
        ids: ids, kinds: kinds, userInfoIsNil: note.userInfo == nil)
}

/// Observes `names` posted by `context` (only), recording them in `log`. Remove the returned
/// tokens with `stopObserving`.
private func observe(
    _ names: [Notification.Name], of context: NSManagedObjectContext, into log: NoteLog
) -> [any NSObjectProtocol] {
    names.map { name in
        NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { note in
            log.append(summarize(note, context: context))
        }
    }
}

private func stopObserving(_ tokens: [any NSObjectProtocol]) {
    for t in tokens { NotificationCenter.default.removeObserver(t) }
}

private let allContextNotifications: [Notification.Name] = [
    NSManagedObjectContext.didChangeObjectsNotification,
    NSManagedObjectContext.willSaveObjectsNotification,
    NSManagedObjectContext.didSaveObjectsNotification,
    NSManagedObjectContext.didSaveObjectIDsNotification,
    NSManagedObjectContext.didMergeChangesObjectIDsNotification,
]

/// Waits until every block enqueued on `context` so far has run.
private func settle(_ context: NSManagedObjectContext) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        context.perform { c.resume() }
    }
}

/// Enqueues a `perform` block (in async code a bare `perform { }` picks the async overload).
private func enqueue(_ context: NSManagedObjectContext, _ block: @escaping @Sendable () -> Void) {
    context.perform(block)
}

@Suite("Context notifications") struct NotificationTests {
    @Test func notificationNamesHaveCoreDataRawValues() {
        #expect(Notification.Name.NSManagedObjectContextObjectsDidChange.rawValue == "NSObjectsChangedInManagingContextNotification")
        #expect(Notification.Name.NSManagedObjectContextWillSave.rawValue == "NSManagingContextWillSaveChangesNotification")
        #expect(Notification.Name.NSManagedObjectContextDidSave.rawValue == "NSManagingContextDidSaveChangesNotification")
        #expect(NSManagedObjectContext.didChangeObjectsNotification.rawValue == "NSObjectsChangedInManagingContextNotification")
        #expect(NSManagedObjectContext.willSaveObjectsNotification.rawValue == "NSManagingContextWillSaveChangesNotification")
        #expect(NSManagedObjectContext.didSaveObjectsNotification.rawValue == "NSManagingContextDidSaveChangesNotification")
        #expect(NSManagedObjectContext.didSaveObjectIDsNotification.rawValue == "NSManagedObjectContextDidSaveObjectIDsNotification")
        #expect(
            NSManagedObjectContext.didMergeChangesObjectIDsNotification.rawValue
                == "NSManagedObjectContextDidMergeChangesObjectIDsNotification")
        // The Notification.Name spellings Core Data code observes with `forName: .…`.
        #expect(Notification.Name.NSManagedObjectContextDidSaveObjectIDs == NSManagedObjectContext.didSaveObjectIDsNotification)
        #expect(
            Notification.Name.NSManagedObjectContextDidMergeChangesObjectIDs
                == NSManagedObjectContext.didMergeChangesObjectIDsNotification)
    }

    @Test func userInfoKeysHaveCoreDataRawValues() {
        #expect(NSInsertedObjectsKey == "inserted")
        #expect(NSUpdatedObjectsKey == "updated")
        #expect(NSDeletedObjectsKey == "deleted")
        #expect(NSRefreshedObjectsKey == "refreshed")
        #expect(NSInvalidatedObjectsKey == "invalidated")
        #expect(NSInvalidatedAllObjectsKey == "invalidatedAll")
        #expect(NSInsertedObjectIDsKey == "inserted_objectIDs")
        #expect(NSUpdatedObjectIDsKey == "updated_objectIDs")
        #expect(NSDeletedObjectIDsKey == "deleted_objectIDs")
        #expect(NSRefreshedObjectIDsKey == "refreshed_objectIDs")
        #expect(NSInvalidatedObjectIDsKey == "invalidated_objectIDs")
        typealias Key = NSManagedObjectContext.NotificationKey
        #expect(Key.insertedObjects.rawValue == "inserted")
        #expect(Key.updatedObjects.rawValue == "updated")
        #expect(Key.deletedObjects.rawValue == "deleted")
        #expect(Key.refreshedObjects.rawValue == "refreshed")
        #expect(Key.invalidatedObjects.rawValue == "invalidated")
        #expect(Key.invalidatedAllObjects.rawValue == "invalidatedAll")
        #expect(Key.insertedObjectIDs.rawValue == "inserted_objectIDs")
        #expect(Key.updatedObjectIDs.rawValue == "updated_objectIDs")
        #expect(Key.deletedObjectIDs.rawValue == "deleted_objectIDs")
        #expect(Key.refreshedObjectIDs.rawValue == "refreshed_objectIDs")
        #expect(Key.invalidatedObjectIDs.rawValue == "invalidated_objectIDs")
    }

    @Test func objectsDidChangeIsPostedOnTheQueueAfterAPerformBlockWithInserts() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = NoteLog()
        let tokens = observe(allContextNotifications, of: context, into: log)
        defer { stopObserving(tokens) }

        let insertedIDs = TestMutex<Set<NSManagedObjectID>>([])
        let seenInsideBlock = TestMutex<Int>(-1)
        enqueue(context) {
            for i in 0..<2 {
                let b = Book(context: context)
                b.title = "B\(i)"
                insertedIDs.withLock { _ = $0.insert(b.objectID) }
            }
            // Not yet: the notification comes when the block ends.
            seenInsideBlock.withLock { $0 = log.all.count }
        }
        await settle(context)
        #expect(seenInsideBlock.withLock { $0 } == 0)
        let notes = log.all
        try #require(notes.count == 1)
        let note = notes[0]
        #expect(note.name == .NSManagedObjectContextObjectsDidChange)
        #expect(note.objectIsContext)
        #expect(note.onQueue)
        #expect(note.keys == [NSInsertedObjectsKey])
        #expect(note.kinds[NSInsertedObjectsKey] == "objects")
        #expect(note.ids[NSInsertedObjectsKey] == insertedIDs.withLock { $0 })
    }

    @Test func objectsDidChangeReportsUpdatesAndDeletes() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let id: NSManagedObjectID = try context.performAndWait {
            let b = Book(context: context)
            b.title = "Old"
            try context.save()
            return b.objectID
        }
        let log = NoteLog()
        let tokens = observe([.NSManagedObjectContextObjectsDidChange], of: context, into: log)
        defer { stopObserving(tokens) }

        enqueue(context) { (context.object(with: id) as? Book)?.title = "New" }
        await settle(context)
        var notes = log.all
        try #require(notes.count == 1)
        #expect(notes[0].keys == [NSUpdatedObjectsKey])
        #expect(notes[0].ids[NSUpdatedObjectsKey] == [id])
        #expect(notes[0].onQueue)

        log.clear()
        enqueue(context) { context.delete(context.object(with: id)) }
        await settle(context)
        notes = log.all
        try #require(notes.count == 1)
        #expect(notes[0].keys == [NSDeletedObjectsKey])
        #expect(notes[0].ids[NSDeletedObjectsKey] == [id])
        #expect(notes[0].onQueue)
    }

    @Test func performAndWaitLeavesChangesPendingUntilProcessPendingChanges() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = NoteLog()
        let tokens = observe([.NSManagedObjectContextObjectsDidChange], of: context, into: log)
        defer { stopObserving(tokens) }
        let id = context.performAndWait { Book(context: context).objectID }
        #expect(log.all.isEmpty)
        context.performAndWait { context.processPendingChanges() }
        let notes = log.all
        try #require(notes.count == 1)
        #expect(notes[0].ids[NSInsertedObjectsKey] == [id])
        #expect(notes[0].onQueue)
    }

    @Test func saveNotificationsComeInOrderOnTheQueueWithObjectsAndIDs() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let log = NoteLog()
        let tokens = observe(allContextNotifications, of: context, into: log)
        defer { stopObserving(tokens) }

        let ids: Set<NSManagedObjectID> = try await context.perform {
            let a = Book(context: context)
            a.title = "A"
            let s = Shelf(context: context)
            s.name = "S"
            try context.save()
            return [a.objectID, s.objectID]
        }
        #expect(ids.allSatisfy { !$0.isTemporaryID })
        let notes = log.all
        #expect(
            notes.map(\.name) == [
                .NSManagedObjectContextObjectsDidChange, .NSManagedObjectContextWillSave, .NSManagedObjectContextDidSave,
                NSManagedObjectContext.didSaveObjectIDsNotification,
            ])
        #expect(notes.allSatisfy { $0.onQueue })
        #expect(notes.allSatisfy { $0.objectIsContext })

        let willSave = try #require(log.named(.NSManagedObjectContextWillSave).first)
        #expect(willSave.keys.isEmpty)

        let didSave = try #require(log.named(.NSManagedObjectContextDidSave).first)
        #expect(didSave.keys == [NSInsertedObjectsKey])
        #expect(didSave.kinds[NSInsertedObjectsKey] == "objects")
        #expect(didSave.ids[NSInsertedObjectsKey] == ids)

        let didSaveIDs = try #require(log.named(NSManagedObjectContext.didSaveObjectIDsNotification).first)
        #expect(didSaveIDs.keys == [NSInsertedObjectIDsKey])
        #expect(didSaveIDs.kinds[NSInsertedObjectIDsKey] == "objectIDs")
        #expect(didSaveIDs.ids[NSInsertedObjectIDsKey] == ids)
        #expect(log.named(NSManagedObjectContext.didMergeChangesObjectIDsNotification).isEmpty)
    }

    @Test func didSaveCarriesUpdatedAndDeletedObjectsAndIDs() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (keep, gone): (NSManagedObjectID, NSManagedObjectID) = try await context.perform {
            let a = Book(context: context)
            let b = Book(context: context)
            try context.save()
            return (a.objectID, b.objectID)
        }
        let log = NoteLog()
        let tokens = observe(
            [.NSManagedObjectContextDidSave, NSManagedObjectContext.didSaveObjectIDsNotification], of: context, into: log)
        defer { stopObserving(tokens) }

        try await context.perform {
            (context.object(with: keep) as? Book)?.pages = 12
            context.delete(context.object(with: gone))
            try context.save()
        }
        let didSave = try #require(log.named(.NSManagedObjectContextDidSave).first)
        #expect(didSave.onQueue)
        #expect(didSave.keys == [NSUpdatedObjectsKey, NSDeletedObjectsKey])
        #expect(didSave.ids[NSUpdatedObjectsKey] == [keep])
        #expect(didSave.ids[NSDeletedObjectsKey] == [gone])
        #expect(didSave.kinds[NSDeletedObjectsKey] == "objects")

        let didSaveIDs = try #require(log.named(NSManagedObjectContext.didSaveObjectIDsNotification).first)
        #expect(didSaveIDs.onQueue)
        #expect(didSaveIDs.keys == [NSUpdatedObjectIDsKey, NSDeletedObjectIDsKey])
        #expect(didSaveIDs.ids[NSUpdatedObjectIDsKey] == [keep])
        #expect(didSaveIDs.ids[NSDeletedObjectIDsKey] == [gone])
        #expect(didSaveIDs.kinds[NSUpdatedObjectIDsKey] == "objectIDs")
    }

    /// Core Data posts will-save and did-save for a save with nothing to write (a public
    /// Core Data test suite expects a did-save with no objects after such a save), not
    /// nothing.
    @Test(arguments: [false, true]) func aSaveWithNoChangesPostsWillSaveAndAnEmptyDidSave(storeLoaded: Bool) async throws {
        let container: NSPersistentContainer
        if storeLoaded {
            container = try Fixtures.container()
        } else {
            container = NSPersistentContainer(name: "unloaded", managedObjectModel: try Fixtures.model())
        }
        let context = container.newBackgroundContext()
        let log = NoteLog()
        let tokens = observe(allContextNotifications, of: context, into: log)
        defer { stopObserving(tokens) }
        try await context.perform { try context.save() }
        #expect(log.all.map(\.name) == [
            NSManagedObjectContext.willSaveObjectsNotification, NSManagedObjectContext.didSaveObjectsNotification,
            NSManagedObjectContext.didSaveObjectIDsNotification,
        ])
        #expect(log.all.allSatisfy { $0.ids.isEmpty && $0.onQueue && $0.objectIsContext })
    }

    /// What a will-save observer inserts into an otherwise empty save is saved by it.
    @Test func aWillSaveObserverMayGiveAnEmptySaveSomethingToWrite() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextWillSave, object: context, queue: nil
        ) { _ in
            if context.insertedObjects.isEmpty { Book(context: context).title = "from will-save" }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let log = NoteLog()
        let tokens = observe([NSManagedObjectContext.didSaveObjectsNotification], of: context, into: log)
        defer { stopObserving(tokens) }
        try await context.perform { try context.save() }
        #expect(log.all.count == 1)
        #expect(log.all.first?.ids[NSInsertedObjectsKey]?.count == 1)
        let reader = container.newBackgroundContext()
        let titles = try reader.performAndWait { try reader.fetch(Book.fetchRequest()).map(\.title) }
        #expect(titles == ["from will-save"])
    }

    @Test func didSaveObserverMayUseTheSavedObjectsOnTheQueue() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let titles = TestMutex<[String]>([])
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextDidSave, object: context, queue: nil
        ) { note in
            // On the context's queue, so reading the objects is allowed (and checked).
            let objects = note.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject> ?? []
            let read = objects.compactMap { ($0 as? Book)?.title }.sorted()
            titles.withLock { $0 = read }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try await context.perform {
            for t in ["x", "y"] { Book(context: context).title = t }
            try context.save()
        }
        #expect(titles.withLock { $0 } == ["x", "y"])
    }

    @Test func didSaveObjectIDsStreamYieldsOncePerSave() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let stream = context.didSaveObjectIDs()
        var iterator = stream.makeAsyncIterator()

        let id: NSManagedObjectID = try await context.perform {
            try context.save()  // no changes: yields nothing (the notifications are posted)
            let b = Book(context: context)
            try context.save()
            return b.objectID
        }
        let first = try #require(await iterator.next())
        #expect(first.inserted == [id])
        #expect(first.updated.isEmpty && first.deleted.isEmpty)

        try await context.perform {
            (context.object(with: id) as? Book)?.title = "changed"
            try context.save()
        }
        let second = try #require(await iterator.next())
        #expect(second.updated == [id])
        #expect(second.inserted.isEmpty && second.deleted.isEmpty)

        try await context.perform {
            context.delete(context.object(with: id))
            try context.save()
        }
        let third = try #require(await iterator.next())
        #expect(third.deleted == [id])
        #expect(third.inserted.isEmpty && third.updated.isEmpty)
    }

    @Test func didSaveObjectIDsStreamStartsAtTheCallAndServesSeveralConsumers() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try await context.perform {
            _ = Book(context: context)
            try context.save()  // before any stream: never seen
        }
        let s1 = context.didSaveObjectIDs()
        let s2 = context.didSaveObjectIDs()
        let id = try await context.perform {
            let b = Book(context: context)
            try context.save()
            return b.objectID
        }
        var i1 = s1.makeAsyncIterator()
        var i2 = s2.makeAsyncIterator()
        #expect(await i1.next()?.inserted == [id])
        #expect(await i2.next()?.inserted == [id])
    }

    @Test func didSaveObjectIDsStreamEndsWhenTheContextGoes() async throws {
        let container = try Fixtures.container()
        var context: NSManagedObjectContext? = container.newBackgroundContext()
        let stream = context!.didSaveObjectIDs()
        weak let weakContext = context
        context = nil
        #expect(weakContext == nil)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }

    @Test func resetPostsInvalidatedAllAndRollbackPostsInvalidated() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let saved: NSManagedObjectID = try context.performAndWait {
            let b = Book(context: context)
            try context.save()
            return b.objectID
        }
        let log = NoteLog()
        let tokens = observe([.NSManagedObjectContextObjectsDidChange], of: context, into: log)
        defer { stopObserving(tokens) }

        let unsaved: NSManagedObjectID = context.performAndWait {
            let b = Book(context: context)
            context.processPendingChanges()
            return b.objectID
        }
        log.clear()
        context.performAndWait { context.rollback() }
        var notes = log.all
        try #require(notes.count == 1)
        #expect(notes[0].onQueue)
        #expect(notes[0].ids[NSInvalidatedObjectsKey] == [unsaved])

        log.clear()
        context.performAndWait {
            _ = context.object(with: saved)
            context.reset()
        }
        notes = log.all
        try #require(notes.count == 1)
        #expect(notes[0].onQueue)
        #expect(notes[0].keys.contains(NSInvalidatedAllObjectsKey))
        #expect(notes[0].ids[NSInvalidatedAllObjectsKey] == [saved])
    }

    /// Core Data's refreshed set holds objects "refreshed but not dirtied in the scope of
    /// this context": a merge, a refresh with merging and refreshAllObjects list an object
    /// with unsaved changes under updated instead, and an unchanged one under refreshed.
    @Test func objectsWithUnsavedChangesAreListedAsUpdatedNotRefreshed() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let other = container.newBackgroundContext()
        let (changedID, plainID) = try context.performAndWait {
            let changed = Book(context: context)
            let plain = Book(context: context)
            try context.save()
            return (changed.objectID, plain.objectID)
        }
        let saved = TestMutex<Notification?>(nil)
        let saveToken = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didSaveObjectsNotification, object: other, queue: nil
        ) { note in saved.withLock { $0 = note } }
        defer { NotificationCenter.default.removeObserver(saveToken) }
        try other.performAndWait { () throws in
            for id in [changedID, plainID] { try #require(try other.existingObject(with: id) as? Book).pages = 9 }
            try other.save()
        }
        let note = try #require(saved.withLock { $0 })
        try context.performAndWait { () throws in
            // Both registered and loaded; one changed here.
            let changed = try #require(try context.existingObject(with: changedID) as? Book)
            _ = try #require(try context.existingObject(with: plainID) as? Book).title
            changed.title = "local"
            context.processPendingChanges()
        }
        let log = NoteLog()
        let tokens = observe([.NSManagedObjectContextObjectsDidChange], of: context, into: log)
        defer { stopObserving(tokens) }
        context.performAndWait { context.mergeChanges(fromContextDidSave: note) }
        var notes = log.all
        try #require(notes.count == 1)
        #expect(notes[0].ids[NSRefreshedObjectsKey] == [plainID])
        #expect(notes[0].ids[NSUpdatedObjectsKey] == [changedID])

        log.clear()
        try context.performAndWait { () throws in
            let changed = try #require(context.registeredObject(for: changedID))
            let plain = try #require(context.registeredObject(for: plainID))
            context.refresh(changed, mergeChanges: true)
            context.refresh(plain, mergeChanges: true)
            context.refreshAllObjects()
        }
        // One notification: refreshes are announced together, when `refreshAllObjects()`
        // processes pending changes.
        notes = log.all
        try #require(notes.count == 1)
        #expect(notes[0].ids[NSUpdatedObjectsKey] == [changedID])
        #expect(notes[0].ids[NSRefreshedObjectsKey] == [plainID])
        try context.performAndWait { () throws in
            let changed = try #require(context.registeredObject(for: changedID) as? Book)
            #expect(changed.title == "local" && changed.pages == 9)
        }
    }

    /// Core Data collects refreshed objects and announces them when it processes pending
    /// changes: not one notification per `refresh(_:mergeChanges:)`.
    @Test func refreshesAreAnnouncedTogetherWhenPendingChangesAreProcessed() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let (a, b) = try context.performAndWait {
            let a = Book(context: context)
            let b = Book(context: context)
            try context.save()
            return (a.objectID, b.objectID)
        }
        let log = NoteLog()
        let tokens = observe([.NSManagedObjectContextObjectsDidChange], of: context, into: log)
        defer { stopObserving(tokens) }
        try context.performAndWait { () throws in
            context.refresh(try #require(context.registeredObject(for: a)), mergeChanges: false)
            context.refresh(try #require(context.registeredObject(for: b)), mergeChanges: true)
            #expect(log.all.isEmpty)  // performAndWait does not process pending changes
            let inserted = Book(context: context)
            context.processPendingChanges()
            let notes = log.all
            #expect(notes.count == 1)
            #expect(notes.first?.ids[NSRefreshedObjectsKey] == [a, b])
            #expect(notes.first?.ids[NSInsertedObjectsKey] == [inserted.objectID])
        }
        // A `perform` block announces its refreshes when it ends.
        log.clear()
        await context.perform {
            if let object = context.registeredObject(for: a) { context.refresh(object, mergeChanges: false) }
        }
        #expect(log.all.count == 1)
        #expect(log.all.first?.ids[NSRefreshedObjectsKey] == [a])
        // A rollback discards pending changes, not the announcement of a refresh before it.
        log.clear()
        try context.performAndWait { () throws in
            context.refresh(try #require(context.registeredObject(for: b)), mergeChanges: false)
            context.rollback()
        }
        #expect(log.all.count == 1)
        #expect(log.all.first?.ids[NSRefreshedObjectsKey] == [b])
    }

    /// Core Data's merge announces the updates of objects in use; a registered fault takes
    /// the new values silently. The did-merge notification carries every ID of the save,
    /// registered here or not, and as refreshed only what objects-did-change listed so.
    @Test func mergesAnnounceLoadedObjectsAndDidMergeCarriesEverySavedID() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let reader = container.newBackgroundContext()
        let ids = try writer.performAndWait {
            let books = (0..<4).map { i in
                let b = Book(context: writer)
                b.title = "b\(i)"
                return b
            }
            try writer.save()
            return books.map(\.objectID)
        }
        let (loaded, dirty, fault) = (ids[0], ids[1], ids[2])  // ids[3] is never registered in `reader`
        try reader.performAndWait { () throws in
            _ = try #require(try reader.existingObject(with: loaded) as? Book).title
            try #require(try reader.existingObject(with: dirty) as? Book).pages = 7
            _ = reader.object(with: fault)  // registered, never read
            reader.processPendingChanges()
        }
        let saved = TestMutex<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didSaveObjectsNotification, object: writer, queue: nil
        ) { note in saved.withLock { $0 = note } }
        defer { NotificationCenter.default.removeObserver(token) }
        try writer.performAndWait { () throws in
            for id in ids { try #require(try writer.existingObject(with: id) as? Book).title = "changed" }
            try writer.save()
        }
        let note = try #require(saved.withLock { $0 })
        let log = NoteLog()
        let tokens = observe(
            [.NSManagedObjectContextObjectsDidChange, NSManagedObjectContext.didMergeChangesObjectIDsNotification], of: reader,
            into: log)
        defer { stopObserving(tokens) }
        try reader.performAndWait { () throws in
            reader.mergeChanges(fromContextDidSave: note)
            // The fault took the saved values all the same.
            #expect(try #require(reader.registeredObject(for: fault) as? Book).title == "changed")
        }
        let changed = log.named(.NSManagedObjectContextObjectsDidChange)
        try #require(changed.count == 1)
        #expect(changed[0].ids[NSRefreshedObjectsKey] == [loaded])
        #expect(changed[0].ids[NSUpdatedObjectsKey] == [dirty])
        let merged = log.named(NSManagedObjectContext.didMergeChangesObjectIDsNotification)
        try #require(merged.count == 1)
        #expect(merged[0].ids[NSUpdatedObjectIDsKey] == Set(ids))
        #expect(merged[0].ids[NSRefreshedObjectIDsKey] == [loaded])

        // A context that holds none of the saved objects still hears which IDs the save
        // changed (no objects-did-change: nothing of its own changed).
        let bystander = container.newBackgroundContext()
        let bystanderLog = NoteLog()
        let bystanderTokens = observe(
            [.NSManagedObjectContextObjectsDidChange, NSManagedObjectContext.didMergeChangesObjectIDsNotification],
            of: bystander, into: bystanderLog)
        defer { stopObserving(bystanderTokens) }
        bystander.performAndWait { bystander.mergeChanges(fromContextDidSave: note) }
        #expect(bystanderLog.named(.NSManagedObjectContextObjectsDidChange).isEmpty)
        #expect(bystanderLog.named(NSManagedObjectContext.didMergeChangesObjectIDsNotification).first?.ids[NSUpdatedObjectIDsKey] == Set(ids))
    }

    @Test func notificationsOfOneContextDoNotReachObserversOfAnother() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let log = NoteLog()
        let tokens = observe(allContextNotifications, of: b, into: log)
        defer { stopObserving(tokens) }
        try await a.perform {
            _ = Book(context: a)
            try a.save()
        }
        await settle(b)
        #expect(log.all.isEmpty)
    }

    // MARK: Main queue

    @MainActor @Test func viewContextNotificationsArePostedOnTheMainQueue() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let log = NoteLog()
        let tokens = observe(allContextNotifications, of: view, into: log)
        defer { stopObserving(tokens) }

        let b = Book(context: view)
        b.title = "main"
        try view.save()
        let notes = log.all
        #expect(
            notes.map(\.name) == [
                .NSManagedObjectContextObjectsDidChange, .NSManagedObjectContextWillSave, .NSManagedObjectContextDidSave,
                NSManagedObjectContext.didSaveObjectIDsNotification,
            ])
        #expect(notes.allSatisfy { $0.onQueue })
        #expect(notes.allSatisfy { $0.objectIsContext })
    }

    @Test func viewContextSavedFromABackgroundTaskStillPostsOnTheMainQueue() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let log = NoteLog()
        let tokens = observe(allContextNotifications, of: view, into: log)
        defer { stopObserving(tokens) }

        try await Task.detached {
            try view.performAndWait {
                _ = Book(context: view)
                try view.save()
            }
            try await view.perform(schedule: .enqueued) {
                _ = Book(context: view)
                try view.save()
            }
        }.value
        let notes = log.all
        #expect(notes.count == 8)
        #expect(notes.allSatisfy { $0.onQueue })
    }

    /// Deleting an insert that objects-did-change had already announced is announced as a
    /// deletion, so observers learn that the object went away.
    @Test func deletingAnAnnouncedInsertIsAnnouncedAsADeletion() throws {
        let context = try Fixtures.container().newBackgroundContext()
        let deleted = TestMutex<[Int]>([])
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didChangeObjectsNotification, object: context, queue: nil
        ) { note in
            let objects = note.userInfo?[NSDeletedObjectsKey] as? Set<NSManagedObject> ?? []
            deleted.withLock { $0.append(objects.count) }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        context.performAndWait {
            let announced = Book(context: context)
            context.processPendingChanges()  // announces the insert
            context.delete(announced)
            let unannounced = Book(context: context)
            context.delete(unannounced)
            context.processPendingChanges()
        }
        // The first notification announced the insert; the second, only the announced deletion.
        #expect(deleted.withLock { $0 } == [0, 1])
        #expect(context.performAndWait { context.deletedObjects.isEmpty && context.insertedObjects.isEmpty })
    }
}
