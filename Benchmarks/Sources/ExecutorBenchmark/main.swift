// Executor throughput: an NSModelActor (jobs on its context's queue) against baselines
// measured in the same run — a plain Swift actor (default executor), the textbook
// SerialExecutor that forwards every job to its own DispatchQueue, and the floor of any
// custom executor on Dispatch's global pool: one `DispatchQueue.global().async` per job and
// nothing else (not serial, so it is only run where one task at a time uses the actor).
//
// For workload (a) only, a fourth baseline: an executor that runs each job inside
// `enqueue`, with no queue at all. Swift 6.3's runtime moves a task without an enqueue only
// from a job that the generic executor or a default actor started, and only onto a default
// actor or the generic executor. So for a caller with no task-executor preference, a hop
// onto any custom executor is an enqueue on it, and the hop back is an enqueue on the
// global pool. This executor pays only the second: the least a custom executor could pay
// for (a). It is not a usable executor (a job enqueued from inside another would nest, and
// `enqueue` would run user code on whatever thread called it), which is why no other
// workload runs it.
//
//   swift run -c release --package-path Benchmarks ExecutorBenchmark [iterations]
//
// Prints ns/op for each workload and the ratios ours/plain, ours/floor and textbook/ours,
// then the inline bound of (a) and its ratio to the plain actor.

import Dispatch
import Foundation
import ModelActorKit

final class BenchItem: NSManagedObject {
    @Attribute var count: Int64 = 0
}

// MARK: The three actors under test

actor PlainActor {
    var n = 0
    func hop() { n &+= 1 }
    func ping(_ other: PlainActor, _ remaining: Int) async {
        n &+= 1
        if remaining > 0 { await other.ping(self, remaining - 1) }
    }
}

/// The textbook design: one DispatchQueue per executor, one `queue.async` per job.
final class DispatchQueueExecutor: SerialExecutor {
    let queue = DispatchQueue(label: "textbook")
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { unowned.runSynchronously(on: executor) }
    }
    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}

/// The least a custom executor can do: hand each job to the global pool. Not serial — two
/// jobs may run at once — so only single-task workloads use it.
final class GlobalPoolFloorExecutor: SerialExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        DispatchQueue.global().async { unowned.runSynchronously(on: executor) }
    }
    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}

/// Runs each job inside `enqueue`: the least a hop onto a custom executor could cost a
/// caller with no task-executor preference (see the header). Only workload (a) uses it.
final class InlineBoundExecutor: SerialExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        job.runSynchronously(on: asUnownedSerialExecutor())
    }
    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
}

actor InlineBoundActor {
    let executor = InlineBoundExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    var n = 0
    func hop() { n &+= 1 }
}

actor FloorActor {
    let executor = GlobalPoolFloorExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    var n = 0
    func hop() { n &+= 1 }
    func ping(_ other: FloorActor, _ remaining: Int) async {
        n &+= 1
        if remaining > 0 { await other.ping(self, remaining - 1) }
    }
}

actor TextbookActor {
    let executor = DispatchQueueExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    var n = 0
    func hop() { n &+= 1 }
    func ping(_ other: TextbookActor, _ remaining: Int) async {
        n &+= 1
        if remaining > 0 { await other.ping(self, remaining - 1) }
    }
}

actor ModelActor: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    var n = 0
    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }
    func hop() { n &+= 1 }
    func ping(_ other: ModelActor, _ remaining: Int) async {
        n &+= 1
        if remaining > 0 { await other.ping(self, remaining - 1) }
    }
}

// MARK: Harness

func nanoseconds(_ iterations: Int, _ body: () async -> Void) async -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(iterations)
}

func sequential<A>(_ actor: A, _ n: Int, _ hop: @escaping @Sendable (A) async -> Void) async -> Double where A: Sendable {
    await Task.detached {
        for _ in 0..<1000 { await hop(actor) }  // warm-up
        return await nanoseconds(n) { for _ in 0..<n { await hop(actor) } }
    }.value
}

func hammer<A>(_ actor: A, _ n: Int, _ hop: @escaping @Sendable (A) async -> Void) async -> Double where A: Sendable {
    await nanoseconds(n) {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<(n / 8) { await hop(actor) } }
            }
        }
    }
}

let iterations = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let model = try NSManagedObjectModel(managedObjectClasses: [BenchItem.self])
let container = NSPersistentContainer(name: "bench", managedObjectModel: model)
container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
try await container.loadPersistentStores()

let plain = PlainActor(), plain2 = PlainActor()
let textbook = TextbookActor(), textbook2 = TextbookActor()
let floor = FloorActor(), floor2 = FloorActor()
let inlineBound = InlineBoundActor()
let ours = ModelActor(container: container), ours2 = ModelActor(container: container)
let context = container.newBackgroundContext()

struct Row {
    let name: String; let plain: Double; let textbook: Double; let floor: Double; let ours: Double
    /// The inline-bound executor's figure: workload (a) only.
    var inlineBound = Double.nan
}
var rows: [Row] = []

rows.append(
    Row(
        name: "(a) sequential hops",
        plain: await sequential(plain, iterations) { await $0.hop() },
        textbook: await sequential(textbook, iterations) { await $0.hop() },
        floor: await sequential(floor, iterations) { await $0.hop() },
        ours: await sequential(ours, iterations) { await $0.hop() }))
rows[0].inlineBound = await sequential(inlineBound, iterations) { await $0.hop() }

// (a') The same loop written inline: the compiler sees nothing between two calls that needs
// the caller's executor, so the task stays on the actor's executor from one call to the
// next and no hop happens — for every executor alike. (In (a) each call returns through a
// closure, which forces the hop back.)
func inlineLoop(_ body: @escaping @Sendable () async -> Void) async -> Double {
    await Task.detached { await nanoseconds(iterations) { await body() } }.value
}
rows.append(
    Row(
        name: "(a') the same loop, inline",
        plain: await inlineLoop { for _ in 0..<iterations { await plain.hop() } },
        textbook: await inlineLoop { for _ in 0..<iterations { await textbook.hop() } },
        floor: await inlineLoop { for _ in 0..<iterations { await floor.hop() } },
        ours: await inlineLoop { for _ in 0..<iterations { await ours.hop() } }))

let performRoundTrip = await Task.detached {
    for _ in 0..<1000 { await context.perform {} }
    return await nanoseconds(iterations) { for _ in 0..<iterations { await context.perform {} } }
}.value
rows.append(Row(name: "(b) await context.perform {}", plain: .nan, textbook: .nan, floor: .nan, ours: performRoundTrip))

rows.append(
    Row(
        name: "(c) 8 tasks, one actor",
        plain: await hammer(plain, iterations) { await $0.hop() },
        textbook: await hammer(textbook, iterations) { await $0.hop() },
        floor: .nan,  // not serial: eight tasks would race on its state
        ours: await hammer(ours, iterations) { await $0.hop() }))

let pings = iterations / 2
rows.append(
    Row(
        name: "(d) two actors ping-pong",
        plain: await Task.detached { await nanoseconds(pings) { await plain.ping(plain2, pings) } }.value,
        textbook: await Task.detached { await nanoseconds(pings) { await textbook.ping(textbook2, pings) } }.value,
        floor: await Task.detached { await nanoseconds(pings) { await floor.ping(floor2, pings) } }.value,
        ours: await Task.detached { await nanoseconds(pings) { await ours.ping(ours2, pings) } }.value))

func f(_ x: Double) -> String { x.isNaN ? "—" : String(format: "%.0f", x) }
func r(_ x: Double) -> String { x.isNaN ? "—" : String(format: "%.1fx", x) }
print("Executor benchmark, \(iterations) iterations, ns per operation (release build)")
print("workload                       plain actor   textbook DQ   pool floor   NSModelActor   ours/plain   ours/floor   textbook/ours")
for row in rows {
    print(
        row.name.padding(toLength: 30, withPad: " ", startingAt: 0),
        f(row.plain).leftPad(12), f(row.textbook).leftPad(13), f(row.floor).leftPad(12), f(row.ours).leftPad(14),
        r(row.ours / row.plain).leftPad(12), r(row.ours / row.floor).leftPad(12), r(row.textbook / row.ours).leftPad(15))
}
print(
    "(a) inline bound (each job run inside enqueue; not a usable executor): \(f(rows[0].inlineBound)) ns,",
    "\(r(rows[0].inlineBound / rows[0].plain)) plain; ours \(r(rows[0].ours / rows[0].inlineBound)) of it")

// (e) Liveness under long work: 8 queues each given one 100 ms CPU-bound block at once, and
// the time until every block has started; private contexts beside serial DispatchQueues.
// (Dispatch gives each serial queue a thread of its own; the pool alone would run two at a
// time on two cores, the last starting after 300 ms.) Best of 3.

/// Latest start of `count` blocks enqueued at once by `enqueue`, each spinning 100 ms, in ms.
func lastStart(_ count: Int, _ enqueue: (@escaping @Sendable () -> Void) -> Void) -> Double {
    let starts = StartTimes()
    let done = DispatchGroup()
    let t0 = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<count {
        done.enter()
        enqueue {
            starts.add(DispatchTime.now().uptimeNanoseconds)
            let end = DispatchTime.now().uptimeNanoseconds + 100_000_000
            while DispatchTime.now().uptimeNanoseconds < end {}
            done.leave()
        }
    }
    done.wait()
    return Double(starts.latest - t0) / 1e6
}

/// The blocks' start times, from any thread.
final class StartTimes: @unchecked Sendable {
    // @unchecked Sendable: `latest` is read and written under `lock`.
    private let lock = NSLock()
    private var value: UInt64 = 0
    func add(_ t: UInt64) { lock.withLock { value = max(value, t) } }
    var latest: UInt64 { lock.withLock { value } }
}

var oursLastStart = Double.infinity, serialLastStart = Double.infinity
for _ in 0..<3 {
    let contexts = (0..<8).map { _ in container.newBackgroundContext() }
    var next = 0
    oursLastStart = min(oursLastStart, lastStart(8) { block in contexts[next].perform(block); next += 1 })
    let queues = (0..<8).map { DispatchQueue(label: "serial \($0)") }
    var nextQueue = 0
    serialLastStart = min(serialLastStart, lastStart(8) { block in queues[nextQueue].async(execute: block); nextQueue += 1 })
}
print(
    String(
        format: "(e) 8 queues × one 100 ms CPU block: every block started after %.1f ms (private contexts) vs %.1f ms (serial DispatchQueues): %.2fx",
        oursLastStart, serialLastStart, oursLastStart / serialLastStart))

if let path = ProcessInfo.processInfo.environment["PK_BENCH_JSON"] {
    /// One line of the table (ns per operation; null where a design does not apply).
    struct ResultLine: Encodable {
        var workload: String
        var plainActor: Double?
        var textbookDispatchQueue: Double?
        var poolFloor: Double?
        var modelActor: Double?
        /// The inline-bound executor (workload (a) only).
        var inlineBound: Double?
    }
    func finite(_ x: Double) -> Double? { x.isFinite ? x : nil }
    let lines = rows.map {
        ResultLine(
            workload: $0.name, plainActor: finite($0.plain), textbookDispatchQueue: finite($0.textbook),
            poolFloor: finite($0.floor), modelActor: finite($0.ours), inlineBound: finite($0.inlineBound))
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(lines).write(to: URL(fileURLWithPath: path))
    print("wrote \(path)")
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
