import Foundation
import Testing
@testable import PersistenceKit

// Each merge policy against a constraint conflict: with a stored row (in-memory store, and a
// file store read again after reopening) and between two objects of one save.

@Suite struct ConstraintMergePolicyTests {
    /// The stored member "a@x" (Old, 30), then a save under `policy` inserting "a@x" (New,
    /// age 0, the default) and "b@x": the members after it, and whether it threw.
    private func againstStoredRow(_ container: NSPersistentContainer, _ policy: NSMergePolicy) throws -> (rows: [String], error: CoreDataError?) {
        try UCSupport.saveMember(container, email: "a@x", name: "Old", age: 30)
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            context.mergePolicy = policy
            let new = UCSupport.insertMember(context, email: "a@x", name: "New")
            UCSupport.insertMember(context, email: "b@x", name: "Bee", age: 5)
            do {
                try context.save()
            } catch let error as CoreDataError {
                #expect(new.managedObjectContext === context && context.hasChanges)
                return (try UCSupport.members(container), error)
            }
            #expect(!context.hasChanges)
            return (try UCSupport.members(container), nil)
        }
    }

    private static let expectedAgainstStored: [(NSMergePolicy, [String])] = [
        (.mergeByPropertyObjectTrump, ["a@x|New|30", "b@x|Bee|5"]),
        (.overwrite, ["a@x|New|0", "b@x|Bee|5"]),
        (.mergeByPropertyStoreTrump, ["a@x|Old|30", "b@x|Bee|5"]),
        (.rollback, ["a@x|Old|30", "b@x|Bee|5"]),
    ]

    @Test func errorPolicyThrowsTheConstraintConflictAndWritesNothing() throws {
        let container = try UCSupport.memoryContainer()
        let (rows, error) = try againstStoredRow(container, .error)
        #expect(rows == ["a@x|Old|30"])
        let e = try #require(error)
        #expect(e.code == .managedObjectConstraintMerge)
        #expect((e as NSError).code == NSManagedObjectConstraintMergeError && NSManagedObjectConstraintMergeError == 1551)
        let conflict = try #require(e.constraintConflicts.first)
        #expect(e.constraintConflicts.count == 1)
        #expect(conflict.constraint == ["email"])
        #expect(conflict.constraintValues["email"] as? String == "a@x")
        #expect(conflict.databaseObject != nil && conflict.conflictingObjects.count == 1)
        #expect(conflict.databaseSnapshot?["name"] as? String == "Old")
        #expect(conflict.conflictingSnapshots.first?["name"] as? String == "New")
        let listed = (e as NSError).userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSConstraintConflict]
        #expect(listed?.count == 1)
    }

    @Test(arguments: 0..<4) func policyResolvesAgainstAStoredRowInMemory(_ i: Int) throws {
        let (policy, expected) = Self.expectedAgainstStored[i]
        let container = try UCSupport.memoryContainer(name: "memory\(i)")
        let (rows, error) = try againstStoredRow(container, policy)
        #expect(error == nil)
        #expect(rows == expected, "\(policy)")
    }

    @Test(arguments: 0..<4) func policyResolvesAgainstAStoredRowInAFileStore(_ i: Int) throws {
        let (policy, expected) = Self.expectedAgainstStored[i]
        let folder = try TemporaryFolder("policyFile\(i)")
        let container = try UCSupport.fileContainer(at: folder.storeURL)
        let (rows, error) = try againstStoredRow(container, policy)
        #expect(error == nil)
        #expect(rows == expected, "\(policy)")
        try FSSupport.close(container)
        let reopened = try UCSupport.fileContainer(at: folder.storeURL)
        #expect(try UCSupport.members(reopened) == expected, "\(policy), reopened")
        // The reopened store's index knows the key: a new duplicate is still refused.
        #expect(throws: CoreDataError.self) { try UCSupport.saveMember(reopened, email: "a@x", name: "Again", age: 1) }
        try FSSupport.close(reopened)
    }

    @Test func objectTrumpGivesTheStoredObjectTheNewValuesUnderItsOwnID() throws {
        let container = try UCSupport.memoryContainer()
        try UCSupport.saveMember(container, email: "a@x", name: "Old", age: 30)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let stored = try #require(try context.fetch(NSFetchRequest<UCMember>(entityName: "UCMember")).first)
            let storedID = stored.objectID
            context.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
            let new = UCSupport.insertMember(context, email: "a@x", name: "New")
            try context.save()
            #expect(new.managedObjectContext == nil)
            #expect(stored.name == "New" && stored.age == 30 && !stored.hasChanges && stored.objectID == storedID)
        }
    }

    /// Two inserted members sharing "a@x" (First, then Second) saved together under `policy`.
    private func betweenUnsaved(_ policy: NSMergePolicy, name: String = #function) throws -> (rows: [String], error: CoreDataError?) {
        let container = try UCSupport.memoryContainer(name: name)
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            context.mergePolicy = policy
            UCSupport.insertMember(context, email: "a@x", name: "First", age: 1)
            UCSupport.insertMember(context, email: "a@x", name: "Second", age: 2)
            do {
                try context.save()
            } catch let error as CoreDataError {
                return (try UCSupport.members(container), error)
            }
            return (try UCSupport.members(container), nil)
        }
    }

    @Test func errorPolicyReportsTwoUnsavedObjectsWithoutADatabaseObject() throws {
        let (rows, error) = try betweenUnsaved(.error)
        #expect(rows.isEmpty)
        let conflict = try #require(error?.constraintConflicts.first)
        #expect(error?.code == .managedObjectConstraintMerge)
        #expect(conflict.databaseObject == nil && conflict.databaseSnapshot == nil)
        #expect(conflict.conflictingObjects.count == 2)
        #expect(conflict.conflictingSnapshots.compactMap { $0["name"] as? String } == ["First", "Second"])
    }

    @Test(arguments: [
        (NSMergePolicy.mergeByPropertyObjectTrump, "a@x|Second|2"), (.overwrite, "a@x|Second|2"),
        (.mergeByPropertyStoreTrump, "a@x|First|1"), (.rollback, "a@x|First|1"),
    ])
    func policyKeepsOneOfTwoUnsavedObjects(_ policy: NSMergePolicy, _ expected: String) throws {
        let (rows, error) = try betweenUnsaved(policy, name: "unsaved\(policy.mergeType.rawValue)")
        #expect(error == nil)
        #expect(rows == [expected], "\(policy)")
    }

    @Test func changingASavedObjectToATakenKeyIsAConflict() throws {
        let container = try UCSupport.memoryContainer()
        try UCSupport.saveMember(container, email: "a@x", name: "A", age: 1)
        try UCSupport.saveMember(container, email: "b@x", name: "B", age: 2)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let b = try #require(try context.fetch(NSFetchRequest<UCMember>(entityName: "UCMember")).first { $0.email == "b@x" })
            b.email = "a@x"
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .managedObjectConstraintMerge)
            // Swapping two keys in one save leaves no duplicate: allowed.
            let a = try #require(try context.fetch(NSFetchRequest<UCMember>(entityName: "UCMember")).first { $0.name == "A" })
            a.email = "b@x"
            try context.save()
        }
        #expect(try UCSupport.members(container) == ["a@x|B|2", "b@x|A|1"])
    }
}
