// Observation benchmark: what the Observation bridge costs where it must be cheap.
//
//   swift run -c release --package-path Benchmarks ObservationBenchmark
//
// 1. Reads. An attribute read of an object whose class opted in (`ObservableManagedObject`),
//    outside any `withObservationTracking`, beside the same read of a class that did not opt
//    in, both in a view context that a live `CDEObservationDomain` instruments. 1,000 objects
//    of each, read 1,000 times over (1,000,000 reads), an Int64 and a String attribute;
//    rounds alternate the two classes. Goal: the opted-in read at most 1.3x the other.
// 2. Routing. A background context (a registered producer) changes the title of 10,000
//    objects and saves; the view context, holding all 10,000 with 1,000 of them read by a
//    tracking reader, merges the save (by hand, from its did-save notification, so that the
//    clock sees the merge alone). Rounds alternate with and without a live domain; what the
//    domain adds to the save and to the merge is its cost. Goal: at most 10% of the save.
//
// Best of `PK_BENCH_ROUNDS` rounds (default 7 here), one process, release build. Figures of
// one run are printed as a table; `PK_BENCH_JSON=<file>` writes them as JSON too.

import BenchmarkSupport
import Foundation
import Observation
import PersistenceKit

final class ObservedItem: NSManagedObject, ObservableManagedObject {
    @Attribute var title: String = ""
    @Attribute var rank: Int64 = 0
}

final class PlainItem: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var rank: Int64 = 0
}

let rounds = max(1, Int(ProcessInfo.processInfo.environment["PK_BENCH_ROUNDS"] ?? "") ?? 7)

@MainActor
func makeContainer() throws -> NSPersistentContainer {
    let model = try NSManagedObjectModel(managedObjectClasses: [ObservedItem.self, PlainItem.self])
    let container = NSPersistentContainer(name: "observation-bench", managedObjectModel: model)
    container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
    let failure = LastSave.ErrorBox()
    container.loadPersistentStores { _, error in failure.set(error) }
    if let error = failure.get() { throw error }
    return container
}

// MARK: Reads

/// Seconds for `passes` passes over `objects`, reading `read` of each.
@MainActor
func timeReads<T: NSManagedObject>(_ objects: [T], passes: Int, _ read: (T) -> Int) -> Double {
    var sink = 0
    let t = seconds {
        for _ in 0..<passes {
            for o in objects { sink &+= read(o) }
        }
    }
    if sink == 42 { print("") }  // keeps the reads
    return t
}

@MainActor
func measureReads() throws -> [Comparison] {
    let container = try makeContainer()
    let domain = CDEObservationDomain(container: container)
    let view = container.viewContext
    var observed: [ObservedItem] = []
    var plain: [PlainItem] = []
    for i in 0..<1_000 {
        let o = ObservedItem(context: view)
        o.title = "Item \(i)"
        o.rank = Int64(i)
        observed.append(o)
        let p = PlainItem(context: view)
        p.title = "Item \(i)"
        p.rank = Int64(i)
        plain.append(p)
    }
    try view.save()
    let passes = 1_000
    let reads = Double(observed.count * passes)
    // Warm-up: the first read of each observed object makes its registrar.
    _ = timeReads(observed, passes: 1) { Int($0.rank) }
    _ = timeReads(plain, passes: 1) { Int($0.rank) }
    var results: [Comparison] = []
    for (name, readObserved, readPlain) in [
        ("Int64 attribute read", { (o: ObservedItem) in Int(o.rank) }, { (p: PlainItem) in Int(p.rank) }),
        ("String attribute read", { (o: ObservedItem) in o.title.utf8.count }, { (p: PlainItem) in p.title.utf8.count }),
    ] {
        var ours: [Double?] = []
        var base: [Double] = []
        for _ in 0..<rounds {
            base.append(timeReads(plain, passes: passes, readPlain) / reads * 1e9)
            ours.append(timeReads(observed, passes: passes, readObserved) / reads * 1e9)
        }
        results.append(Comparison(name, durability: "opted in / not", unit: .nanoseconds, ours: ours, sqlite: base))
    }
    withExtendedLifetime(domain) {}
    return results
}

// MARK: The floor

/// What the `@Observable` macro makes of `var value: Int`: a stored value and a getter that
/// tells its registrar of the read. The least any observable read costs.
final class MacroStyleObservable: Observable {
    private let registrar = ObservationRegistrar()
    private var storedValue: Int
    init(_ value: Int) { storedValue = value }
    var value: Int {
        registrar.access(self, keyPath: \.value)
        return storedValue
    }
}

/// The same class without Observation.
final class MacroStylePlain {
    private var storedValue: Int
    init(_ value: Int) { storedValue = value }
    var value: Int { storedValue }
}

extension MacroStyleObservable {
    /// What the macro's setter does around a change: tells the registrar's trackers.
    func markChanged() {
        registrar.withMutation(of: self, keyPath: \.value) {}
    }
}

/// Seconds to wake 1,000 tracked readers of macro-style objects, one `withMutation` each:
/// the least Swift Observation takes to tell 1,000 readers of a change, best of the rounds.
@MainActor
func measureWakeFloor() -> Double {
    let objects = (0..<1_000).map { MacroStyleObservable($0) }
    var best = Double.infinity
    for _ in 0..<rounds {
        let wakes = Wakes()
        for o in objects { withObservationTracking { _ = o.value } onChange: { wakes.record() } }
        let t = seconds { for o in objects { o.markChanged() } }
        precondition(wakes.count == 1_000)
        best = min(best, t)
    }
    return best
}

/// Nanoseconds per read of the macro-style observable class and of the plain one, best of
/// the rounds.
@MainActor
func measureFloor() -> Comparison {
    let observable = (0..<1_000).map { MacroStyleObservable($0) }
    let plain = (0..<1_000).map { MacroStylePlain($0) }
    var ours: [Double?] = []
    var base: [Double] = []
    for _ in 0..<rounds {
        var sink = 0
        base.append(seconds { for _ in 0..<1_000 { for o in plain { sink &+= o.value } } } / 1e6 * 1e9)
        ours.append(seconds { for _ in 0..<1_000 { for o in observable { sink &+= o.value } } } / 1e6 * 1e9)
        if sink == 42 { print("") }
    }
    return Comparison("@Observable-style stored Int read", durability: "access() / none", unit: .nanoseconds, ours: ours, sqlite: base)
}

// MARK: Routing

/// The last did-save notification of a context.
final class LastSave: @unchecked Sendable {
    // @unchecked Sendable: written by the observer inside `save()` on the saving queue, read
    // after `performAndWait` returned; the lock orders the two.
    private let lock = NSLock()
    private var note: Notification?
    func keep(_ n: Notification) { lock.withLock { note = n } }
    var notification: Notification? { lock.withLock { note } }

    /// An error handed out of a completion handler (loading an in-memory store calls it
    /// before it returns).
    final class ErrorBox: @unchecked Sendable {
        // @unchecked Sendable: guarded by `lock`.
        private let lock = NSLock()
        private var error: (any Error)?
        func set(_ e: (any Error)?) { lock.withLock { error = e } }
        func get() -> (any Error)? { lock.withLock { error } }
    }
}

@MainActor
func measureRouting() throws -> (save: Comparison, merge: Comparison, saveTime: Double) {
    let container = try makeContainer()
    let view = container.viewContext
    let count = 10_000
    let background = container.newBackgroundContext()
    let ids: [NSManagedObjectID] = try background.performAndWait {
        let items = (0..<count).map { i -> ObservedItem in
            let o = ObservedItem(context: background)
            o.title = "Item \(i)"
            return o
        }
        try background.save()
        return items.map(\.objectID)
    }
    let viewItems = ids.map { view.object(with: $0) as! ObservedItem }
    let otherContainer = try makeContainer()
    let last = LastSave()
    let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: background, queue: nil) {
        last.keep($0)
    }
    defer { NotificationCenter.default.removeObserver(observer) }

    // Three configurations a round: (0) a live domain and a registered producer: the save
    // reports its changed properties and the merge routes them; (1) the producer registered
    // with no domain: the save reports, the merge (the same merge path) routes nothing;
    // (2) neither: a plain save. Routing's cost is what (0) adds to (1)'s merge, and what a
    // reporting save adds to a plain one.
    var saveReporting: [Double?] = [], savePlain: [Double] = []
    var mergeRouting: [Double?] = [], mergePlain: [Double] = []
    var woken = 0
    for round in 0..<(3 * rounds) {
        let configuration = round % 3
        // (1) registers the producer with a domain of another container: this view context
        // stays bare.
        let domain: CDEObservationDomain? =
            switch configuration {
            case 0: CDEObservationDomain(container: container)
            case 1: CDEObservationDomain(container: otherContainer)
            default: nil
            }
        let registration = domain?.registerChangeProducer(context: background)
        // 1,000 readers, tracked afresh each round (a tracking fires once).
        let wakes = Wakes()
        for o in viewItems.prefix(1_000) {
            withObservationTracking { _ = o.title } onChange: { wakes.record() }
        }
        let saveTime = try background.performAndWait {
            for id in ids { (background.object(with: id) as! ObservedItem).title = "Round \(round) \(id.hashValue)" }
            return try seconds { try background.save() }
        }
        let notification = last.notification!
        let mergeTime = seconds { view.mergeChanges(fromContextDidSave: notification) }
        switch configuration {
        case 0:
            saveReporting.append(saveTime)
            mergeRouting.append(mergeTime)
            woken = wakes.count
        case 1:
            saveReporting.append(saveTime)
            mergePlain.append(mergeTime)
        default:
            savePlain.append(saveTime)
        }
        registration?.invalidate()
        domain?.invalidate()
    }
    precondition(woken == 1_000, "the domain woke \(woken) of 1,000 readers")
    let save = Comparison(
        "10,000-object save", durability: "reporting / plain", unit: .seconds, ours: saveReporting,
        sqlite: Array(savePlain.flatMap { [$0, $0] }))
    let merge = Comparison("its merge into the view context", durability: "routing / not", unit: .seconds, ours: mergeRouting, sqlite: mergePlain)
    return (save, merge, save.sqlite!)
}

/// Counts tracked readers woken.
final class Wakes: @unchecked Sendable {
    // @unchecked Sendable: `onChange` runs on the main thread here, inside the merge.
    var count = 0
    func record() { count += 1 }
}

let reads = try measureReads()
let floor = measureFloor()
let wakeFloor = measureWakeFloor()
let routing = try measureRouting()
print("Observation benchmark, release build, best of \(rounds) rounds.")
print("| workload | compared | ours | baseline | ratio | ratio per round |")
print("|---|---|---|---|---|---|")
for c in reads + [floor, routing.save, routing.merge] {
    print("| \(c.workload) | \(c.durability) | " + c.cells.joined(separator: " | ") + " |")
}
let reporting = max(0, routing.save.ours! - routing.save.sqlite!)
let routed = max(0, routing.merge.ours! - routing.merge.sqlite!)
print(String(format: "Routing 1,000 tracked readers of a 10,000-object save adds %.2f ms to its merge: %.1f%% of the save's %.1f ms (goal: at most 10%%).",
             routed * 1000, routed / routing.saveTime * 100, routing.saveTime * 1000))
print(String(format: "  Of that, waking 1,000 tracked readers through Swift Observation (one withMutation each, @Observable-style objects) takes %.2f ms (%.1f%%): the floor.",
             wakeFloor * 1000, wakeFloor / routing.saveTime * 100))
print(String(format: "Reporting its changed properties adds %.2f ms to the save (%.1f%%): comparing each object's values with its snapshot's.",
             reporting * 1000, reporting / routing.saveTime * 100))
print(String(format: "An observed read adds %.1f ns to a read; Swift Observation's access() alone costs %.1f ns: the floor of any observable read (%.2fx this read).",
             reads[0].ours! - reads[0].sqlite!, floor.ours! - floor.sqlite!, (reads[0].sqlite! + floor.ours! - floor.sqlite!) / reads[0].sqlite!))
try writeJSONIfAsked(reads + [floor, routing.save, routing.merge])
