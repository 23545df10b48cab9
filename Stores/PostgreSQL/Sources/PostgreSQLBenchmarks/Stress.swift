import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Synchronization

// Child processes: `writer` for the scaling figures, `stress-seed` and `stress` for the
// store's multi-process test (Tests/…/Concurrency/MultiProcessTests.swift).

final class Shelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf", deleteRule: .nullifyDeleteRule) var books: Set<Book>
}

final class Book: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var pages: Int64 = 0
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var shelf: Shelf?
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule) var authors: Set<Author>
}

final class Author: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "authors", deleteRule: .nullifyDeleteRule) var books: Set<Book>
}

func stressModel() throws -> NSManagedObjectModel {
    try NSManagedObjectModel(managedObjectClasses: [Shelf.self, Book.self, Author.self])
}

/// `writer <schema> <seconds> <index> <start at, seconds since 1970>`: from the start time,
/// saves one new item per save for `seconds`; prints the number of saves.
func runWriter(arguments: [String], url: URL) throws {
    guard arguments.count == 4, let duration = Double(arguments[1]), let start = Double(arguments[3]) else {
        throw RawLibPQ.Failure(description: "usage: writer <schema> <seconds> <index> <start>")
    }
    let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
    let container = try openContainer(url, schema: arguments[0], model: model)
    let context = container.newBackgroundContext()
    let wait = start - Date().timeIntervalSince1970
    if wait > 0 { Thread.sleep(forTimeInterval: wait) }  // all writers start together
    var saves = 0
    try context.performAndWait {
        let end = now() + duration
        while now() < end {
            let item = Item(context: context)
            item.title = "writer \(arguments[2]) item \(saves)"
            item.count = Int64(saves % 1000)
            try context.save()
            context.reset()
            saves += 1
        }
    }
    print(saves)
}

/// Saves per second with 1, 2, 4 and 8 writer processes on disjoint objects.
func runScaling(seconds duration: Double, url: URL) throws {
    let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
    let schema = "pk_bench_scaling"
    try PostgreSQLStore.destroy(at: url, options: [PostgreSQLStore.schemaOptionKey: schema], model: model)
    do { _ = try openContainer(url, schema: schema, model: model, listens: false) }
    print("Saves per second, one new object per save, \(duration) s per run, processes writing disjoint objects")
    print("| processes | saves/s | per process | vs 1 process |")
    print("|---:|---:|---:|---:|")
    var single = 0.0
    for k in [1, 2, 4, 8] {
        let start = Date().timeIntervalSince1970 + 1.5
        let children = try (0..<k).map { i -> (Process, Pipe) in
            let p = Process()
            let out = Pipe()
            p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            p.arguments = ["writer", schema, String(duration), String(i), String(start)]
            p.standardOutput = out
            try p.run()
            return (p, out)
        }
        var total = 0
        for (p, out) in children {
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            total += Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        let rate = Double(total) / duration
        if k == 1 { single = rate }
        print(String(format: "| %d | %.0f | %.0f | %.2fx |", k, rate, rate / Double(k), rate / single))
    }
    try PostgreSQLStore.destroy(at: url, options: [PostgreSQLStore.schemaOptionKey: schema], model: model)
}

/// `stress-seed <schema>`: creates the store with 5 shelves and 6 authors.
func runStressSeed(arguments: [String], url: URL) throws {
    guard let schema = arguments.first else { throw RawLibPQ.Failure(description: "usage: stress-seed <schema>") }
    let container = try openContainer(url, schema: schema, model: try stressModel(), listens: false)
    let context = container.newBackgroundContext()
    try context.performAndWait {
        for i in 0..<5 { Shelf(context: context).name = "shelf \(i)" }
        for i in 0..<6 { Author(context: context).name = "author \(i)" }
        try context.save()
    }
}

/// Output lines shared by threads.
final class Lines: Sendable {
    let value = Mutex<[String]>([])
}

/// A count shared by threads.
final class Counter: Sendable {
    let value = Mutex(0)
}

/// `stress <schema> <seconds> <process>`: 4 contexts, each on its own thread, insert books
/// onto shared shelves and authors, update and move random books and delete some of their
/// own, merging the other processes' saves as they arrive, for `seconds`. Prints `ACK
/// <title>` for every book whose insert was saved and `GONE <title>` for each this process
/// deleted, then `MERGED <n>` (remote changes received) and `FAILED <n>` (saves that threw).
func runStressProcess(arguments: [String], url: URL) throws {
    guard arguments.count == 3, let duration = Double(arguments[1]), let process = Int(arguments[2]) else {
        throw RawLibPQ.Failure(description: "usage: stress <schema> <seconds> <process>")
    }
    let container = try openContainer(url, schema: arguments[0], model: try stressModel())
    let merged = Counter()
    let observer = NotificationCenter.default.addObserver(
        forName: .NSPersistentStoreRemoteChange, object: container.persistentStoreCoordinator, queue: nil
    ) { _ in merged.value.withLock { $0 += 1 } }
    defer { NotificationCenter.default.removeObserver(observer) }
    let lines = Lines()
    let failed = Counter()
    let end = now() + duration
    let done = DispatchGroup()
    for c in 0..<4 {
        done.enter()
        // A thread per context, as an app's request handlers would save.
        Thread {
            defer { done.leave() }
            runStressContext(c, process: process, container: container, until: end, lines: lines, failed: failed)
        }.start()
    }
    done.wait()
    var out = lines.value.withLock { $0 }
    out.append("MERGED \(merged.value.withLock { $0 })")
    out.append("FAILED \(failed.value.withLock { $0 })")
    print(out.joined(separator: "\n"))
}

/// One context of a `stress` process: saves until `end`, recording what it saved.
func runStressContext(_ c: Int, process: Int, container: NSPersistentContainer, until end: Double, lines: Lines, failed: Counter) {
    let context = container.newBackgroundContext()
    context.automaticallyMergesChangesFromParent = true
    context.mergePolicy = .mergeByPropertyObjectTrump
    var rng = SystemRandomNumberGenerator()
    var mine: [(NSManagedObjectID, String)] = []
    var n = 0
    context.performAndWait {
        while now() < end {
            n += 1
            var inserted: Book?
            var deleted: (NSManagedObjectID, String)?
            do {
                let shelves = try context.fetch(NSFetchRequest<Shelf>(entityName: "Shelf"))
                let authors = try context.fetch(NSFetchRequest<Author>(entityName: "Author"))
                let roll = Int.random(in: 0..<100, using: &rng)
                if roll < 60 || mine.isEmpty {
                    let b = Book(context: context)
                    b.title = "p\(process)-c\(c)-\(n)"
                    b.shelf = shelves.randomElement(using: &rng)
                    for a in authors where Int.random(in: 0..<3, using: &rng) == 0 { b.authors.insert(a) }
                    inserted = b
                } else if roll < 90 {
                    let r = NSFetchRequest<Book>(entityName: "Book")
                    let total = try context.count(for: r)
                    r.fetchOffset = Int.random(in: 0..<max(total, 1), using: &rng)
                    r.fetchLimit = 1
                    r.sortKeys = [SortKey("title")]
                    if let b = try context.fetch(r).first {
                        b.pages += 1
                        b.shelf = shelves.randomElement(using: &rng)
                        if let a = authors.randomElement(using: &rng) {
                            if b.authors.contains(a) { b.authors.remove(a) } else { b.authors.insert(a) }
                        }
                    }
                } else {
                    let k = Int.random(in: 0..<mine.count, using: &rng)
                    deleted = mine.remove(at: k)
                    if let d = deleted { context.delete(try context.existingObject(with: d.0)) }
                }
                try context.save()
                if let inserted {
                    let title = inserted.title
                    mine.append((inserted.objectID, title))
                    lines.value.withLock { $0.append("ACK \(title)") }
                }
                if let deleted { lines.value.withLock { $0.append("GONE \(deleted.1)") } }
            } catch {
                let first = failed.value.withLock { n in
                    n += 1
                    return n <= 3
                }
                if first { lines.value.withLock { $0.append("ERROR \(error)") } }
                if let deleted { mine.append(deleted) }
                context.rollback()
            }
            if n % 20 == 0 { context.reset() }
        }
    }
}
