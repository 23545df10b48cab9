import Foundation
import Testing
@testable import PersistenceKit

/// Differential tests of the hand-written tables against `Dictionary`, with random
/// operation sequences (seeded, so a failure reproduces).
@Suite("Tables checked against Dictionary and Set") struct DataStructureTests {
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test(arguments: [1, 2, 3]) func objectRegistryMatchesDictionary(seed: UInt64) throws {
        let model = try Fixtures.model()
        model.seal()
        let entity = try #require(model.entitiesByName["Book"])
        var rng = SplitMix(state: seed)
        var registry = ObjectRegistry()
        var reference: [NSManagedObjectID: NSManagedObject] = [:]
        var pool: [NSManagedObject] = []
        for _ in 0..<600 {
            let o = NSManagedObject(entity: entity, insertInto: nil)
            if Bool.random(using: &rng) {
                o.objectID = NSManagedObjectID(
                    entity: entity, row: StoreRowID(entity: entity.index, primaryKey: Int64.random(in: 1...10_000, using: &rng)),
                    store: "S")
            }
            pool.append(o)
        }
        for step in 0..<20_000 {
            let o = pool.randomElement(using: &rng)!
            switch Int.random(in: 0..<3, using: &rng) {
            case 0:
                if reference[o.objectID] == nil || reference[o.objectID] === o {
                    registry.insert(o)
                    reference[o.objectID] = o
                }
            case 1:
                // Removes by key: whatever object holds the key (as the context does).
                registry.remove(o.objectID)
                reference[o.objectID] = nil
            default:
                #expect(registry[o.objectID] === reference[o.objectID], "lookup differs at step \(step)")
            }
            #expect(registry.count == reference.count)
        }
        for o in pool { #expect(registry[o.objectID] === reference[o.objectID]) }
        #expect(Set(registry.values.map(ObjectIdentifier.init)) == Set(reference.values.map(ObjectIdentifier.init)))
    }

    /// `insert(contentsOf:)` sorts large batches by bucket: it must leave the same table, and
    /// report the same replaced objects, as inserting one at a time — with keys registered
    /// already, repeated keys inside the batch, and both sides of the bulk threshold.
    @Test(arguments: [(UInt64(10), 100), (UInt64(11), ObjectRegistry.bulkThreshold + 1), (UInt64(12), 20_000)] as [(UInt64, Int)])
    func bulkInsertMatchesOneAtATime(seed: UInt64, batch: Int) throws {
        let model = try Fixtures.model()
        model.seal()
        let entity = try #require(model.entitiesByName["Book"])
        var rng = SplitMix(state: seed)
        func object(_ pk: Int64) -> NSManagedObject {
            let o = NSManagedObject(entity: entity, insertInto: nil)
            o.objectID = NSManagedObjectID(entity: entity, row: StoreRowID(entity: entity.index, primaryKey: pk), store: "S")
            return o
        }
        let keyRange: ClosedRange<Int64> = 1...Int64(batch * 2)
        var bulk = ObjectRegistry()
        var single = ObjectRegistry()
        for _ in 0..<(batch / 3) {
            let o = object(Int64.random(in: keyRange, using: &rng))
            bulk.insert(o)
            single.insert(o)
        }
        // Sequential keys, as a save hands them out, then random ones that repeat some.
        let objects = (0..<batch).map { i in object(i % 2 == 0 ? Int64(i + 1) : Int64.random(in: keyRange, using: &rng)) }
        let replacedInBulk = bulk.insert(contentsOf: objects)
        let replacedSingly = objects.compactMap { single.insert($0) }
        #expect(Set(replacedInBulk.map(ObjectIdentifier.init)) == Set(replacedSingly.map(ObjectIdentifier.init)))
        #expect(replacedInBulk.count == replacedSingly.count)
        #expect(!replacedSingly.isEmpty, "the batch repeats keys, so some objects are replaced")
        #expect(bulk.count == single.count)
        for pk in keyRange {
            let id = NSManagedObjectID(entity: entity, row: StoreRowID(entity: entity.index, primaryKey: pk), store: "S")
            #expect(bulk[id] === single[id], "lookup of row \(pk) differs")
        }
        // The table stays usable: removing everything through it empties it.
        for o in bulk.values { bulk.remove(o) }
        #expect(bulk.isEmpty)
    }

    @Test(arguments: [4, 5, 6]) func rowTableMatchesDictionary(seed: UInt64) throws {
        var rng = SplitMix(state: seed)
        var table = RowTable()
        var reference: [Int64: FileStore.RowRef] = [:]
        for step in 0..<30_000 {
            // Mostly small keys (the dense part), sometimes huge ones (the overflow part),
            // sometimes keys just past the end (growth that must absorb overflow keys).
            let pk: Int64
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: pk = Int64.random(in: 1...(1 << 40), using: &rng)
            case 1: pk = Int64(table.count) * 4 + Int64.random(in: 0...(1 << 21), using: &rng)
            default: pk = Int64.random(in: 1...5_000, using: &rng)
            }
            if Int.random(in: 0..<3, using: &rng) == 0 {
                #expect(table.removeValue(forKey: pk)?.offset == reference.removeValue(forKey: pk)?.offset)
            } else {
                let ref = FileStore.RowRef(offset: step, length: 1, version: 1)
                #expect(table.updateValue(ref, forKey: pk)?.offset == reference.updateValue(ref, forKey: pk)?.offset)
            }
            #expect(table.count == reference.count)
        }
        for (pk, ref) in reference { #expect(table[pk]?.offset == ref.offset) }
        var visited: [Int64] = []
        try table.forEachRow { pk, _ in visited.append(pk) }
        #expect(visited == reference.keys.sorted())
    }

    /// The index's key sets against `Set`: inserts, removals (backward shifts across the
    /// position table's wrap-around included, with keys packed into few home slots),
    /// membership and the elements, through many growths; and the keys stay in the order
    /// they were added while nothing is removed.
    @Test(arguments: [7, 8, 9]) func keySetMatchesSet(seed: UInt64) {
        var rng = SplitMix(state: seed)
        var keys = KeySet()
        var reference = Set<Int64>()
        for _ in 0..<40_000 {
            // A narrow range most of the time, so that probe runs collide and wrap.
            let key = Bool.random(using: &rng) ? Int64.random(in: 1...300, using: &rng) : Int64.random(in: 1...Int64.max, using: &rng)
            if Int.random(in: 0..<5, using: &rng) < 2 {
                #expect(keys.remove(key) == (reference.remove(key) != nil))
            } else if !reference.contains(key) {  // an index never adds a key twice
                #expect(!keys.contains(key))
                keys.insert(key)
                reference.insert(key)
            } else {
                #expect(keys.contains(key))
            }
            #expect(keys.count == reference.count)
        }
        for key in Int64(1)...400 { #expect(keys.contains(key) == reference.contains(key), "\(key)") }
        #expect(keys.elements.sorted() == reference.sorted())
        for key in reference { keys.remove(key) }
        #expect(keys.isEmpty && keys.elements.isEmpty)
        var added = KeySet()
        for key in Int64(1)...100 { added.insert(key) }
        #expect(added.elements == Array(1...100))
    }

    /// Changing an indexed value of many rows in one save, and deleting them, costs time in
    /// proportion to the rows: the fetch by the index still finds exactly the right rows.
    @Test func indexedLowCardinalityValueSurvivesBulkChanges() throws {
        var index = AttributeIndex()
        for pk in Int64(1)...20_000 { index.add(.integer(pk & 1), pk) }
        for pk in Int64(1)...20_000 where pk % 3 == 0 {
            index.remove(.integer(pk & 1), pk)
            index.add(.integer(1 - (pk & 1)), pk)
        }
        /// The value row `pk` has now: flipped for every third row.
        func value(_ pk: Int64) -> Int64 { pk % 3 == 0 ? 1 - (pk & 1) : pk & 1 }
        let found = index.keys(matching: StoreFilter.Condition(property: 0, .equal, .integer(1))) ?? []
        let expected: [Int64] = (Int64(1)...20_000).filter { value($0) == 1 }
        #expect(found.sorted() == expected)
        for pk in Int64(1)...20_000 { index.remove(.integer(value(pk)), pk) }
        #expect(index.keysByValue.isEmpty)
        #expect(index.keys(matching: StoreFilter.Condition(property: 0, .greaterOrEqual, .integer(0)))?.isEmpty == true)
    }
}
