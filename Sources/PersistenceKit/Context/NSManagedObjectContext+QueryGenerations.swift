import Foundation

// Query generations. A pinned context reads through its generation's snapshot of the store
// (see `PersistentStore.makeQueryGenerationSnapshot()`) instead of the store: fetches,
// counts, faults, relationship faults and `existingObject(with:)` all ask `readStore(for:)`.
// Saves, batch requests and the checks a merge makes go to the store itself. The generation
// moves to the store's current state when the context saves, merges, refreshes all objects
// or resets, as in Core Data.
extension NSManagedObjectContext {
    /// The generation this context reads: nil when it is not pinned (it reads the store as
    /// it is at each fetch), else a token naming the pinned generation (never ``NSQueryGenerationToken/current``
    /// itself: pinning to current makes a token for that moment). Read on the context's queue.
    public var queryGenerationToken: NSQueryGenerationToken? {
        assertOnQueue("queryGenerationToken")
        return pinnedGeneration
    }

    /// Pins this context's reads to a generation of the store, or unpins it (`nil`).
    ///
    /// - ``NSQueryGenerationToken/current``: the store as it is now. After the context saves,
    ///   merges changes, refreshes all objects or resets, it is pinned again to the store as
    ///   it is then.
    /// - A token from another context's `queryGenerationToken`: that generation (same store).
    /// - `nil`: reads see the store as it is, as before pinning.
    ///
    /// Objects already registered keep their values; faults fired later read the generation.
    ///
    /// - Complexity: O(1) for the built-in stores: no row is copied (see
    ///   FileStore+QueryGenerations.swift for what a pinned generation costs the store's next
    ///   commit).
    /// - Throws: ``CoreDataError`` `.persistentStoreOperation` when the store cannot keep
    ///   generations (a custom store without snapshots, or a child context, whose reads go
    ///   to its parent), `.coreData` when the token belongs to another store or there is no
    ///   store.
    public func setQueryGenerationFrom(_ generation: NSQueryGenerationToken?) throws {
        assertOnQueue("setQueryGenerationFrom(_:)")
        guard let generation else {
            pinnedGeneration = nil
            return
        }
        if coordinator.parentContextStore != nil {
            throw CoreDataError(
                .persistentStoreOperation,
                "context '\(debugName)' is a child context: it reads its parent, which has no query generations; pin the "
                    + "root context instead.")
        }
        let store = try coordinator.primaryStore(for: "setQueryGenerationFrom(_:)")
        if generation === NSQueryGenerationToken.current {
            pinnedGeneration = NSQueryGenerationToken(snapshot: try store.makeQueryGenerationSnapshot(), storeIdentifier: store.identifier)
            return
        }
        guard generation.storeIdentifier == store.identifier, generation.snapshot != nil else {
            throw CoreDataError(
                .coreData,
                "context '\(debugName)' cannot pin \(generation): it is a generation of another store than this context's "
                    + "(\(store.identifier)). Use a token of a context of the same store, or .current.")
        }
        pinnedGeneration = generation
    }

    /// The store reads go to: the pinned generation's snapshot, or the coordinator's store.
    func readStore(for operation: String) throws -> any PersistentStore {
        if let snapshot = pinnedGeneration?.snapshot { return snapshot }
        return try coordinator.primaryStore(for: operation)
    }

    /// Moves a pinned context to the store's current generation (after a save, a merge, a
    /// refresh of all objects or a reset). Does nothing for a context that is not pinned; a
    /// store that fails to make a snapshot leaves the context unpinned.
    func advanceQueryGeneration() {
        guard pinnedGeneration != nil else { return }
        guard let store = try? coordinator.primaryStore(for: "advancing a query generation"),
            let snapshot = try? store.makeQueryGenerationSnapshot()
        else {
            pinnedGeneration = nil
            return
        }
        pinnedGeneration = NSQueryGenerationToken(snapshot: snapshot, storeIdentifier: store.identifier)
    }
}
