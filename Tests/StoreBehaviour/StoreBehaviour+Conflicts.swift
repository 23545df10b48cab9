import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    /// How a merge policy resolves the conflict of ``mergePolicies(_:)``: the book afterwards
    /// ("title/pages/published"), in the store and in the saving context, and every title.
    struct PolicyOutcome: Sendable {
        let policy: NSMergePolicyType?
        let book: String
        let titles: [String]
    }

    /// The outcome of each policy. The store starts with T0/100/nil; coordinator A saves
    /// title A/pages 111; coordinator B, which loaded T0/100/nil, changes pages to 222 and
    /// published to 1e6, inserts "Extra", and saves under the policy.
    static let policyOutcomes: [PolicyOutcome] = [
        // Nothing of B's save is stored.
        PolicyOutcome(policy: nil, book: "A/111/nil", titles: ["A"]),
        // Each property: B's where B changed it, else the store's.
        PolicyOutcome(policy: .mergeByPropertyObjectTrumpMergePolicyType, book: "A/222/1000000.0", titles: ["A", "Extra"]),
        // Each property: the store's where both changed it, else B's.
        PolicyOutcome(policy: .mergeByPropertyStoreTrumpMergePolicyType, book: "A/111/1000000.0", titles: ["A", "Extra"]),
        // B's whole object, the title it never changed included.
        PolicyOutcome(policy: .overwriteMergePolicyType, book: "T0/222/1000000.0", titles: ["Extra", "T0"]),
        // The store's whole object; the rest of B's save goes through.
        PolicyOutcome(policy: .rollbackMergePolicyType, book: "A/111/nil", titles: ["A", "Extra"]),
    ]

    static func line(_ book: SBBook) -> String {
        "\(book.title)/\(book.pages)/\(book.published.map { "\($0.timeIntervalSince1970)" } ?? "nil")"
    }

    static func mergePolicies(_ store: some StoreUnderTest) async throws {
        try await deleteConflict(store)
        for outcome in policyOutcomes {
            try await withStore(store, BehaviourModels.library) { checked in
                let a = try await checked.open("A")
                let b = try await checked.open("B")
                let id = try await inContext(a) { context in
                    let book = SBBook(context: context)
                    book.title = "T0"
                    book.pages = 100
                    try context.save()
                    return book.objectID
                }
                // Used with `performAndWait`, as `inContext` uses its contexts (see there).
                let contextB = b.newBackgroundContext()
                let loaded = try contextB.performAndWait { line(try #require(try contextB.existingObject(with: id) as? SBBook)) }
                #expect(loaded == "T0/100/nil")
                try await inContext(a) { context in
                    let book = try #require(try context.existingObject(with: id) as? SBBook)
                    book.title = "A"
                    book.pages = 111
                    try context.save()
                }
                let (inB, error) = try contextB.performAndWait { () throws -> (String, CoreDataError?) in
                    if let policy = outcome.policy { contextB.mergePolicy = NSMergePolicy(merge: policy) }
                    let book = try #require(contextB.registeredObject(for: id) as? SBBook)
                    book.pages = 222
                    book.published = Date(timeIntervalSince1970: 1_000_000)
                    SBBook(context: contextB).title = "Extra"
                    do {
                        try contextB.save()
                        #expect(!contextB.hasChanges)
                        return (line(book), nil)
                    } catch let error as CoreDataError {
                        #expect(contextB.hasChanges, "a failed save dropped the context's changes")
                        return (line(book), error)
                    }
                }
                let policyName = outcome.policy.map { "\($0)" } ?? "error"
                if outcome.policy == nil {
                    let error = try #require(error, "the save did not fail under the error policy")
                    #expect(error.code == .managedObjectMerge)
                    #expect(error.conflicts.map(\.objectID) == [id])
                    #expect(error.conflicts.allSatisfy { $0.oldVersionNumber < $0.newVersionNumber })
                    #expect(inB == "T0/222/1000000.0", "the failed save changed the context's object")
                } else {
                    #expect(error == nil, "\(policyName): \(String(describing: error))")
                    #expect(inB == outcome.book, "\(policyName): the saving context's object")
                }
                let (stored, titles) = try await inContext(try await checked.reopen()) { context in
                    let book = try #require(try context.existingObject(with: id) as? SBBook)
                    return (line(book), try all(SBBook.self, in: context, sortedBy: "title").map(\.title))
                }
                #expect(stored == outcome.book, "\(policyName): the stored object")
                #expect(titles == outcome.titles, "\(policyName): the stored titles")
            }
        }
    }

    /// Deleting an object another coordinator changed since it was read fails under the
    /// error policy and leaves the other coordinator's change stored; a coordinator that read
    /// the change deletes it.
    static func deleteConflict(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            let a = try await checked.open("A")
            let b = try await checked.open("B")
            let id = try await inContext(a) { context in
                let book = SBBook(context: context)
                book.title = "T0"
                try context.save()
                return book.objectID
            }
            // Used with `performAndWait`, as `inContext` uses its contexts.
            let contextB = b.newBackgroundContext()
            try contextB.performAndWait { _ = try contextB.existingObject(with: id) }
            try await inContext(a) { context in
                try #require(try context.existingObject(with: id) as? SBBook).title = "A"
                try context.save()
            }
            try contextB.performAndWait {
                let book = try #require(contextB.registeredObject(for: id))
                contextB.delete(book)
                let error = try #require(throws: CoreDataError.self) { try contextB.save() }
                #expect(error.code == .managedObjectMerge)
                #expect(error.conflicts.map(\.objectID) == [id])
                #expect(book.isDeleted)
            }
            #expect(try await inContext(try await checked.reopen(), bookLines) == ["A:0:nil"])
            let c = try await checked.open("C")
            try await inContext(c) { context in
                context.delete(try context.existingObject(with: id))
                try context.save()
            }
            #expect(try await inContext(try await checked.reopen(), bookLines) == [])
        }
    }

    /// Two coordinators each put a book of their own on one shelf, both having read the
    /// shelf before either saved; under either by-property policy the shelf ends with both.
    static func concurrentToManyEdits(_ store: some StoreUnderTest) async throws {
        for policy in [NSMergePolicyType.mergeByPropertyObjectTrumpMergePolicyType, .mergeByPropertyStoreTrumpMergePolicyType] {
            try await withStore(store, BehaviourModels.library) { checked in
                let a = try await checked.open("A")
                let b = try await checked.open("B")
                let shelfID = try await inContext(a) { context in
                    let shelf = SBShelf(context: context)
                    shelf.name = "shared"
                    let old = SBBook(context: context)
                    old.title = "old"
                    old.shelf = shelf
                    try context.save()
                    return shelf.objectID
                }
                // Used with `performAndWait`, as `inContext` uses its contexts.
                let (contextA, contextB) = (a.newBackgroundContext(), b.newBackgroundContext())
                for (context, title) in [(contextA, "from A"), (contextB, "from B")] {
                    try context.performAndWait {
                        context.mergePolicy = NSMergePolicy(merge: policy)
                        let shelf = try #require(try context.existingObject(with: shelfID) as? SBShelf)
                        #expect(shelf.books.count == 1)
                        let book = SBBook(context: context)
                        book.title = title
                        book.shelf = shelf
                    }
                }
                for context in [contextA, contextB] {
                    try context.performAndWait { try context.save() }
                }
                let lines = try await inContext(try await checked.reopen(), libraryLines)
                #expect(
                    lines == [
                        "shelf shared: [\"from A\", \"from B\", \"old\"]", "book from A: on shared, by [], cover -",
                        "book from B: on shared, by [], cover -", "book old: on shared, by [], cover -",
                    ], "\(policy)")
            }
        }
    }

    /// Saves the tags `a` (used once) and `b` (twice) through `container`.
    static func saveTagsAB(_ container: NSPersistentContainer) async throws {
        try await inContext(container) { context in
            for (label, uses) in [("a", 1), ("b", 2)] {
                let tag = SBTag(context: context)
                tag.label = label
                tag.uses = Int64(uses)
            }
            try context.save()
        }
    }

    static func tagLines(_ context: NSManagedObjectContext) throws -> [String] {
        try all(SBTag.self, in: context, sortedBy: "label").map { "\($0.label):\($0.uses)" }
    }

    static func uniqueness(_ store: some StoreUnderTest) async throws {
        let outcomes: [(NSMergePolicyType, [String])] = [
            (.errorMergePolicyType, ["a:1"]),
            (.mergeByPropertyObjectTrumpMergePolicyType, ["a:5", "b:2"]),
            (.mergeByPropertyStoreTrumpMergePolicyType, ["a:1", "b:2"]),
            (.overwriteMergePolicyType, ["a:5", "b:2"]),
            (.rollbackMergePolicyType, ["a:1", "b:2"]),
        ]
        for (policy, expected) in outcomes {
            try await withStore(store, BehaviourModels.tags) { checked in
                let a = try await checked.open("A")
                let b = try await checked.open("B")
                try await inContext(a) { context in
                    let tag = SBTag(context: context)
                    tag.label = "a"
                    tag.uses = 1
                    try context.save()
                }
                // Another coordinator inserts the same label (and another one).
                let error = try await inContext(b) { context -> CoreDataError? in
                    context.mergePolicy = NSMergePolicy(merge: policy)
                    let clash = SBTag(context: context)
                    clash.label = "a"
                    clash.uses = 5
                    let other = SBTag(context: context)
                    other.label = "b"
                    other.uses = 2
                    do {
                        try context.save()
                        return nil
                    } catch let error as CoreDataError {
                        return error
                    }
                }
                if policy == .errorMergePolicyType {
                    let error = try #require(error, "the save did not fail under the error policy")
                    #expect(error.code == .managedObjectConstraintMerge)
                    let conflict = try #require(error.constraintConflicts.first)
                    #expect(error.constraintConflicts.count == 1)
                    #expect(conflict.constraint == ["label"])
                    #expect(conflict.constraintValues["label"] as? String == "a")
                    #expect(conflict.databaseObject != nil)
                } else {
                    #expect(error == nil, "\(policy): \(String(describing: error))")
                }
                #expect(try await inContext(try await checked.reopen(), tagLines) == expected, "\(policy)")
            }
        }
        // Renaming a stored tag to another stored tag's label: refused, nothing changes; once
        // the other tag is deleted (by another coordinator), the rename goes through.
        try await withStore(store, BehaviourModels.tags) { checked in
            try await saveTagsAB(try await checked.open("A"))
            let b = try await checked.open("B")
            let contextB = b.newBackgroundContext()  // used with `performAndWait`, as in `inContext`
            try contextB.performAndWait {
                let tag = try #require(try all(SBTag.self, in: contextB).first { $0.label == "b" })
                tag.label = "a"
                let error = try #require(throws: CoreDataError.self) { try contextB.save() }
                #expect(error.code == .managedObjectConstraintMerge)
            }
            #expect(try await inContext(try await checked.open("C"), tagLines) == ["a:1", "b:2"])
            try await inContext(try await checked.open("D")) { context in
                for tag in try all(SBTag.self, in: context) where tag.label == "a" { context.delete(tag) }
                try context.save()
            }
            try contextB.performAndWait { try contextB.save() }
            #expect(try await inContext(try await checked.reopen(), tagLines) == ["a:2"])
        }
        // Two objects of one save with one label: the error policy refuses the save.
        try await withStore(store, BehaviourModels.tags) { checked in
            let error = try await inContext(try await checked.open()) { context -> CoreDataError? in
                for uses in [1, 2] {
                    let tag = SBTag(context: context)
                    tag.label = "twin"
                    tag.uses = Int64(uses)
                }
                do {
                    try context.save()
                    return nil
                } catch let error as CoreDataError {
                    return error
                }
            }
            #expect(error?.code == .managedObjectConstraintMerge)
            #expect(try await inContext(try await checked.reopen(), tagLines) == [])
        }
    }
}
