import Foundation
import Testing
@testable import PersistenceKit

// Model classes used only by the validation tests.

final class BITSmall: NSManagedObject {
    @Attribute var small: Int16 = 0
    @Attribute var code: String = ""
    @Attribute var note: String?
}

final class MTGroup: NSManagedObject {
    @Relationship(inverse: "group", minCount: 2) var members: Set<MTMember>
}

final class MTMember: NSManagedObject {
    @Relationship(inverse: "members") var group: MTGroup?
}

final class VTOwner: NSManagedObject {
    @Attribute var name: String = "owner"
    @Attribute var note: String?
    @Relationship(inverse: "owner", minCount: 2, maxCount: 3) var items: Set<VTItem>
}

final class VTItem: NSManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "items", isOptional: false) var owner: VTOwner?
}

enum VTCustomError: Error, Equatable {
    case emptyCode
}

final class VTChecked: NSManagedObject {
    @Attribute var code: String = ""

    override func validateForInsert() throws {
        try super.validateForInsert()
        if code.isEmpty { throw VTCustomError.emptyCode }
    }
}

private func validationContainer() throws -> NSPersistentContainer {
    let model = try NSManagedObjectModel(managedObjectClasses: [VTOwner.self, VTItem.self, VTChecked.self])
    let container = NSPersistentContainer(name: "ValidationTests", managedObjectModel: model)
    container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
    let box = ErrorBox()
    container.loadPersistentStores { _, error in box.set(error) }
    if let e = box.get() { throw e }
    return container
}

private func rowCounts(_ container: NSPersistentContainer) async throws -> [Int] {
    let ctx = container.newBackgroundContext()
    return try await ctx.perform {
        [
            try ctx.count(for: VTOwner.fetchRequest()), try ctx.count(for: VTItem.fetchRequest()),
            try ctx.count(for: VTChecked.fetchRequest()),
        ]
    }
}

/// A Sendable summary of one detailed error.
private struct Problem: Hashable, Sendable {
    let objectID: NSManagedObjectID?
    let key: String?
    let code: CoreDataError.Code
}

@Suite("Validation of objects at save") struct ValidationTests {
    // MARK: validateValue(_:forKey:)

    @Test func validateValueThrowsTypedErrors() throws {
        let container = try OTSupport.container(
            model: try NSManagedObjectModel(managedObjectClasses: [BITSmall.self, Shelf.self, Book.self, Author.self, Cover.self]))
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let small = BITSmall(context: context)
            let book = Book(context: context)
            let shelf = Shelf(context: context)
            let author = Author(context: context)

            var error = #expect(throws: CoreDataError.self) { try book.validateValue("x", forKey: "isbn") }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "isbn")
            #expect(error?.objectID == book.objectID)

            error = #expect(throws: CoreDataError.self) { try book.validateValue("many", forKey: "pages") }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "pages")
            #expect(error?.code.rawValue == 1550)
            #expect(error?.description.contains("Book.pages") == true)

            error = #expect(throws: CoreDataError.self) { try small.validateValue(70_000, forKey: "small") }
            #expect(error?.code == .managedObjectValidation, "70000 does not fit in Integer 16")
            #expect(error?.key == "small")

            error = #expect(throws: CoreDataError.self) { try book.validateValue(nil, forKey: "title") }
            #expect(error?.code == .validationMissingMandatoryProperty)
            #expect(error?.key == "title")
            #expect(error?.code.rawValue == 1570)

            error = #expect(throws: CoreDataError.self) { try book.validateValue(NSNull(), forKey: "title") }
            #expect(error?.code == .validationMissingMandatoryProperty)

            error = #expect(throws: CoreDataError.self) { try book.validateValue(author, forKey: "shelf") }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "shelf")

            error = #expect(throws: CoreDataError.self) {
                try book.validateValue([shelf] as [NSManagedObject], forKey: "authors")
            }
            #expect(error?.code == .managedObjectValidation)
            #expect(error?.key == "authors")

            // Good values pass.
            try book.validateValue("A title", forKey: "title")
            try book.validateValue(12, forKey: "pages")
            try book.validateValue(Int64(12), forKey: "pages")
            try book.validateValue(nil, forKey: "published")
            try book.validateValue(Date(), forKey: "published")
            try book.validateValue(shelf, forKey: "shelf")
            try book.validateValue(nil, forKey: "shelf")
            try book.validateValue(Set([author as NSManagedObject]), forKey: "authors")
            try small.validateValue(Int16.max, forKey: "small")
            try small.validateValue(Optional<String>.none, forKey: "note")

            // Validating never changes the object.
            #expect(book.pages == 0)
            #expect(book.title == "")
            #expect(book.shelf == nil)
        }
    }

    @Test func validateValueDoesNotMarkASavedObjectChanged() throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let book = Book(context: context)
            try context.save()
            _ = #expect(throws: CoreDataError.self) { try book.validateValue("bad", forKey: "pages") }
            try book.validateValue(5, forKey: "pages")
            #expect(!book.hasChanges)
            #expect(!context.hasChanges)
        }
    }

    @Test func savingMissingRequiredValuesReportsEveryErrorAndKeepsChanges() throws {
        let container = try OTSupport.container(model: try NSManagedObjectModel(managedObjectClasses: [BITSmall.self]))
        let context = container.newBackgroundContext()
        context.performAndWait {
            let one = BITSmall(context: context)
            one.setValue(nil, forKey: "code")
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .validationMissingMandatoryProperty)
            #expect(error?.key == "code")
            #expect(error?.objectID == one.objectID)

            let two = BITSmall(context: context)
            two.setValue(nil, forKey: "code")
            let both = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(both?.code == .validationMultipleErrors)
            #expect(both?.detailedErrors.count == 2)
            #expect(both?.detailedErrors.allSatisfy { $0.code == .validationMissingMandatoryProperty && $0.key == "code" } == true)
            #expect(Set(both?.detailedErrors.compactMap(\.objectID) ?? []) == [one.objectID, two.objectID])

            // The failed saves left the context as it was, and wrote nothing.
            #expect(context.insertedObjects == [one, two])
            #expect(one.isInserted)
            #expect(one.objectID.isTemporaryID)
        }
        let other = container.newBackgroundContext()
        let stored = try other.performAndWait { try other.count(for: BITSmall.fetchRequest()) }
        #expect(stored == 0)
    }

    /// Core Data applies a to-many's counts only when it has objects: an optional one may
    /// be empty whatever its minimum (the save does not fail with 1580).
    @Test func anOptionalToManyMayBeEmptyWhateverItsMinimum() throws {
        let container = try ContextLifetimeTests.container([MTGroup.self, MTMember.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let group = MTGroup(context: context)
            try context.save()
            group.$members.insert(MTMember(context: context))
            let error = #expect(throws: CoreDataError.self) { try context.save() }
            #expect(error?.code == .validationRelationshipLacksMinimumCount)
            group.$members.insert(MTMember(context: context))
            try context.save()
        }
    }

    @Test func severalInvalidObjectsGiveOneErrorListingEveryProblem() async throws {
        let container = try validationContainer()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            // owner1: required attribute set to nil, and only 1 item (minCount 2).
            let owner1 = VTOwner(context: ctx)
            owner1.setValue(nil, forKey: "name")
            let lone = VTItem(context: ctx)
            lone.owner = owner1
            // orphan: required to-one missing.
            let orphan = VTItem(context: ctx)
            orphan.label = "orphan"
            // owner2: 4 items (maxCount 3).
            let owner2 = VTOwner(context: ctx)
            for i in 0..<4 {
                let item = VTItem(context: ctx)
                item.label = "\(i)"
                item.owner = owner2
            }
            // A valid object in the same save.
            let fine = VTOwner(context: ctx)
            fine.name = "fine"
            for _ in 0..<2 { VTItem(context: ctx).owner = fine }

            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationMultipleErrors)
            let problems = error.detailedErrors.map { Problem(objectID: $0.objectID, key: $0.key, code: $0.code) }
            #expect(problems.count == 4)
            #expect(
                Set(problems)
                    == [
                        Problem(objectID: owner1.objectID, key: "name", code: .validationMissingMandatoryProperty),
                        Problem(objectID: owner1.objectID, key: "items", code: .validationRelationshipLacksMinimumCount),
                        Problem(objectID: orphan.objectID, key: "owner", code: .validationMissingMandatoryProperty),
                        Problem(objectID: owner2.objectID, key: "items", code: .validationRelationshipExceedsMaximumCount),
                    ])
            #expect(error.detailedErrors.allSatisfy { $0.code != .validationMultipleErrors })
            #expect(!error.detailedErrors.contains { $0.objectID == fine.objectID })
            // Read the Core Data way, as an NSError.
            let ns = error as NSError
            #expect(ns.domain == NSCocoaErrorDomain && ns.code == NSValidationMultipleErrorsError)
            let details = try #require(ns.userInfo[NSDetailedErrorsKey] as? [NSError])
            #expect(details.count == 4 && details.allSatisfy { $0.domain == NSCocoaErrorDomain })
            #expect(
                Set(details.map { "\($0.code) \($0.userInfo[NSValidationKeyErrorKey] as? String ?? "?")" })
                    == ["\(NSValidationMissingMandatoryPropertyError) name", "\(NSValidationRelationshipLacksMinimumCountError) items",
                        "\(NSValidationMissingMandatoryPropertyError) owner", "\(NSValidationRelationshipExceedsMaximumCountError) items"])
            #expect((details.first?.userInfo[NSValidationObjectErrorKey] as? NSManagedObjectID) != nil)
            // The failing value: the targets of a count error (as IDs), none for a missing value.
            let tooMany = try #require(details.first { $0.code == NSValidationRelationshipExceedsMaximumCountError })
            #expect(tooMany.userInfo[NSValidationValueErrorKey] as? Set<NSManagedObjectID> == Set(owner2.items.map(\.objectID)))
            #expect((tooMany.userInfo[NSValidationValueErrorKey] as? Set<NSManagedObjectID>)?.count == 4)
            let missing = try #require(details.first { $0.code == NSValidationMissingMandatoryPropertyError })
            #expect(missing.userInfo[NSValidationValueErrorKey] == nil)
            #expect(ns.localizedDescription.contains("VTOwner.name"))
            // Every problem is named in the description.
            #expect(error.description.contains("VTOwner.name"))
            #expect(error.description.contains("VTItem.owner"))
            // Nothing changed in the context.
            #expect(ctx.insertedObjects.count == 11)
            #expect(owner1.value(forKey: "name") == nil)
            #expect(ctx.insertedObjects.allSatisfy { $0.objectID.isTemporaryID })
        }
        #expect(try await rowCounts(container) == [0, 0, 0])
    }

    @Test func singleProblemIsThrownWithItsOwnCode() async throws {
        let container = try validationContainer()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let orphan = VTItem(context: ctx)
            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationMissingMandatoryProperty)
            #expect(error.objectID == orphan.objectID)
            #expect(error.key == "owner")
            #expect(error.detailedErrors.isEmpty)
        }
        #expect(try await rowCounts(container) == [0, 0, 0])
    }

    @Test func requiredAttributeSetToNil() async throws {
        let container = try validationContainer()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let owner = VTOwner(context: ctx)
            for _ in 0..<2 { VTItem(context: ctx).owner = owner }
            owner.setValue(nil, forKey: "name")
            owner.note = nil  // optional: fine
            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationMissingMandatoryProperty)
            #expect(error.objectID == owner.objectID)
            #expect(error.key == "name")
            // Fixing it makes the save succeed.
            owner.name = "named"
            try ctx.save()
            #expect(!owner.objectID.isTemporaryID)
        }
        #expect(try await rowCounts(container) == [1, 2, 0])
    }

    @Test func toManyMinimumAndMaximumCounts() async throws {
        let container = try validationContainer()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let owner = VTOwner(context: ctx)
            VTItem(context: ctx).owner = owner
            var error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationRelationshipLacksMinimumCount)
            #expect(error.key == "items")
            #expect(error.objectID == owner.objectID)
            for _ in 0..<3 { VTItem(context: ctx).owner = owner }
            #expect(owner.items.count == 4)
            error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationRelationshipExceedsMaximumCount)
            #expect(error.key == "items")
            let extra = try #require(owner.items.first)
            ctx.delete(extra)
            try ctx.save()
            #expect(owner.items.count == 3)
        }
        #expect(try await rowCounts(container) == [1, 3, 0])
    }

    @Test func updateValidationRunsOnSavedObjects() async throws {
        let container = try validationContainer()
        let seed = container.newBackgroundContext()
        let ownerID: NSManagedObjectID = try await seed.perform {
            let owner = VTOwner(context: seed)
            owner.name = "Saved"
            for _ in 0..<2 { VTItem(context: seed).owner = owner }
            try seed.save()
            return owner.objectID
        }
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let owner = try #require(try ctx.existingObject(with: ownerID) as? VTOwner)
            owner.setValue(nil, forKey: "name")
            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationMissingMandatoryProperty)
            #expect(error.objectID == ownerID)
            #expect(error.key == "name")
            #expect(ctx.updatedObjects == [owner])
        }
        let check = container.newBackgroundContext()
        let name: String = try await check.perform {
            try #require(try check.existingObject(with: ownerID) as? VTOwner).name
        }
        #expect(name == "Saved")
    }

    @Test func deletingARequiredTargetInvalidatesTheDependents() async throws {
        let container = try validationContainer()
        let seed = container.newBackgroundContext()
        let (ownerID, itemIDs): (NSManagedObjectID, [NSManagedObjectID]) = try await seed.perform {
            let owner = VTOwner(context: seed)
            let items = (0..<2).map { _ in VTItem(context: seed) }
            for i in items { i.owner = owner }
            try seed.save()
            return (owner.objectID, items.map(\.objectID))
        }
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            ctx.delete(try ctx.existingObject(with: ownerID))
            // VTOwner.items nullifies VTItem.owner, which is required.
            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationMultipleErrors)
            let named = Set(error.detailedErrors.compactMap { e in e.key == "owner" ? e.objectID : nil })
            #expect(named == Set(itemIDs))
            #expect(error.detailedErrors.allSatisfy { $0.code == .validationMissingMandatoryProperty })
        }
        #expect(try await rowCounts(container) == [1, 2, 0])
    }

    @Test func customValidateForInsertErrorIsThrown() async throws {
        let container = try validationContainer()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let checked = VTChecked(context: ctx)
            #expect(throws: VTCustomError.emptyCode) { try ctx.save() }
            #expect(checked.isInserted)
            checked.code = "ok"
            try ctx.save()
            #expect(!checked.isInserted)
        }
        #expect(try await rowCounts(container) == [0, 0, 1])
    }

    @Test func customValidationErrorIsReportedWithTheOthers() async throws {
        let container = try validationContainer()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            _ = VTChecked(context: ctx)
            let orphan = VTItem(context: ctx)
            let error = try #require(throws: CoreDataError.self) { try ctx.save() }
            #expect(error.code == .validationMultipleErrors)
            #expect(error.detailedErrors.count == 2)
            #expect(error.detailedErrors.contains { $0.objectID == orphan.objectID && $0.key == "owner" })
            #expect(error.detailedErrors.contains { $0.description.contains("emptyCode") })
        }
        #expect(try await rowCounts(container) == [0, 0, 0])
    }

    @Test func validateValueForKey() async throws {
        let container = try validationContainer()
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let owner = VTOwner(context: ctx)
            let nilError = try #require(throws: CoreDataError.self) { try owner.validateValue(nil, forKey: "name") }
            #expect(nilError.code == .validationMissingMandatoryProperty)
            #expect(nilError.key == "name")
            try owner.validateValue(nil, forKey: "note")
            try owner.validateValue("text", forKey: "name")
            let typeError = try #require(throws: CoreDataError.self) { try owner.validateValue(42, forKey: "name") }
            #expect(typeError.code == .managedObjectValidation)
            let keyError = try #require(throws: CoreDataError.self) { try owner.validateValue("x", forKey: "nope") }
            #expect(keyError.code == .managedObjectValidation)
            #expect(keyError.key == "nope")
            // validateValue does not set anything.
            #expect(owner.name == "owner")
        }
    }
}
