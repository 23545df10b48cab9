import Foundation
import Testing
@testable import PersistenceKit

final class LTNode: NSManagedObject {
    @Attribute var value: Int64 = 0
    @Relationship(inverse: "previous") var next: LTNode?
    @Relationship(inverse: "next") var previous: LTNode?
}

/// Records from its deinit whether it still had a context; the first one freed keeps every
/// other one still alive (user code in a deinit, through weak references).
final class LTWatched: NSManagedObject {
    @Attribute var value: Int64 = 0
    /// Not a managed property.
    var watch: Watch?

    final class Weak {
        weak var object: LTWatched?
        init(_ object: LTWatched) { self.object = object }
    }

    final class Watch: Sendable {
        struct State {
            var weak: [Weak] = []
            var contextSeenInDeinit: [Bool] = []
            var rescued: [LTWatched] = []
        }
        let state = Lock(State())
    }

    deinit {
        guard let watch else { return }
        let hadContext = owningContext != nil
        let others = watch.state.withLock { $0.rescued.isEmpty ? $0.weak.compactMap(\.object) : [] }
        watch.state.withLock { state in
            state.contextSeenInDeinit.append(hadContext)
            state.rescued += others.filter { $0 !== self }
        }
    }
}

/// Records what its context looked like from inside `didSave()`.
final class LTHookNode: NSManagedObject {
    @Attribute var value: Int64 = 0
    static let contextSeenInDidSave = Lock<[Int64: Bool]>([:])
    override func didSave() {
        super.didSave()
        let key = value, seen = managedObjectContext != nil
        LTHookNode.contextSeenInDidSave.withLock { $0[key] = seen }
    }
}

/// Inserts another object while its own insert is validated (as an audit entry might).
final class LTSpawner: NSManagedObject {
    @Attribute var name: String = ""
    override func validateForInsert() throws {
        try super.validateForInsert()
        if name == "parent", let context = managedObjectContext {
            LTSpawner(context: context).name = "child"
        }
    }
}

@Suite("Objects and the lifetime of their context") struct ContextLifetimeTests {
    static func container(_ classes: [NSManagedObject.Type] = [LTNode.self]) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(
            name: "lifetime", managedObjectModel: try NSManagedObjectModel(managedObjectClasses: classes))
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// Related objects hold each other; releasing a context must free them (no leak) and must
    /// not recurse down a long chain (no stack overflow).
    @Test func releasingAContextFreesALongChainOfRelatedObjects() throws {
        let container = try Self.container()
        weak var first: LTNode?
        do {
            let context = container.newBackgroundContext()
            try context.performAndWait {
                var previous: LTNode?
                for i in 0..<50_000 {
                    let node = LTNode(context: context)
                    node.value = Int64(i)
                    node.previous = previous
                    if previous == nil { first = node }
                    previous = node
                }
                try context.save()
            }
            #expect(first != nil)
        }
        #expect(first == nil, "objects of a released context must be freed")
    }

    /// Freeing a context skips invalidating the fetched objects nothing else holds (they go
    /// with it); one a caller kept, and one whose values were loaded into slots, are still
    /// invalidated, so that neither keeps a link to the freed context.
    @Test func fetchedObjectsAreFreedOrInvalidatedWithTheirContext() throws {
        let container = try Self.container()
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            for i in 0..<20 { LTNode(context: writer).value = Int64(i) }
            try writer.save()
        }
        weak var unheld: LTNode?
        var kept: LTNode?
        var loaded: LTNode?
        do {
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let nodes = try context.fetch(LTNode.fetchRequest()).sorted { $0.value < $1.value }
                #expect(nodes.allSatisfy { $0.valueStorage != .slots })
                unheld = nodes[0]
                kept = nodes[1]
                _ = nodes[2].next  // a relationship read loads the values into slots
                #expect(nodes[2].valueStorage == .slots)
                loaded = nodes[2]
            }
        }
        #expect(unheld == nil)
        #expect(kept?.flags.contains(.invalidated) == true)
        #expect(loaded?.flags.contains(.invalidated) == true)
    }

    /// A subclass's deinit, run while a context is freed, sees its object without a context;
    /// one it keeps alive (through a weak reference) is invalidated, with no link left to the
    /// freed context that touching it would follow.
    @Test func objectsFreedWithTheirContextHaveNoLinkToItInDeinit() throws {
        let container = try Self.container([LTWatched.self])
        let writer = container.newBackgroundContext()
        try writer.performAndWait {
            for i in 0..<20 { LTWatched(context: writer).value = Int64(i) }
            try writer.save()
        }
        let watch = LTWatched.Watch()
        do {
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let objects = try context.fetch(LTWatched.fetchRequest())
                for o in objects { o.watch = watch }
                watch.state.withLock { $0.weak = objects.map(LTWatched.Weak.init) }
            }
        }
        let (seen, rescued) = watch.state.withLock { ($0.contextSeenInDeinit, $0.rescued) }
        #expect(seen.count + rescued.count == 20 && !seen.isEmpty)
        #expect(!seen.contains(true))
        #expect(!rescued.isEmpty)
        #expect(rescued.allSatisfy { $0.flags.contains(.invalidated) && $0.owningContext == nil })
        for o in rescued { o.watch = nil }  // they hold the watch that holds them
        watch.state.withLock { $0.rescued = [] }
    }

    @Test func anObjectKeptAfterItsContextIsGoneTraps() async {
        await #expect(processExitsWith: .failure) {
            let container = try ContextLifetimeTests.container()
            var kept: LTNode?
            do {
                let context = container.newBackgroundContext()
                context.performAndWait { kept = LTNode(context: context) }
            }
            _ = kept?.value
        }
    }
}

/// An object refers to its context without retaining it (`NSManagedObject.storedContext`,
/// `unowned(unsafe)`): only objects in the context's registry may hold the reference, so that
/// the context's deinit can clear it. Each path here must keep that rule.
@Suite("An object's reference to its context") struct ContextLinkTests {
    /// Deleted objects stay in the registry until after `didSave()`, so a hook reading the
    /// context passes the registry check (and the reference does not outlive the registration).
    /// New objects are kept in the context's insertion list, not its ID registry, until they
    /// have permanent IDs: freeing the context must still clear their link to it.
    @Test func insertedObjectsLoseTheirContextWhenItIsFreed() throws {
        let container = try ContextLifetimeTests.container()
        var kept: [LTNode] = []
        do {
            let context = container.newBackgroundContext()
            context.performAndWait {
                kept.append(LTNode(context: context))  // its ID is never read
                let read = LTNode(context: context)
                _ = read.objectID
                kept.append(read)
            }
            #expect(kept.allSatisfy { $0.managedObjectContext === context })
        }
        for o in kept { #expect(o.managedObjectContext == nil) }
    }

    /// Objects inserted while a save validates are not dropped with the insertion list: they
    /// are validated and saved by that same save (as are changes and deletions the hooks
    /// make), never left untracked with a link to the context that would dangle once it is
    /// freed; freeing the context still clears their link to it.
    @Test func objectsInsertedWhileASaveValidatesAreSavedByIt() throws {
        let container = try ContextLifetimeTests.container([LTSpawner.self])
        var child: LTSpawner?
        do {
            let context = container.newBackgroundContext()
            try context.performAndWait {
                LTSpawner(context: context).name = "parent"
                try context.save()
                #expect(context.insertedObjects.isEmpty && !context.hasChanges)
                child = context.registeredObjects.lazy.compactMap { $0 as? LTSpawner }.first { $0.name == "child" }
                #expect(child?.objectID.isTemporaryID == false, "saved, with a permanent ID")
                #expect(child?.isInserted == false)
            }
            #expect(child?.managedObjectContext === context)
        }
        #expect(child?.managedObjectContext == nil, "freeing the context cleared the link")

        let context = container.newBackgroundContext()
        try context.performAndWait {
            LTSpawner(context: context).name = "parent"
            try context.save()
            #expect(context.insertedObjects.isEmpty)
            let names = try context.fetch(LTSpawner.fetchRequest()).map(\.name).sorted()
            // Each context's parent and its child.
            #expect(names == ["child", "child", "parent", "parent"])
        }
    }

    @Test func aDeletedObjectStillHasItsContextInDidSaveAndLosesItAfter() throws {
        let container = try ContextLifetimeTests.container([LTHookNode.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let node = LTHookNode(context: context)
            node.value = 41
            try context.save()
            #expect(LTHookNode.contextSeenInDidSave.withLock { $0[41] } == true)
            context.delete(node)
            node.value = 42
            try context.save()
            #expect(LTHookNode.contextSeenInDidSave.withLock { $0[42] } == true)
            #expect(node.managedObjectContext == nil)
        }
    }

    /// An object deleted before any save is detached but keeps its ID; if the ID was made
    /// permanent and another object took it meanwhile, re-inserting the first would leave
    /// one of them outside the registry pointing at the context. It traps, naming the ID.
    @Test func reinsertingADetachedObjectWhoseIDIsTakenTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try ContextLifetimeTests.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let node = LTNode(context: context)
                try context.obtainPermanentIDs(for: [node])
                let id = node.objectID
                context.delete(node)
                context.processPendingChanges()
                #expect(node.managedObjectContext == nil)
                _ = context.object(with: id)  // a fault under the same ID
                context.insert(node)
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("already holds another object with ID"), "stderr: \(text)")
    }
}
