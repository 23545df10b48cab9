import Foundation

// Child (nested) contexts: a context whose store is another context.
extension NSManagedObjectContext {
    /// The context this one saves into, or nil for a context connected to a coordinator.
    ///
    /// A child context reads its parent's current state (the parent's unsaved inserts,
    /// changes and deletions included) and its ``save()`` pushes its changes into the parent,
    /// synchronously on the parent's queue, as unsaved changes there; saving the parent (up
    /// to the root, the context with a coordinator) writes them to the store. Objects the
    /// root has not saved keep temporary IDs in the parent. Parent and child may be of
    /// either concurrency type. ``persistentStoreCoordinator`` of a child reads the root's.
    ///
    /// Set it once, before the context is used, from any thread; a context has a parent or
    /// a coordinator, never both. Traps when a coordinator or parent is already set, when
    /// the new parent is `nil`, this context, or one of its children, or when the parent's
    /// chain has no coordinator.
    public var parent: NSManagedObjectContext? {
        get { coordinatorBox.withLock { $0 }?.parentContextStore?.parent }
        set {
            guard let newValue else {
                programmerError("PersistenceKit: context '\(debugName)' — parent cannot be set to nil. Rule: make a new context.")
            }
            var ancestor: NSManagedObjectContext? = newValue
            while let a = ancestor {
                programmerCheck(
                    a !== self,
                    "PersistenceKit: context '\(debugName)' cannot be its own parent or an ancestor of its parent.")
                ancestor = a.parent
            }
            guard let root = newValue.persistentStoreCoordinator else {
                programmerError(
                    "PersistenceKit: the parent context '\(newValue.debugName)' has no persistentStoreCoordinator. Rule: "
                        + "the root of a chain of contexts needs a coordinator.")
            }
            let store = ParentContextStore(parent: newValue, rootCoordinator: root)
            store.child.withLock { $0 = WeakContext(context: self) }
            let access = NSPersistentStoreCoordinator(managedObjectModel: root.managedObjectModel)
            do {
                try access.addPersistentStore(store)
            } catch {
                programmerError("PersistenceKit: context '\(debugName)' could not use its parent: \(error)")
            }
            persistentStoreCoordinator = access  // traps when the context has a coordinator or parent
        }
    }

    /// Core Data's name for ``parent``: the same property.
    public var parentContext: NSManagedObjectContext? {
        get { parent }
        set { parent = newValue }
    }

    /// Turns the forwarding of this context's saves and merges to `child` (one of its
    /// children with ``automaticallyMergesChangesFromParent``) on or off. Any thread.
    func setForwarding(to child: NSManagedObjectContext, _ on: Bool) {
        let live = ChildMergeList.table.withLock { table -> [NSManagedObjectContext] in
            let live = (table[ObjectIdentifier(self)] ?? []).compactMap(\.context)
            let kept = live.filter { $0 !== child } + (on ? [child] : [])
            table[ObjectIdentifier(self)] = kept.isEmpty ? nil : kept.map { WeakContext(context: $0) }
            return live
        }
        withExtendedLifetime(live) {}  // released after the lock (a release may free a context)
    }

    /// Hands what this context saved or merged, or what a child pushed into it, to each of
    /// its children that merges automatically (but `origin`), to merge on its own queue.
    /// The rows are left out: a child reads them through its parent, at its own versions.
    func forwardToMergingChildren(_ changes: SavedChanges, except origin: NSManagedObjectContext?) {
        let targets = ChildMergeList.table.withLock { table -> [NSManagedObjectContext] in
            guard let list = table[ObjectIdentifier(self)] else { return [] }
            let live = list.compactMap(\.context)
            table[ObjectIdentifier(self)] = live.isEmpty ? nil : live.map { WeakContext(context: $0) }
            return live
        }
        guard !targets.isEmpty else { return }
        let forwarded = SavedChanges(inserted: changes.inserted, updated: changes.updated, deleted: changes.deleted)
        for child in targets where child !== origin {
            child.perform { child.mergeSavedChanges(forwarded) }
        }
    }
}

/// The children that merge their parent's changes automatically, by parent.
///
/// Keyed by the parent's identity: a live child holds its parent (through its
/// `ParentContextStore`), so while an entry holds a live child its key names that parent,
/// and an entry left by a freed parent holds only dead references (pruned on use).
enum ChildMergeList {
    static let table = Lock<[ObjectIdentifier: [WeakContext]]>([:])
}

extension NSPersistentStoreCoordinator {
    /// The parent-context store of a child context's coordinator, or nil.
    var parentContextStore: ParentContextStore? { persistentStores.first as? ParentContextStore }
}
