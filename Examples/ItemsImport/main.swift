// ItemsImport: the program a newcomer to ModelActorKit writes. A `Library` holds a
// main-actor handler for reads and a background model actor for imports; it imports a
// generated data set in the background with a progress line, then answers a few queries
// on the main actor.
//
//   swift run ItemsImport [count=100000]
//
// The store lives in <temporary directory>/ItemsImport/Items.store and is recreated on
// each run.

import Foundation
import ModelActorKit

// MARK: Model

final class Item: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.indexed) var category: Int64 = 0
    @Attribute var price: Double = 0
    @Attribute var createdAt: Date = Date(timeIntervalSince1970: 0)
}

// MARK: Background imports

/// Imports on a private-queue context of its own; never runs on the main thread.
actor ItemImporter: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor

    init(container: NSPersistentContainer) {
        modelContainer = container
        let context = container.newBackgroundContext()
        context.name = "importer"
        modelExecutor = NSModelObjectContextExecutor(context: context)
    }

    /// Inserts `count` generated items, saving every `batch` items and reporting progress.
    func importItems(count: Int, batch: Int, progress: @Sendable (Int) -> Void) throws {
        var generator = SplitMix64(seed: 42)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        for i in 0..<count {
            let item = Item(context: modelContext)
            item.title = "Item \(i)"
            item.category = Int64(generator.next() % 20)
            item.price = Double(generator.next() % 100_000) / 100
            item.createdAt = start.addingTimeInterval(Double(i) * 60)
            if (i + 1) % batch == 0 || i + 1 == count {
                try modelContext.save()
                modelContext.reset()  // keep memory flat: saved objects are not needed here
                progress(i + 1)
            }
        }
    }
}

// MARK: Main-actor reads

/// Answers questions on the main actor, through the container's view context.
@MainActor
final class ItemQueries: NSMainModelActor {
    let modelContainer: NSPersistentContainer

    init(modelContainer: NSPersistentContainer) {
        self.modelContainer = modelContainer
    }

    func total() throws -> Int {
        try modelContext.count(for: Item.fetchRequest())
    }

    func count(inCategory category: Int64) throws -> Int {
        let request = Item.fetchRequest()
        request.predicate = #Predicate<Item> { $0.category == category }
        return try modelContext.count(for: request)
    }

    func mostExpensive(_ n: Int, inCategory category: Int64) throws -> [(String, Double)] {
        let request = Item.fetchRequest()
        request.predicate = #Predicate<Item> { $0.category == category }
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Item.price, ascending: false)]
        request.fetchLimit = n
        return try modelContext.fetch(request).map { ($0.title, $0.price) }
    }

    func countPriced(below limit: Double) throws -> Int {
        let request = Item.fetchRequest()
        request.predicate = #Predicate<Item> { $0.price < limit }
        return try modelContext.count(for: request)
    }
}

// MARK: The library

/// What an app would hold: one container, a background importer and main-actor queries.
@MainActor
final class Library {
    let container: NSPersistentContainer
    let importer: ItemImporter
    let queries: ItemQueries

    init(storeURL: URL) async throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
        container = NSPersistentContainer(name: "Items", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: storeURL)]
        try await container.loadPersistentStores()
        importer = ItemImporter(container: container)
        queries = ItemQueries(modelContainer: container)
    }
}

/// A small deterministic random generator, so every run imports the same data.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

// MARK: Run

/// Writes straight to standard output (unbuffered), so the progress line and the other
/// lines come out in order even when output is piped.
func say(_ text: String, newline: Bool = true) {
    FileHandle.standardOutput.write(Data((text + (newline ? "\n" : "")).utf8))
}

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ItemsImport", isDirectory: true)
let storeURL = folder.appendingPathComponent("Items.store")
for suffix in ["", "-lock"] { try? FileManager.default.removeItem(atPath: storeURL.path + suffix) }
say("Store: \(storeURL.path)")

let library = try await Library(storeURL: storeURL)
let started = Date()
try await library.importer.importItems(count: count, batch: 10_000) { done in
    let percent = done * 100 / count
    say("\rImporting… \(done)/\(count) (\(percent)%)", newline: done == count)
}
say(String(format: "Imported %d items in %.2f s on a background model actor.", count, Date().timeIntervalSince(started)))

let queries = library.queries
say("Items in the store: \(try queries.total())")
say("Items in category 7: \(try queries.count(inCategory: 7))")
say("Items under 10.00: \(try queries.countPriced(below: 10))")
say("Three most expensive in category 7:")
for (title, price) in try queries.mostExpensive(3, inCategory: 7) {
    say(String(format: "  %@ — %.2f", title, price))
}

