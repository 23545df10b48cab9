import Foundation
import Testing
@testable import PersistenceKit

/// A status kept as its raw value, the usual way to store an enum in Core Data.
enum PredicateTaskStatus: String, Codable, Sendable {
    case open, closed
}

/// An object with enum-typed computed properties over a stored raw value, settable and
/// get-only, each force-unwrapping the enum (every stored value is valid).
final class PredicateTask: NSManagedObject {
    @Attribute var statusRaw: String = "open"
    var status: PredicateTaskStatus {
        get { PredicateTaskStatus(rawValue: statusRaw)! }
        set { statusRaw = newValue.rawValue }
    }
    var state: PredicateTaskStatus { PredicateTaskStatus(rawValue: statusRaw)! }
}

/// The same fetch through the store's filter and in memory must agree (a predicate with
/// `|| false` cannot be handed to the store, so it runs in Swift on every object). Every
/// test runs on the in-memory store and on the file store.
@Suite("Predicates over key paths, computed properties and relationships") struct PredicateTests {
    /// Two nodes, each the other's parent.
    private static func seedPair(_ context: NSManagedObjectContext) throws {
        let a = PredicateNode(context: context)
        a.name = "a"
        let b = PredicateNode(context: context)
        b.name = "b"
        a.parent = b
        b.parent = a
        try context.save()
    }

    /// `$0.parent!.name` has the key path `\.name`, applied to the parent, not to `$0`.
    @Test(arguments: [false, true]) func aKeyPathOnARelatedObjectIsNotTheObjectsOwn(file: Bool) throws {
        let folder = try TemporaryFolder()
        let coordinator = try PredicateFixtures.coordinator(fileAt: file ? folder.storeURL : nil)
        let context = PredicateFixtures.context(coordinator)
        try context.performAndWait { () throws in
            try Self.seedPair(context)
            #expect(try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.parent!.name == "a" }) == ["b"])
            #expect(try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.parent!.name == "a" || false }) == ["b"])
        }
    }

    /// A predicate on an enum-typed computed property runs its getter on real objects only:
    /// deciding whether the store could filter on it read it on a blank object first, where
    /// `PredicateTaskStatus(rawValue: "")!` trapped (found porting Core Data code).
    @Test(arguments: [false, true]) func enumTypedComputedPropertiesAreNeverReadOnABlankObject(file: Bool) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [PredicateTask.self])
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: file ? NSFileStoreType : NSInMemoryStoreType, at: file ? folder.storeURL : nil)
        let context = PredicateFixtures.context(coordinator)
        try context.performAndWait { () throws in
            PredicateTask(context: context).status = .open
            PredicateTask(context: context).status = .closed
            PredicateTask(context: context).status = .closed
            try context.save()
            let closed = PredicateTaskStatus.closed
            let settable = PredicateTask.fetchRequest()
            settable.predicate = #Predicate<PredicateTask> { $0.status == closed }
            #expect(try context.fetch(settable).count == 2)
            let getOnly = PredicateTask.fetchRequest()
            getOnly.predicate = #Predicate<PredicateTask> { $0.state != closed }
            #expect(try context.fetch(getOnly).map(\.statusRaw) == ["open"])
        }
    }

    /// Computed properties that give back their attribute for some values only.
    @Test(arguments: [false, true]) func computedPropertiesAreNotTakenForTheirAttribute(file: Bool) throws {
        let folder = try TemporaryFolder()
        let coordinator = try PredicateFixtures.coordinator(fileAt: file ? folder.storeURL : nil)
        let context = PredicateFixtures.context(coordinator)
        try context.performAndWait { () throws in
            PredicateNode(context: context).name = "Dune"
            PredicateNode(context: context).name = ""
            try context.save()
            #expect(try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.lowerName == "dune" }) == ["Dune"])
            #expect(try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.displayName == "(untitled)" }) == [""])
        }
    }

    /// A computed property that reads through a to-one relationship: telling it from an
    /// attribute must neither trap (the probe object has no parent) nor take it for `name`.
    @Test(arguments: [false, true]) func computedPropertiesThroughARelationship(file: Bool) throws {
        let folder = try TemporaryFolder()
        let coordinator = try PredicateFixtures.coordinator(fileAt: file ? folder.storeURL : nil)
        let context = PredicateFixtures.context(coordinator)
        try context.performAndWait { () throws in
            try Self.seedPair(context)
            let orphan = PredicateNode(context: context)
            orphan.name = "orphan"
            try context.save()
            #expect(try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.parentOrOwnName == "a" }) == ["b"])
            #expect(try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.parentOrOwnName == "orphan" }) == ["orphan"])
            #expect(try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.parent != nil && $0.parentName == "a" }) == ["b"])
        }
    }

    /// Telling a computed property that unwraps a relationship (`parent!.name`) from an
    /// attribute reads it on a probe object without a parent: that must not trap. (Run in a
    /// child process, so a trap fails the test instead of the run.)
    @Test func probingAPropertyThatUnwrapsARelationshipDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let coordinator = try PredicateFixtures.coordinator(fileAt: nil)
            let context = PredicateFixtures.context(coordinator)
            try context.performAndWait { () throws in
                try Self.seedPair(context)
                let names = try PredicateFixtures.names(context, #Predicate<PredicateNode> { $0.parentName == "a" })
                precondition(names == ["b"], "got \(names)")
            }
        }
    }

    /// A relative URL is stored in its absolute form, so both paths, and both stores, find
    /// it by that form.
    @Test(arguments: [false, true]) func aRelativeURLIsFoundByItsAbsoluteForm(file: Bool) throws {
        let folder = try TemporaryFolder()
        let coordinator = try PredicateFixtures.coordinator(fileAt: file ? folder.storeURL : nil)
        let a = PredicateFixtures.context(coordinator)
        try a.performAndWait { () throws in
            let n = PredicateNode(context: a)
            n.name = "relative"
            n.link = URL(string: "b", relativeTo: URL(string: "http://x.org/"))
            try a.save()
        }
        let b = PredicateFixtures.context(coordinator)
        try b.performAndWait { () throws in
            let target = URL(string: "http://x.org/b")
            #expect(try PredicateFixtures.names(b, #Predicate<PredicateNode> { $0.link == target }) == ["relative"])
            #expect(try PredicateFixtures.names(b, #Predicate<PredicateNode> { $0.link == target || false }) == ["relative"])
        }
    }
}
