import Dispatch
import Foundation
import Testing
@testable import PersistenceKit

// Off-queue use of a context or its objects traps (queue checks are always on in debug
// builds), with a message that names the rule. Each case runs in a child process; the
// closures capture nothing and build their own containers.

private let violation = "PersistenceKit concurrency violation"

private func stderrText(_ result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

@Suite("Using a context off its queue traps") struct QueueDisciplineTests {
    @Test func readingHasChangesOffTheQueueTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try Fixtures.container().newBackgroundContext()
            _ = context.hasChanges
        }
        let text = stderrText(result)
        #expect(text.contains(violation))
        #expect(text.contains("hasChanges"))
        #expect(text.contains("may only be used inside its perform/performAndWait blocks"))
    }

    @Test func fetchingOffTheQueueTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try Fixtures.container().newBackgroundContext()
            _ = try? context.fetch(Book.fetchRequest())
        }
        let text = stderrText(result)
        #expect(text.contains(violation))
        #expect(text.contains("fetch"))
    }

    @Test func savingOffTheQueueTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try Fixtures.container().newBackgroundContext()
            try? context.save()
        }
        let text = stderrText(result)
        #expect(text.contains(violation))
        #expect(text.contains("save()"))
    }

    @Test func readingAnObjectsPropertyOffTheQueueTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try Fixtures.container().newBackgroundContext()
            context.name = "discipline-ctx"
            let book = context.performAndWait {
                let b = Book(context: context)
                b.title = "leaked"
                return b
            }
            _ = book.title  // off the queue
        }
        let text = stderrText(result)
        #expect(text.contains(violation))
        #expect(text.contains("discipline-ctx"))  // names the context
    }

    @Test func writingAnObjectsPropertyOffTheQueueTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try Fixtures.container().newBackgroundContext()
            let book = context.performAndWait { Book(context: context) }
            book.pages = 3  // off the queue
        }
        #expect(stderrText(result).contains(violation))
    }

    @Test func usingAContextInsideAnotherContextsPerformBlockTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let a = container.newBackgroundContext()
            let b = container.newBackgroundContext()
            a.performAndWait {
                _ = b.insertedObjects  // on A's queue, not B's
            }
        }
        let text = stderrText(result)
        #expect(text.contains(violation))
        #expect(text.contains("insertedObjects"))
    }

    /// As in Core Data, whose setters on queue-based contexts are thread-safe, a context's
    /// settings may be changed from any thread: configuring a new background context before
    /// its first `perform` is the usual pattern, and must not trap.
    @Test func settingsMayBeChangedFromAnyThread() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        context.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        context.automaticallyMergesChangesFromParent = true
        #expect(context.mergePolicy == NSMergeByPropertyObjectTrumpMergePolicy)
        #expect(context.automaticallyMergesChangesFromParent)
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            context.mergePolicy = i.isMultiple(of: 2) ? NSMergeByPropertyStoreTrumpMergePolicy : NSOverwriteMergePolicy
            context.automaticallyMergesChangesFromParent = true
            _ = context.mergePolicy
        }
        #expect([NSMergeByPropertyStoreTrumpMergePolicy, NSOverwriteMergePolicy].contains(context.mergePolicy))
        // The settings took effect: another context's save is merged here.
        let writer = container.newBackgroundContext()
        let id = try writer.performAndWait {
            let b = Book(context: writer)
            b.title = "first"
            try writer.save()
            return b.objectID
        }
        context.performAndWait { #expect((context.object(with: id) as? Book)?.title == "first") }
        try writer.performAndWait {
            (writer.object(with: id) as? Book)?.title = "second"
            try writer.save()
        }
        // The merge was queued on `context` before the save returned; this block runs after it.
        context.performAndWait { #expect((context.registeredObject(for: id) as? Book)?.title == "second") }
    }

    @Test func usingTheViewContextOffTheMainQueueTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let view = container.viewContext
            await Task.detached {
                _ = view.hasChanges  // a cooperative-pool thread, not the main queue
            }.value
        }
        let text = stderrText(result)
        #expect(text.contains(violation))
        #expect(text.contains("viewContext"))
        #expect(text.contains("main-queue context"))
    }

    @Test func usingAPrivateContextFromAPlainDispatchBlockTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try Fixtures.container().newBackgroundContext()
            DispatchQueue.global().sync {
                _ = context.registeredObjects
            }
        }
        #expect(stderrText(result).contains(violation))
    }

    /// The control: the same calls on the queue do not trap.
    @Test func theSameCallsOnTheQueueExitCleanly() async throws {
        await #expect(processExitsWith: .success) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                context.automaticallyMergesChangesFromParent = true
                let b = Book(context: context)
                b.title = "ok"
                _ = context.hasChanges
                _ = try context.fetch(Book.fetchRequest())
                try context.save()
                _ = b.title
            }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                context.perform {
                    _ = context.registeredObjects
                    c.resume()
                }
            }
            let view = container.viewContext
            await MainActor.run { _ = view.hasChanges }
        }
    }
}
