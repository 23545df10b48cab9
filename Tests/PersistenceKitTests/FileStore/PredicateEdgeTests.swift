import Foundation
import Testing
@testable import PersistenceKit

/// An entity with the kinds of property a predicate can name but the store must not filter
/// on as they look: a computed property, a transient attribute, and doubles that may be NaN.
final class PEItem: NSManagedObject {
    @Attribute(.indexed) var n: Int64 = 0
    @Attribute var score: Double = 0
    @Attribute(.indexed) var indexedScore: Double = 0
    @Attribute(.transient) var scratch: Int64 = 7
    @Attribute var other: Int64 = 0
    var doubled: Int64 { n * 2 }
    var sum: Int64 { n + other }
    var larger: Int64 { max(n, other) }
    var alias: Int64 { n }
    var settableAlias: Int64 {
        get { n }
        set { n = newValue }
    }
    @Attribute var title: String = ""
    var capped: Int64 { min(n, 99) }
    var trimmedTitle: String { title.trimmingCharacters(in: .whitespaces) }
}

/// Store-side filtering gives what evaluating the predicate in memory gives, for predicates
/// the store used to get wrong. Every case is checked on the file store
/// against the same predicate made untranslatable (`|| false`), which runs in memory.
@Suite("Store-side filtering agrees with evaluation in memory") struct PredicateEdgeTests {
    private static func context(_ folder: borrowing TemporaryFolder) throws -> (FileStore, NSManagedObjectContext) {
        let model = try NSManagedObjectModel(managedObjectClasses: [PEItem.self])
        let store = try FileStore.open(at: folder.storeURL, model: model)
        return (store, try FSSupport.context(for: store, model: model))
    }

    /// The `n`s the predicate matches, through the store and in memory (`|| alwaysFalse`).
    private static func both(
        _ context: NSManagedObjectContext, _ predicate: Predicate<PEItem>, _ inMemory: Predicate<PEItem>
    ) throws -> (store: [Int64], memory: [Int64], count: Int) {
        let request = PEItem.fetchRequest()
        request.sortDescriptors = [NSSortDescriptor(keyPath: \PEItem.n, ascending: true)]
        request.predicate = predicate
        let store = try context.fetch(request).map(\.n)
        let count = try context.count(for: request)
        request.predicate = inMemory
        return (store, try context.fetch(request).map(\.n), count)
    }

    @Test func computedPropertiesAreNotFilteredAsTheAttributeTheyRead() throws {
        let folder = try TemporaryFolder()
        let (store, context) = try Self.context(folder)
        defer { try? store.close() }
        try context.performAndWait {
            for (n, other) in [(1, 5), (2, 2), (4, 0), (5, 9)] as [(Int64, Int64)] {
                let item = PEItem(context: context)
                item.n = n
                item.other = other
            }
            try context.save()
            let no = false
            var r = try Self.both(context, #Predicate { $0.doubled == 4 }, #Predicate { $0.doubled == 4 || no })
            #expect(r.store == [2] && r.memory == [2] && r.count == 1)
            r = try Self.both(context, #Predicate { $0.sum == 4 }, #Predicate { $0.sum == 4 || no })
            #expect(r.store == [2, 4] && r.memory == [2, 4] && r.count == 2)
            r = try Self.both(context, #Predicate { $0.larger == 5 }, #Predicate { $0.larger == 5 || no })
            #expect(r.store == [1] && r.memory == [1])
            r = try Self.both(context, #Predicate { $0.alias >= 4 }, #Predicate { $0.alias >= 4 || no })
            #expect(r.store == [4, 5] && r.memory == [4, 5])
        }
        let entity = try #require(store.model.entitiesByName["PEItem"])
        #expect(entity.attributeIndex(forKeyPath: \PEItem.n) != nil)
        #expect(entity.attributeIndex(forKeyPath: \PEItem.settableAlias) != nil, "a settable alias reads and writes n itself")
        #expect(entity.attributeIndex(forKeyPath: \PEItem.alias) == nil, "get-only: never sent to the store")
        #expect(entity.attributeIndex(forKeyPath: \PEItem.doubled) == nil)
    }

    /// Properties that return the probe's sample values unchanged, but not every value, are
    /// not filtered by the store as their attribute (they used to be).
    @Test func clampingAndTrimmingPropertiesAreNotFilteredAsTheAttribute() throws {
        let folder = try TemporaryFolder()
        let (store, context) = try Self.context(folder)
        defer { try? store.close() }
        try context.performAndWait {
            for (n, title) in [(150, " Dune "), (3, "Emma"), (99, "Dune")] as [(Int64, String)] {
                let item = PEItem(context: context)
                item.n = n
                item.title = title
            }
            try context.save()
            let no = false
            var r = try Self.both(context, #Predicate { $0.capped == 99 }, #Predicate { $0.capped == 99 || no })
            #expect(r.store == [99, 150] && r.memory == [99, 150] && r.count == 2)
            r = try Self.both(context, #Predicate { $0.trimmedTitle == "Dune" }, #Predicate { $0.trimmedTitle == "Dune" || no })
            #expect(r.store == [99, 150] && r.memory == [99, 150] && r.count == 2)
            r = try Self.both(context, #Predicate { $0.settableAlias >= 99 }, #Predicate { $0.settableAlias >= 99 || no })
            #expect(r.store == [99, 150] && r.memory == [99, 150] && r.count == 2)
        }
    }

    @Test func transientAttributesAreNotFilteredByTheStore() throws {
        let folder = try TemporaryFolder()
        let (store, context) = try Self.context(folder)
        defer { try? store.close() }
        try context.performAndWait {
            for n in 1...3 { PEItem(context: context).n = Int64(n) }
            try context.save()
            let no = false
            let r = try Self.both(context, #Predicate { $0.scratch == 7 }, #Predicate { $0.scratch == 7 || no })
            #expect(r.store == [1, 2, 3] && r.memory == [1, 2, 3] && r.count == 3)
        }
    }

    @Test func nanMatchesOnlyNotEqual() throws {
        let folder = try TemporaryFolder()
        let (store, context) = try Self.context(folder)
        defer { try? store.close() }
        try context.performAndWait {
            for (n, score) in [(1, Double.nan), (2, 5), (3, 7)] as [(Int64, Double)] {
                let item = PEItem(context: context)
                item.n = n
                item.score = score
                item.indexedScore = score
            }
            try context.save()
            let no = false
            func check(_ stored: Predicate<PEItem>, _ memory: Predicate<PEItem>, _ expected: [Int64]) throws {
                let r = try Self.both(context, stored, memory)
                #expect(r.store == expected && r.memory == expected && r.count == expected.count)
            }
            try check(#Predicate { $0.score == 5 }, #Predicate { $0.score == 5 || no }, [2])
            try check(#Predicate { $0.score != 5 }, #Predicate { $0.score != 5 || no }, [1, 3])
            try check(#Predicate { $0.score <= 7 }, #Predicate { $0.score <= 7 || no }, [2, 3])
            try check(#Predicate { $0.score > 1 }, #Predicate { $0.score > 1 || no }, [2, 3])
            try check(#Predicate { $0.indexedScore >= 5 }, #Predicate { $0.indexedScore >= 5 || no }, [2, 3])
            try check(#Predicate { $0.indexedScore == 7 }, #Predicate { $0.indexedScore == 7 || no }, [3])
        }
    }

    /// NaN values in an indexed attribute used to make the range index lose ordinary rows
    /// (NaN as a key is unequal to itself, and sorted unordered among the values).
    @Test func nanValuesDoNotHideRowsFromTheRangeIndex() throws {
        let folder = try TemporaryFolder()
        let (store, context) = try Self.context(folder)
        defer { try? store.close() }
        try context.performAndWait {
            for i in 0..<40 {
                let item = PEItem(context: context)
                item.n = Int64(i)
                item.indexedScore = i % 2 == 0 ? .nan : Double(i)
            }
            try context.save()
            // Change some NaNs and some numbers, so the index also removes entries.
            for item in try context.fetch(PEItem.fetchRequest()) where item.n % 4 == 0 || item.n % 5 == 0 {
                item.indexedScore = item.indexedScore.isNaN ? Double(item.n) : .nan
            }
            try context.save()
            let expected = try context.fetch(PEItem.fetchRequest())
                .filter { !$0.indexedScore.isNaN && $0.indexedScore > 12.5 }.map(\.n).sorted()
            let r = try Self.both(
                context, #Predicate { $0.indexedScore > 12.5 }, #Predicate { $0.indexedScore > 12.5 || $0.n < 0 })
            #expect(!expected.isEmpty)
            #expect(r.store == expected && r.memory == expected && r.count == expected.count)
        }
    }

    /// The condition an index answers is not tested again on the rows it gives; the other
    /// conditions still are, and a NaN constant, which the index orders below every number,
    /// is tested on each row (so `> NaN` matches nothing, as in memory).
    @Test func conditionsAnsweredByAnIndexAreExact() throws {
        let folder = try TemporaryFolder()
        let (store, context) = try Self.context(folder)
        defer { try? store.close() }
        try context.performAndWait {
            for i in 0..<60 {
                let item = PEItem(context: context)
                item.n = Int64(i % 6)
                item.other = Int64(i)
                item.indexedScore = i % 7 == 0 ? .nan : Double(i % 10)
            }
            try context.save()
            let no = false
            let notANumber = Double("nan") ?? 0  // not `.nan`: the compiler warns on comparing with it
            func check(_ stored: Predicate<PEItem>, _ memory: Predicate<PEItem>, expectEmpty: Bool = false) throws {
                let r = try Self.both(context, stored, memory)
                #expect(r.store == r.memory && r.count == r.memory.count)
                #expect(r.memory.isEmpty == expectEmpty)
            }
            try check(#Predicate { $0.n == 3 }, #Predicate { $0.n == 3 || no })
            try check(#Predicate { $0.n == 3 && $0.other > 20 }, #Predicate { ($0.n == 3 && $0.other > 20) || no })
            try check(#Predicate { $0.other > 20 && $0.n == 3 }, #Predicate { ($0.other > 20 && $0.n == 3) || no })
            try check(#Predicate { $0.n >= 4 && $0.indexedScore < 5 }, #Predicate { ($0.n >= 4 && $0.indexedScore < 5) || no })
            try check(#Predicate { $0.indexedScore > notANumber }, #Predicate { $0.indexedScore > notANumber || no }, expectEmpty: true)
            try check(#Predicate { $0.indexedScore <= notANumber }, #Predicate { $0.indexedScore <= notANumber || no }, expectEmpty: true)
            try check(#Predicate { $0.indexedScore == notANumber }, #Predicate { $0.indexedScore == notANumber || no }, expectEmpty: true)
            try check(#Predicate { $0.n == 2 && $0.n == 3 }, #Predicate { ($0.n == 2 && $0.n == 3) || no }, expectEmpty: true)
        }
    }
}
