import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
@testable import PersistenceKit

// Merging saves into other contexts: automatic merges between siblings and into the view
// context, explicit mergeChanges(fromContextDidSave:), and mergeChanges(fromRemoteContextSave:
// into:). Merges are awaited through the receiver's did-merge notification, never by sleeping.

/// One did-merge notification of a context, reduced to Sendable values on the context's queue.
private struct MergeEvent: Sendable {
    var inserted: Set<NSManagedObjectID> = []
    var updated: Set<NSManagedObjectID> = []
    var deleted: Set<NSManagedObjectID> = []
    var refreshed: Set<NSManagedObjectID> = []
    var onQueue = false
}

private let mergeMainQueueMarker: DispatchSpecificKey<UInt8> = {
    let key = DispatchSpecificKey<UInt8>()
    DispatchQueue.main.setSpecific(key: key, value: 1)
    return key
}()

/// Whether the caller runs on the main dispatch queue (not `Thread.isMainThread`, which is
/// false for main-queue work under the Linux test runner).
private func mergeIsOnMainQueue() -> Bool { DispatchQueue.getSpecific(key: mergeMainQueueMarker) != nil }

/// The did-merge notifications of one context, as an async sequence.
private struct MergeWatch {
    private var iterator: AsyncStream<MergeEvent>.Iterator
    private let token: any NSObjectProtocol

    init(_ context: NSManagedObjectContext) {
        let (stream, continuation) = AsyncStream<MergeEvent>.makeStream(bufferingPolicy: .unbounded)
        iterator = stream.makeAsyncIterator()
        token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, queue: nil
        ) { note in
            func ids(_ key: String) -> Set<NSManagedObjectID> { note.userInfo?[key] as? Set<NSManagedObjectID> ?? [] }
            var onQueue = context.queue.isCurrent
            if context.concurrencyType == .mainQueueConcurrencyType { onQueue = onQueue && mergeIsOnMainQueue() }
            continuation.yield(
                MergeEvent(
                    inserted: ids(NSInsertedObjectIDsKey), updated: ids(NSUpdatedObjectIDsKey),
                    deleted: ids(NSDeletedObjectIDsKey), refreshed: ids(NSRefreshedObjectIDsKey), onQueue: onQueue))
        }
    }

    /// The next merge (waits for it).
    mutating func next() async -> MergeEvent? { await iterator.next() }

    func stop() { NotificationCenter.default.removeObserver(token) }
}

/// Counts a context's did-merge notifications.
private struct MergeCounter {
    private final class Count: Sendable {
        let value = TestMutex(0)
    }
    private let count = Count()
    private let token: any NSObjectProtocol

    init(_ context: NSManagedObjectContext) {
        let count = self.count
        token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, queue: nil
        ) { _ in count.value.withLock { $0 += 1 } }
    }

    var value: Int { count.value.withLock { $0 } }

    func stop() { NotificationCenter.default.removeObserver(token) }
}

/// Waits until every block enqueued on `context` so far has run.
private func flush(_ context: NSManagedObjectContext) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        context.perform { c.resume() }
    }
}

/// Saves one book with `title` through `context` and returns its permanent ID.
private func saveBook(_ title: String, pages: Int64 = 0, in context: NSManagedObjectContext) throws -> NSManagedObjectID {
    try context.performAndWait {
        let b = Book(context: context)
        b.title = title
        b.pages = pages
        try context.save()
        return b.objectID
    }
}

/// Reads a book's title and pages in `context` (loading it if needed).
private func read(_ id: NSManagedObjectID, in context: NSManagedObjectContext) throws -> (title: String, pages: Int64) {
    try context.performAndWait {
        let b = try #require(try context.existingObject(with: id) as? Book)
        return (b.title, b.pages)
    }
}

@Suite("Merging saves between contexts") struct MergingTests {
    @Test func siblingContextsSeeEachOthersInsertsUpdatesAndDeletes() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        a.performAndWait { a.automaticallyMergesChangesFromParent = true }
        b.performAndWait { b.automaticallyMergesChangesFromParent = true }
        #expect(b.performAndWait { b.automaticallyMergesChangesFromParent })
        var merges = MergeWatch(b)
        defer { merges.stop() }
        let mergesIntoA = MergeCounter(a)
        defer { mergesIntoA.stop() }

        // Insert.
        let id = try saveBook("First", in: a)
        let insert = try #require(await merges.next())
        #expect(insert.inserted == [id])
        #expect(insert.updated.isEmpty && insert.deleted.isEmpty)
        #expect(insert.onQueue)
        let registered = b.performAndWait { b.registeredObject(for: id) != nil }
        #expect(registered)
        #expect(try read(id, in: b).title == "First")

        // Update: B's loaded object changes without a fetch or refresh.
        try a.performAndWait {
            try #require(a.registeredObject(for: id) as? Book).title = "Second"
            try a.save()
        }
        let update = try #require(await merges.next())
        #expect(update.updated == [id])
        #expect(update.refreshed == [id])
        #expect(update.onQueue)
        let afterUpdate = try b.performAndWait {
            let book = try #require(b.registeredObject(for: id) as? Book)
            return (book.title, b.hasChanges)
        }
        #expect(afterUpdate.0 == "Second")
        #expect(afterUpdate.1 == false)

        // Delete: B lets the object go.
        try a.performAndWait {
            a.delete(try #require(a.registeredObject(for: id)))
            try a.save()
        }
        let delete = try #require(await merges.next())
        #expect(delete.deleted == [id])
        #expect(delete.onQueue)
        let afterDelete = b.performAndWait { (b.registeredObject(for: id) == nil, b.hasChanges, b.registeredObjects.count) }
        #expect(afterDelete.0)
        #expect(afterDelete.1 == false)
        #expect(afterDelete.2 == 0)
        let fetched = try b.performAndWait { try b.count(for: Book.fetchRequest()) }
        #expect(fetched == 0)

        // The saving context never merges its own saves.
        await flush(a)
        #expect(mergesIntoA.value == 0)
    }

    @Test func mergedUpdatesKeepTheReceiversUnsavedChanges() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { b.automaticallyMergesChangesFromParent = true }
        var merges = MergeWatch(b)
        defer { merges.stop() }

        let id = try saveBook("Original", pages: 10, in: a)
        _ = await merges.next()  // the insert

        // B changes pages (unsaved); A changes the title and saves.
        try b.performAndWait {
            try #require(try b.existingObject(with: id) as? Book).pages = 999
        }
        try a.performAndWait {
            try #require(try a.existingObject(with: id) as? Book).title = "Theirs"
            try a.save()
        }
        let update = try #require(await merges.next())
        #expect(update.updated == [id])

        let state = try b.performAndWait {
            let book = try #require(b.registeredObject(for: id) as? Book)
            return (book.title, book.pages, b.hasChanges, b.updatedObjects.map(\.objectID))
        }
        #expect(state.0 == "Theirs")
        #expect(state.1 == 999)
        #expect(state.2)
        #expect(state.3 == [id])

        // B's save goes on top of the merged version without a conflict.
        try b.performAndWait { try b.save() }
        let fresh = container.newBackgroundContext()
        let stored = try read(id, in: fresh)
        #expect(stored.title == "Theirs")
        #expect(stored.pages == 999)
    }

    @Test func mergedUpdateToAPropertyTheReceiverChangedKeepsTheReceiversValue() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { b.automaticallyMergesChangesFromParent = true }
        var merges = MergeWatch(b)
        defer { merges.stop() }
        let id = try saveBook("Original", pages: 1, in: a)
        _ = await merges.next()

        try b.performAndWait { try #require(try b.existingObject(with: id) as? Book).title = "Mine" }
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: id) as? Book)
            book.title = "Theirs"
            book.pages = 2
            try a.save()
        }
        _ = try #require(await merges.next())
        let state = try b.performAndWait {
            let book = try #require(b.registeredObject(for: id) as? Book)
            return (book.title, book.pages)
        }
        #expect(state.0 == "Mine")
        #expect(state.1 == 2)
    }

    @Test func mergedDeleteRemovesAnObjectTheReceiverHadChanged() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { b.automaticallyMergesChangesFromParent = true }
        var merges = MergeWatch(b)
        defer { merges.stop() }
        let id = try saveBook("Doomed", in: a)
        _ = await merges.next()

        try b.performAndWait { try #require(try b.existingObject(with: id) as? Book).pages = 5 }
        try a.performAndWait {
            a.delete(try a.existingObject(with: id))
            try a.save()
        }
        let delete = try #require(await merges.next())
        #expect(delete.deleted == [id])
        let state = b.performAndWait { (b.registeredObject(for: id) == nil, b.hasChanges, b.updatedObjects.isEmpty) }
        #expect(state.0)
        #expect(state.1 == false)
        #expect(state.2)
    }

    @Test func mergedChangesUpdateTheReceiversLoadedRelationships() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { b.automaticallyMergesChangesFromParent = true }
        var merges = MergeWatch(b)
        defer { merges.stop() }
        let (shelfID, bookID): (NSManagedObjectID, NSManagedObjectID) = try a.performAndWait {
            let shelf = Shelf(context: a)
            shelf.name = "S"
            let book = Book(context: a)
            book.shelf = shelf
            try a.save()
            return (shelf.objectID, book.objectID)
        }
        _ = await merges.next()
        let before = try b.performAndWait { try #require(try b.existingObject(with: shelfID) as? Shelf).books.count }
        #expect(before == 1)

        // A adds a book to the shelf: B's loaded shelf sees it.
        let addedID: NSManagedObjectID = try a.performAndWait {
            let book = Book(context: a)
            book.shelf = try #require(a.registeredObject(for: shelfID) as? Shelf)
            try a.save()
            return book.objectID
        }
        _ = try #require(await merges.next())
        let afterAdd = try b.performAndWait {
            Set(try #require(b.registeredObject(for: shelfID) as? Shelf).books.map(\.objectID))
        }
        #expect(afterAdd == [bookID, addedID])

        // A deletes a book: B's shelf lets it go.
        try a.performAndWait {
            a.delete(try #require(a.registeredObject(for: bookID)))
            try a.save()
        }
        let delete = try #require(await merges.next())
        #expect(delete.deleted == [bookID])
        let afterDelete = try b.performAndWait {
            Set(try #require(b.registeredObject(for: shelfID) as? Shelf).books.map(\.objectID))
        }
        #expect(afterDelete == [addedID])
    }

    @Test func mergesArriveInSaveOrder() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { b.automaticallyMergesChangesFromParent = true }
        var merges = MergeWatch(b)
        defer { merges.stop() }
        let titlesSeen = TestMutex<[String]>([])
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didMergeChangesObjectIDsNotification, object: b, queue: nil
        ) { note in
            // On B's queue: read the merged value right after each merge.
            let ids = note.userInfo?[NSUpdatedObjectIDsKey] as? Set<NSManagedObjectID>
                ?? note.userInfo?[NSInsertedObjectIDsKey] as? Set<NSManagedObjectID> ?? []
            let title = ids.first.flatMap { (b.registeredObject(for: $0) as? Book)?.title } ?? "?"
            titlesSeen.withLock { $0.append(title) }
        }
        defer { NotificationCenter.default.removeObserver(token) }

        let id = try saveBook("v0", in: a)
        _ = try read(id, in: b)  // B loads it before the updates
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: id) as? Book)
            for v in 1...5 {
                book.title = "v\(v)"
                try a.save()
            }
        }
        var events: [MergeEvent] = []
        for _ in 0..<6 { events.append(try #require(await merges.next())) }
        #expect(events[0].inserted == [id])
        #expect(events.dropFirst().allSatisfy { $0.updated == [id] })
        #expect(titlesSeen.withLock { $0 } == ["v0", "v1", "v2", "v3", "v4", "v5"])
    }

    @Test func turningAutomaticMergingOffStopsMerges() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        b.performAndWait { b.automaticallyMergesChangesFromParent = true }
        let counter = MergeCounter(b)
        defer { counter.stop() }
        _ = try saveBook("one", in: a)
        await flush(b)  // the merge was enqueued on B before save() returned
        #expect(counter.value == 1)

        b.performAndWait { b.automaticallyMergesChangesFromParent = false }
        #expect(b.performAndWait { b.automaticallyMergesChangesFromParent } == false)
        let id = try saveBook("two", in: a)
        await flush(b)
        #expect(counter.value == 1)
        #expect(b.performAndWait { b.registeredObject(for: id) } == nil)
    }

    // MARK: View context

    @MainActor @Test func viewContextMergesBackgroundSavesOnTheMainQueue() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        view.automaticallyMergesChangesFromParent = true
        var merges = MergeWatch(view)
        defer { merges.stop() }

        let background = container.newBackgroundContext()
        let id = try await background.perform {
            let b = Book(context: background)
            b.title = "From background"
            try background.save()
            return b.objectID
        }
        let insert = try #require(await merges.next())
        #expect(insert.inserted == [id])
        #expect(insert.onQueue)
        let book = try #require(view.registeredObject(for: id) as? Book)
        #expect(book.title == "From background")

        try await background.perform {
            try #require(background.registeredObject(for: id) as? Book).title = "Renamed"
            try background.save()
        }
        let update = try #require(await merges.next())
        #expect(update.updated == [id])
        #expect(update.onQueue)
        #expect(book.title == "Renamed")
        #expect(!view.hasChanges)

        try await background.perform {
            background.delete(try #require(background.registeredObject(for: id)))
            try background.save()
        }
        let delete = try #require(await merges.next())
        #expect(delete.deleted == [id])
        #expect(view.registeredObject(for: id) == nil)
    }

    @Test func backgroundContextMergesViewContextSaves() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let background = container.newBackgroundContext()
        background.performAndWait { background.automaticallyMergesChangesFromParent = true }
        var merges = MergeWatch(background)
        defer { merges.stop() }
        let id = try await Task { @MainActor in
            let b = Book(context: view)
            b.title = "From main"
            try view.save()
            return b.objectID
        }.value
        let insert = try #require(await merges.next())
        #expect(insert.inserted == [id])
        #expect(insert.onQueue)
        #expect(try read(id, in: background).title == "From main")
    }

    // MARK: Explicit merging

    @Test func mergeChangesFromContextDidSave() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()  // does not merge automatically
        let id = try saveBook("Before", in: a)
        _ = try read(id, in: b)

        var merges = MergeWatch(b)
        defer { merges.stop() }
        // Core Data's pattern: the did-save observer (on A's queue) merges into B on B's queue.
        let token = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextDidSave, object: a, queue: nil
        ) { note in
            b.performAndWait { b.mergeChanges(fromContextDidSave: note) }
        }
        defer { NotificationCenter.default.removeObserver(token) }

        let newID: NSManagedObjectID = try a.performAndWait {
            try #require(try a.existingObject(with: id) as? Book).title = "After"
            let other = Book(context: a)
            other.title = "New"
            try a.save()
            return other.objectID
        }
        // The observer merged synchronously, before save() returned.
        let event = try #require(await merges.next())
        #expect(event.updated == [id])
        #expect(event.inserted == [newID])
        #expect(event.onQueue)
        let state = try b.performAndWait {
            let book = try #require(b.registeredObject(for: id) as? Book)
            return (book.title, b.registeredObject(for: newID) != nil, b.hasChanges)
        }
        #expect(state.0 == "After")
        #expect(state.1)
        #expect(state.2 == false)
    }

    @Test func mergeChangesFromContextDidSaveObjectIDsNotification() async throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let id = try saveBook("Before", in: a)
        _ = try read(id, in: b)
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didSaveObjectIDsNotification, object: a, queue: nil
        ) { note in
            b.performAndWait { b.mergeChanges(fromContextDidSave: note) }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try a.performAndWait {
            let book = try #require(try a.existingObject(with: id) as? Book)
            book.title = "After"
            try a.save()
            a.delete(book)
            try a.save()
        }
        let gone = b.performAndWait { b.registeredObject(for: id) == nil }
        #expect(gone)
    }

    @Test func mergeChangesFromRemoteContextSaveWithObjectIDs() async throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let c1 = container.newBackgroundContext()
        let c2 = container.newBackgroundContext()
        let id = try saveBook("Old", in: writer)
        _ = try read(id, in: c1)
        _ = try read(id, in: c2)
        var merges1 = MergeWatch(c1)
        defer { merges1.stop() }

        // The store changes behind c1's and c2's backs.
        let newID: NSManagedObjectID = try writer.performAndWait {
            try #require(try writer.existingObject(with: id) as? Book).title = "New"
            let other = Book(context: writer)
            other.title = "Other"
            try writer.save()
            return other.objectID
        }
        #expect(try c1.performAndWait { try #require(c1.registeredObject(for: id) as? Book).title } == "Old")

        NSManagedObjectContext.mergeChanges(
            fromRemoteContextSave: [NSUpdatedObjectIDsKey: [id], NSInsertedObjectIDsKey: [newID]], into: [c1, c2])
        // The call waits for each context, so the merge is already visible.
        for c in [c1, c2] {
            let state = try c.performAndWait {
                (try #require(c.registeredObject(for: id) as? Book).title, c.registeredObject(for: newID) != nil)
            }
            #expect(state.0 == "New")
            #expect(state.1)
        }
        let event = try #require(await merges1.next())
        #expect(event.updated == [id])
        #expect(event.inserted == [newID])
        #expect(event.onQueue)

        try writer.performAndWait {
            writer.delete(try writer.existingObject(with: id))
            try writer.save()
        }
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSDeletedObjectIDsKey: [id]], into: [c1, c2])
        for c in [c1, c2] {
            #expect(c.performAndWait { c.registeredObject(for: id) } == nil)
        }
        let delete = try #require(await merges1.next())
        #expect(delete.deleted == [id])
    }

    @Test func mergeChangesFromRemoteContextSaveWithURIsAndSets() throws {
        let container = try Fixtures.container()
        let writer = container.newBackgroundContext()
        let reader = container.newBackgroundContext()
        let id = try saveBook("Old", in: writer)
        _ = try read(id, in: reader)
        try writer.performAndWait {
            try #require(try writer.existingObject(with: id) as? Book).title = "By URI"
            try writer.save()
        }
        NSManagedObjectContext.mergeChanges(
            fromRemoteContextSave: [NSUpdatedObjectsKey: [id.uriRepresentation()]], into: [reader])
        #expect(try reader.performAndWait { try #require(reader.registeredObject(for: id) as? Book).title } == "By URI")

        try writer.performAndWait {
            try #require(try writer.existingObject(with: id) as? Book).title = "By set"
            try writer.save()
        }
        NSManagedObjectContext.mergeChanges(
            fromRemoteContextSave: [NSUpdatedObjectIDsKey: Set([id])], into: [reader])
        #expect(try reader.performAndWait { try #require(reader.registeredObject(for: id) as? Book).title } == "By set")
    }

    @Test func mergeChangesFromRemoteContextSaveIntoTheViewContextFromABackgroundThread() async throws {
        let container = try Fixtures.container()
        let view = container.viewContext
        let writer = container.newBackgroundContext()
        let id = try saveBook("Old", in: writer)
        _ = try read(id, in: view)
        var merges = MergeWatch(view)
        defer { merges.stop() }
        try writer.performAndWait {
            try #require(try writer.existingObject(with: id) as? Book).title = "New"
            try writer.save()
        }
        await Task.detached {
            NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSUpdatedObjectIDsKey: [id]], into: [view])
        }.value
        let event = try #require(await merges.next())
        #expect(event.updated == [id])
        #expect(event.onQueue)
        #expect(try read(id, in: view).title == "New")
    }
}
