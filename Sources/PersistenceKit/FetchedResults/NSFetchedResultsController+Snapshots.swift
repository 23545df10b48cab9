import Foundation

extension NSFetchedResultsController {
    /// A new asynchronous sequence of the controller's results as
    /// ``FetchedResultsSnapshot``s: the current results first (when ``performFetch()`` has
    /// run), then the results after each ``performFetch()`` and after each change reported
    /// to the delegate (yielded after `controllerDidChangeContent`), and after a save that
    /// gave inserted objects their permanent IDs.
    ///
    /// Buffering: only the newest snapshot waits. A consumer that falls behind skips
    /// straight to the latest results and never sees an older snapshot after a newer one;
    /// use ``snapshots(bufferingPolicy:)`` to keep every one. The sequence ends when the
    /// controller is deallocated; each call makes a stream of its own.
    ///
    /// Call it on the context's queue; the stream itself may be read anywhere.
    public var snapshots: AsyncStream<FetchedResultsSnapshot> { snapshots(bufferingPolicy: .bufferingNewest(1)) }

    /// As ``snapshots``, with the buffering policy given: `.unbounded` yields every
    /// snapshot, however far the consumer falls behind.
    ///
    /// Call it on the context's queue; the stream itself may be read anywhere.
    public func snapshots(
        bufferingPolicy: AsyncStream<FetchedResultsSnapshot>.Continuation.BufferingPolicy
    ) -> AsyncStream<FetchedResultsSnapshot> {
        let (stream, continuation) = AsyncStream.makeStream(of: FetchedResultsSnapshot.self, bufferingPolicy: bufferingPolicy)
        let key = UUID()
        streams.withLock { $0[key] = continuation }
        continuation.onTermination = { [streams] _ in
            streams.withLock { _ = $0.removeValue(forKey: key) }
        }
        if let results { continuation.yield(FetchedResultsSnapshot(of: results)) }
        return stream
    }

    /// The current results as a snapshot; `nil` before ``performFetch()``. Call it on the
    /// context's queue.
    public var snapshot: FetchedResultsSnapshot? { results.map(FetchedResultsSnapshot.init(of:)) }

    /// Yields the current results to every stream.
    func publishSnapshot() {
        guard let results else { return }
        let snapshot = FetchedResultsSnapshot(of: results)
        lastSnapshot = snapshot
        for c in streams.withLock({ Array($0.values) }) { c.yield(snapshot) }
    }
}

extension FetchedResultsSnapshot {
    /// The snapshot of a controller's sections.
    init(of sections: [FetchedResultsSection]) {
        self.init(sections: sections.map { Section(name: $0.name, objectIDs: $0.members.map(\.objectID)) })
    }
}
