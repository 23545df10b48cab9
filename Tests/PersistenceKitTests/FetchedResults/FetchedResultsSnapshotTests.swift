import Foundation
import Testing
@testable import PersistenceKit

// The snapshot sequence: the current results first, one snapshot per change, newest-only
// buffering, permanent IDs after a save, and the end of the sequence with the controller.

@Suite struct FetchedResultsSnapshotTests {
    @Test func yieldsTheResultsAndEachChange() async throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        let recorder = FRRecorder()
        let (controller, stream, ids) = try context.performAndWait {
            let a = FRFixtures.note("a", "alpha", rank: 1, in: context)
            let b = FRFixtures.note("b", "beta", rank: 1, in: context)
            try context.save()
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            return (controller, controller.snapshots, [a.objectID, b.objectID])
        }
        var snapshots = stream.makeAsyncIterator()
        let first = try #require(await snapshots.next())
        #expect(first.sectionIdentifiers == ["alpha", "beta"])
        #expect(first.itemIdentifiers == ids)
        #expect(first.itemIdentifiers(inSection: "beta") == [ids[1]])

        let c = try context.performAndWait {
            let c = FRFixtures.note("c", "alpha", rank: 0, in: context)
            try context.save()
            return c.objectID
        }
        let second = try #require(await snapshots.next())
        #expect(second.sections == [.init(name: "alpha", objectIDs: [c, ids[0]]), .init(name: "beta", objectIDs: [ids[1]])])
        #expect(second.numberOfItems == 3)
        #expect(!c.isTemporaryID)
        context.performAndWait { #expect(controller.snapshot == second) }
    }

    @Test func aSlowConsumerGetsOnlyTheNewestSnapshot() async throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        let (controller, stream) = try context.performAndWait {
            let controller = try FRFixtures.controller(in: context, keyPath: nil, recorder: FRRecorder())
            let stream = controller.snapshots
            for (i, title) in ["x", "y", "z"].enumerated() {
                FRFixtures.note(title, "c", rank: Int64(i), in: context)
                context.processPendingChanges()
            }
            return (controller, stream)
        }
        var snapshots = stream.makeAsyncIterator()
        let newest = try #require(await snapshots.next())
        #expect(newest.numberOfItems == 3)
        _ = controller
    }

    @Test func anUnboundedStreamKeepsEverySnapshot() async throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        let (controller, stream) = try context.performAndWait {
            let controller = try FRFixtures.controller(in: context, keyPath: nil, recorder: FRRecorder())
            let stream = controller.snapshots(bufferingPolicy: .unbounded)
            for (i, title) in ["x", "y"].enumerated() {
                FRFixtures.note(title, "c", rank: Int64(i), in: context)
                context.processPendingChanges()
            }
            return (controller, stream)
        }
        var counts: [Int] = []
        for await snapshot in stream.prefix(3) { counts.append(snapshot.numberOfItems) }
        #expect(counts == [0, 1, 2])
        _ = controller
    }

    @Test func aSaveYieldsThePermanentIDs() async throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        let stream = try context.performAndWait {
            let controller = try FRFixtures.controller(in: context, keyPath: nil, recorder: FRRecorder())
            let stream = controller.snapshots(bufferingPolicy: .unbounded)
            FRFixtures.note("n", "c", rank: 1, in: context)
            context.processPendingChanges()
            try context.save()
            return stream  // the controller goes away here, which ends the stream
        }
        var seen: [FetchedResultsSnapshot] = []
        for await snapshot in stream { seen.append(snapshot) }
        #expect(seen.map(\.numberOfItems) == [0, 1, 1])
        #expect(seen[1].itemIdentifiers.first?.isTemporaryID == true)
        #expect(seen[2].itemIdentifiers.first?.isTemporaryID == false)
    }
}
