import Foundation
import Testing
@testable import PersistenceKit

// Change reports: each test records the delegate calls one change makes and asserts them in
// order. Notes are sectioned by category, sorted by category then rank; the results are
// written as "section:titles".

@Suite struct FetchedResultsChangeTests {
    /// Saves alpha:a1,a2 beta:b1 gamma:g1 (ranks 1, 2, 1, 1) and returns a context holding them.
    private static func seeded(_ container: NSPersistentContainer) throws -> NSManagedObjectContext {
        let context = container.newBackgroundContext()
        try context.performAndWait {
            FRFixtures.note("a1", "alpha", rank: 1, in: context)
            FRFixtures.note("a2", "alpha", rank: 2, in: context)
            FRFixtures.note("b1", "beta", rank: 1, in: context)
            FRFixtures.note("g1", "gamma", rank: 1, in: context)
            try context.save()
        }
        return context
    }

    private static func note(_ title: String, of controller: NSFetchedResultsController<FRNote>) throws -> FRNote {
        try #require(controller.fetchedObjects?.first { $0.title == title })
    }

    @Test func insertsIntoASectionAndANewSection() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let recorder = FRRecorder()
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            FRFixtures.note("a0", "alpha", rank: 0, in: context)
            FRFixtures.note("d1", "delta", rank: 1, in: context)
            context.processPendingChanges()
            #expect(recorder.take() == ["will", "section insert 2 delta", "insert 0.0 a0", "insert 2.0 d1", "did"])
            #expect(controller.layout == ["alpha:a0,a1,a2", "beta:b1", "delta:d1", "gamma:g1"])
        }
    }

    @Test func deletingTheLastObjectOfASectionDeletesTheSection() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let recorder = FRRecorder()
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            context.delete(try Self.note("b1", of: controller))
            context.delete(try Self.note("a2", of: controller))
            context.processPendingChanges()
            #expect(recorder.take() == ["will", "section delete 1 beta", "delete 0.1", "delete 1.0", "did"])
            #expect(controller.layout == ["alpha:a1", "gamma:g1"])
        }
    }

    @Test func anUpdateThatChangesSectionIsAMove() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let recorder = FRRecorder()
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            try Self.note("a1", of: controller).category = "gamma"
            try Self.note("b1", of: controller).category = "zeta"
            context.processPendingChanges()
            #expect(
                recorder.take() == [
                    "will", "section delete 1 beta", "section insert 2 zeta", "move 0.0 > 1.0 a1", "move 1.0 > 2.0 b1", "did",
                ])
            #expect(controller.layout == ["alpha:a2", "gamma:a1,g1", "zeta:b1"])
        }
    }

    @Test func aChangeOfSortPositionIsAMoveAndOtherChangesAreUpdates() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let recorder = FRRecorder()
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            try Self.note("a1", of: controller).rank = 3
            try Self.note("g1", of: controller).title = "g1*"
            context.processPendingChanges()
            #expect(recorder.take() == ["will", "move 0.0 > 0.1 a1", "update 2.0 > 2.0 g1*", "did"])
            #expect(controller.layout == ["alpha:a2,a1", "beta:b1", "gamma:g1*"])
            // A value changed to the same sort position is an update, not a move.
            try Self.note("a2", of: controller).rank = 0
            context.processPendingChanges()
            #expect(recorder.take() == ["will", "update 0.0 > 0.0 a2", "did"])
        }
    }

    @Test func updatesOutOfAndIntoThePredicateAreDeletesAndInserts() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let outside = FRFixtures.note("out", "beta", rank: 500, in: context)
            try context.save()
            let recorder = FRRecorder()
            let request = FRFixtures.request(predicate: #Predicate<FRNote> { $0.rank < 100 })
            let controller = try FRFixtures.controller(request, in: context, recorder: recorder)
            #expect(controller.layout == ["alpha:a1,a2", "beta:b1", "gamma:g1"])
            try Self.note("a2", of: controller).rank = 200
            outside.rank = 0
            context.processPendingChanges()
            #expect(recorder.take() == ["will", "delete 0.1", "insert 1.0 out", "did"])
            #expect(controller.layout == ["alpha:a1", "beta:out,b1", "gamma:g1"])
            // Changes to objects that stay outside report nothing.
            outside.rank = 1
            context.processPendingChanges()
            #expect(recorder.take() == ["will", "update 1.0 > 1.0 out", "did"])
            let a2 = try #require(try context.fetch(FRNote.fetchRequest()).first { $0.title == "a2" })
            a2.title = "a2 still outside"
            context.processPendingChanges()
            #expect(recorder.take().isEmpty)
        }
    }

    @Test func aSaveReportsItsPendingChanges() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let recorder = FRRecorder()
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            FRFixtures.note("b2", "beta", rank: 2, in: context)
            try context.save()
            #expect(recorder.take() == ["will", "insert 1.1 b2", "did"])
            #expect(controller.layout == ["alpha:a1,a2", "beta:b1,b2", "gamma:g1"])
        }
    }

    @Test func aMergedSaveOfAnotherContextIsReported() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        let recorder = FRRecorder()
        let controller = try context.performAndWait { try FRFixtures.controller(in: context, recorder: recorder) }
        let other = container.newBackgroundContext()
        let box = NotificationBox()
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: other, queue: nil) {
            box.set($0)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try other.performAndWait {
            let notes = try other.fetch(FRNote.fetchRequest())
            for n in notes {
                switch n.title {
                case "a1":  // moves to beta, after b1
                    n.category = "beta"
                    n.rank = 5
                case "g1": other.delete(n)  // empties gamma
                case "b1": n.title = "b1*"
                default: break
                }
            }
            FRFixtures.note("d1", "delta", rank: 1, in: other)
            try other.save()
        }
        let saved = try #require(box.get())
        context.performAndWait {
            context.mergeChanges(fromContextDidSave: saved)
            #expect(
                recorder.take() == [
                    "will", "section delete 2 gamma", "section insert 2 delta", "delete 2.0", "insert 2.0 d1", "move 0.0 > 1.1 a1",
                    "update 1.0 > 1.0 b1*", "did",
                ])
            #expect(controller.layout == ["alpha:a2", "beta:b1*,a1", "delta:d1"])
        }
    }

    @Test func anAutomaticMergeIsReported() async throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        let recorder = FRRecorder()
        let controller = try context.performAndWait {
            context.automaticallyMergesChangesFromParent = true
            return try FRFixtures.controller(in: context, recorder: recorder)
        }
        let other = container.newBackgroundContext()
        let (merges, merged) = AsyncStream<Void>.makeStream()
        let token = NotificationCenter.default.addObserver(
            forName: NSManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, queue: nil
        ) { _ in merged.yield() }
        defer { NotificationCenter.default.removeObserver(token) }
        try other.performAndWait {
            FRFixtures.note("a0", "alpha", rank: 0, in: other)
            try other.save()
        }
        var waiting = merges.makeAsyncIterator()
        _ = await waiting.next()
        context.performAndWait {
            #expect(recorder.take() == ["will", "insert 0.0 a0", "did"])
            #expect(controller.layout == ["alpha:a0,a1,a2", "beta:b1", "gamma:g1"])
        }
    }

    @Test func aFetchLimitIsKeptAfterChanges() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let recorder = FRRecorder()
            let request = FRFixtures.request()
            request.fetchLimit = 2
            let controller = try FRFixtures.controller(request, in: context, keyPath: nil, recorder: recorder)
            #expect(controller.layout == [":a1,a2"])
            FRFixtures.note("a0", "alpha", rank: 0, in: context)
            context.processPendingChanges()
            #expect(recorder.take() == ["will", "delete 0.1", "insert 0.0 a0", "did"])
            #expect(controller.layout == [":a0,a1"])
            // A change outside the window reports nothing.
            try #require(try context.fetch(FRNote.fetchRequest()).first { $0.title == "g1" }).title = "g1*"
            context.processPendingChanges()
            #expect(recorder.take().isEmpty)
        }
    }

    @Test func aResetFetchesAgain() throws {
        let container = try FRFixtures.container()
        let context = try Self.seeded(container)
        try context.performAndWait {
            let recorder = FRRecorder()
            let controller = try FRFixtures.controller(in: context, keyPath: nil, recorder: recorder)
            FRFixtures.note("unsaved", "alpha", rank: 9, in: context)
            context.processPendingChanges()
            _ = recorder.take()
            context.reset()
            let lines = recorder.take()
            #expect(lines.first == "will" && lines.last == "did")
            #expect(lines.filter { $0.hasPrefix("delete") }.count == 5)
            #expect(lines.filter { $0.hasPrefix("insert") }.count == 4)
            #expect(controller.layout == [":a1,a2,b1,g1"])
        }
    }
}

/// Keeps a notification, across threads.
final class NotificationBox: @unchecked Sendable {
    // @unchecked Sendable: `note` is read and written only under `lock`.
    private let lock = NSLock()
    private var note: Notification?

    func set(_ n: Notification) { lock.withLock { note = n } }
    func get() -> Notification? { lock.withLock { note } }
}
