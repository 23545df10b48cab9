import Foundation
import ModelActorKit
@testable import PersistenceKit
import Synchronization
import TestSupport
import Testing

/// The last release of a context or a store can run its deinit on any thread, inside any
/// lock that thread holds: releasing contexts and stores while other threads use the same
/// coordinator or store table never deadlocks. Each test watches its threads with a timeout
/// instead of hanging the run.
@Suite("Contexts and stores released on other threads") struct ConcurrentReleaseTests {
    /// A context's deinit removes it from the coordinator's merge observers under a lock;
    /// walking that list retained other contexts, and the last release of one inside the
    /// lock ran its deinit there, which took the lock again.
    @Test func autoMergingContextsReleasedOnTwoThreadsDoNotDeadlock() throws {
        let container = try ActorFixtures.container()
        let progress = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread.detachNewThread {
                for _ in 0..<5_000 {
                    let c = container.newBackgroundContext()
                    c.performAndWait { c.automaticallyMergesChangesFromParent = true }
                    progress.add(1, ordering: .relaxed)
                }
                done.signal()
            }
        }
        let finished = done.wait(timeout: .now() + 120) == .success && done.wait(timeout: .now() + 30) == .success
        #expect(finished, "deadlocked after \(progress.load(ordering: .relaxed)) of 10000 contexts")
    }

    /// The same through turning merging on and off on one context while another thread
    /// drops contexts.
    @Test func togglingMergesWhileContextsAreReleasedDoesNotDeadlock() throws {
        let container = try ActorFixtures.container()
        let stop = Atomic<Bool>(false)
        let progress = Atomic<Int>(0)
        let bothDone = DispatchSemaphore(value: 0)
        let toggler = container.newBackgroundContext()
        Thread.detachNewThread {
            while !stop.load(ordering: .relaxed) {
                toggler.performAndWait {
                    toggler.automaticallyMergesChangesFromParent = true
                    toggler.automaticallyMergesChangesFromParent = false
                }
            }
            bothDone.signal()
        }
        Thread.detachNewThread {
            for _ in 0..<10_000 {
                let c = container.newBackgroundContext()
                c.performAndWait { c.automaticallyMergesChangesFromParent = true }
                progress.add(1, ordering: .relaxed)
            }
            stop.store(true, ordering: .relaxed)
            bothDone.signal()
        }
        let finished = bothDone.wait(timeout: .now() + 120) == .success && bothDone.wait(timeout: .now() + 30) == .success
        stop.store(true, ordering: .relaxed)
        #expect(finished, "deadlocked after \(progress.load(ordering: .relaxed)) of 10000 contexts")
    }

    /// Opening a store found in the process's table of open stores retained it; when the
    /// open then threw (another durability) and that was the last reference, the store's
    /// close ran inside the table's lock and took it again.
    @Test func openingAStoreAnotherThreadDropsDoesNotDeadlock() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("registry-\(UUID().uuidString).store")
        defer { for suffix in ["", "-lock", "-compact", "-new"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
        let progress = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for durability in [FileStore.Durability.full, .normal] {
            Thread.detachNewThread {
                for _ in 0..<3_000 {
                    _ = try? FileStore.open(at: url, model: model, options: .init(durability: durability))
                    progress.add(1, ordering: .relaxed)
                }
                done.signal()
            }
        }
        let finished = done.wait(timeout: .now() + 120) == .success && done.wait(timeout: .now() + 30) == .success
        #expect(finished, "deadlocked after \(progress.load(ordering: .relaxed)) of 6000 opens")
    }
}
