import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

final class VSDecimal: NSManagedObject {
    @Attribute var amount: Decimal?
}

final class VSEvent: NSManagedObject {
    @Attribute var when: Date?
}

/// Values Swift compares loosely (NaN, canonically equivalent strings): change tracking,
/// merging, sorting and the stores must treat them exactly.
/// (PEItem is from PredicateEdgeTests.)
@Suite("Values compared exactly: NaN and equivalent strings") struct ValueSemanticsTests {
    /// A merge keeps this context's unsaved edits, but an attribute holding NaN that this
    /// context never touched counts as an edit (NaN != NaN), so the saved value is dropped.
    @Test func mergeReplacesAnUntouchedNaNAttribute() throws {
        let container = try OTSupport.container([PEItem.self])
        let writer = container.newBackgroundContext()
        let reader = container.newBackgroundContext()
        let id = try writer.performAndWait {
            let item = PEItem(context: writer)
            item.n = 1
            item.score = .nan
            try writer.save()
            return item.objectID
        }
        try reader.performAndWait {
            let item = try #require(try reader.existingObject(with: id) as? PEItem)
            item.n = 2  // an edit of another attribute
        }
        let note = try writer.performAndWait {
            let item = try #require(try writer.existingObject(with: id) as? PEItem)
            item.score = 3
            let saved = TestMutex<Notification?>(nil)
            let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: writer, queue: nil) {
                note in saved.withLock { $0 = note }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            try writer.save()
            return try #require(saved.withLock { $0 })
        }
        try reader.performAndWait {
            reader.mergeChanges(fromContextDidSave: note)
            let item = try #require(try reader.existingObject(with: id) as? PEItem)
            #expect(item.n == 2)  // this context's edit stays
            #expect(item.score == 3, "got \(item.score): the merge kept the old NaN as if it were an unsaved edit")
        }
    }

    /// `changedValues()` / `hasPersistentChangedValues` report an untouched NaN attribute.
    @Test func untouchedNaNAttributeIsNotAChangedValue() throws {
        let container = try OTSupport.container([PEItem.self])
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let item = PEItem(context: context)
            item.score = .nan
            try context.save()
            item.n = 5
            #expect(Set(item.changedValues().keys) == ["n"], "got \(item.changedValues().keys.sorted())")
        }
    }

    /// With NSMergeByPropertyObjectTrumpMergePolicy only the properties this context changed
    /// win; an untouched NaN attribute overwrites the other context's saved value.
    @Test func objectTrumpKeepsTheOtherSavesChangeToAnUntouchedNaNAttribute() throws {
        let container = try OTSupport.container([PEItem.self])
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let id = try a.performAndWait {
            let item = PEItem(context: a)
            item.score = .nan
            try a.save()
            return item.objectID
        }
        try b.performAndWait {
            let item = try #require(try b.existingObject(with: id) as? PEItem)
            item.n = 7
        }
        try a.performAndWait {
            let item = try #require(try a.existingObject(with: id) as? PEItem)
            item.score = 3
            try a.save()
        }
        try b.performAndWait {
            b.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
            try b.save()
        }
        let check = container.newBackgroundContext()
        try check.performAndWait {
            let item = try #require(try check.existingObject(with: id) as? PEItem)
            #expect(item.n == 7)
            #expect(item.score == 3, "got \(item.score): b's untouched NaN overwrote a's saved 3")
        }
    }

    /// Assigning a string that is canonically equivalent (Swift `==`) but not identical to the
    /// saved one — "\u{E9}" over "e\u{301}" — is dropped by save: the context and the store
    /// keep the old scalars. Core Data compares with `isEqual:` (literal), so it writes.
    @Test(arguments: [false, true]) func equivalentButDifferentStringIsSaved(fileStore: Bool) throws {
        let folder = try TemporaryFolder()
        let container = fileStore ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
        defer { if fileStore { try? FSSupport.close(container) } }
        let context = container.newBackgroundContext()
        let id = try context.performAndWait {
            let book = Book(context: context)
            book.title = "e\u{301}"
            try context.save()
            book.title = "\u{E9}"
            #expect(context.hasChanges)
            try context.save()
            #expect(Array(book.title.unicodeScalars) == ["\u{E9}"], "this context reads \(book.title.unicodeScalars.map(\.value))")
            return book.objectID
        }
        let other = container.newBackgroundContext()
        try other.performAndWait {
            let book = try #require(try other.existingObject(with: id) as? Book)
            #expect(Array(book.title.unicodeScalars) == ["\u{E9}"], "the store holds \(book.title.unicodeScalars.map(\.value))")
        }
    }

    /// Sorting a Double attribute that holds NaN: `StoreValue.compare` calls NaN "the same"
    /// as every number, which is no ordering at all, so the numbers come back out of order.
    @Test(arguments: [false, true]) func sortWithNaNKeepsNumbersInOrder(fileStore: Bool) throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [PEItem.self])
        let container = NSPersistentContainer(name: "ValueSemanticsSort", managedObjectModel: model)
        container.persistentStoreDescriptions = [
            fileStore ? NSPersistentStoreDescription(url: folder.storeURL) : NSPersistentStoreDescription(type: NSInMemoryStoreType)
        ]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        defer { if fileStore { try? FSSupport.close(container) } }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            for score in [2.0, .nan, 1.0, 0.5, .nan, 3.0] { PEItem(context: context).score = score }
            try context.save()
            let request = PEItem.fetchRequest()
            request.sortDescriptors = [NSSortDescriptor(keyPath: \PEItem.score, ascending: true)]
            let numbers = try context.fetch(request).map(\.score).filter { !$0.isNaN }
            #expect(numbers == [0.5, 1.0, 2.0, 3.0], "got \(numbers)")
        }
    }

    /// A `Decimal.nan` value saves into the file store, whose encoding ("NaN") its decoder
    /// then refuses: every later fetch of the entity throws "corrupt", before and after
    /// reopening. The in-memory store round-trips it.
    @Test func decimalNaNRoundTripsThroughTheFileStore() throws {
        let folder = try TemporaryFolder()
        let model = try NSManagedObjectModel(managedObjectClasses: [VSDecimal.self])
        let container = try FSSupport.container(at: folder.storeURL, model: model)
        defer { try? FSSupport.close(container) }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            VSDecimal(context: context).amount = .nan
            try context.save()  // succeeds
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            let all = try reader.fetch(VSDecimal.fetchRequest())  // throws FileStoreError corrupt
            #expect(all.count == 1)
            #expect(all.first?.amount?.isNaN == true)
        }
    }

    /// A Date whose interval is NaN matches `when == <any date>` when the in-memory store
    /// filters (its `StoreValue.compare` finds NaN "the same"), while the same predicate run
    /// in memory, and the file store, match nothing — Guide/Differences: "Both paths compare
    /// as Swift does: a NaN matches only `!=`".
    @Test func nanDateMatchesNoEqualityInTheInMemoryStore() throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [VSEvent.self])
        let container = NSPersistentContainer(name: "ValueSemanticsDate", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        let context = container.newBackgroundContext()
        try context.performAndWait {
            VSEvent(context: context).when = Date(timeIntervalSinceReferenceDate: .nan)
            try context.save()
            let day: Date? = Date(timeIntervalSinceReferenceDate: 5)
            let no = false
            let storeFiltered = VSEvent.fetchRequest()
            storeFiltered.predicate = #Predicate { $0.when == day }
            let inMemory = VSEvent.fetchRequest()
            inMemory.predicate = #Predicate { $0.when == day || no }
            #expect(try context.fetch(inMemory).count == 0)
            #expect(try context.fetch(storeFiltered).count == 0)
            #expect(try context.count(for: storeFiltered) == 0)
        }
    }
}
