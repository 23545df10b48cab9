// ItemsImportPostgreSQL: the ItemsImport example against a PostgreSQL database. A model
// actor imports generated items in the background, saving every 10,000, while a second
// process (or a second run) sees them arrive; then the main actor answers a few queries.
//
//   PK_POSTGRES_URL=postgresql://user@localhost/app swift run --package-path Stores/PostgreSQL ItemsImportPostgreSQL [count=100000]
//
// The items live in the schema `items_example`, emptied at the start of each run.

import Foundation
import ModelActorKit
import PersistenceKitPostgreSQL

final class Item: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute(.indexed) var category: Int64 = 0
    @Attribute var price: Double = 0
    @Attribute var createdAt: Date = Date(timeIntervalSince1970: 0)
}

/// Imports on a background context of its own.
actor Importer: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor

    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }

    func importItems(count: Int, batch: Int, progress: @Sendable (Int) -> Void) throws {
        var seed: UInt64 = 42
        func next() -> UInt64 {
            // SplitMix64: the same items on every run.
            seed &+= 0x9E37_79B9_7F4A_7C15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        for i in 0..<count {
            let item = Item(context: modelContext)
            item.title = "Item \(i)"
            item.category = Int64(next() % 20)
            item.price = Double(next() % 100_000) / 100
            item.createdAt = start.addingTimeInterval(Double(i) * 60)
            if (i + 1) % batch == 0 || i + 1 == count {
                try modelContext.save()  // one transaction; other processes are notified
                modelContext.reset()
                progress(i + 1)
            }
        }
    }
}

/// Reads on the main actor through the view context, which merges other processes' saves.
@MainActor
final class Queries: NSMainModelActor {
    let modelContainer: NSPersistentContainer
    init(modelContainer: NSPersistentContainer) { self.modelContainer = modelContainer }

    func total() throws -> Int { try modelContext.count(for: Item.fetchRequest()) }

    func cheapest(_ n: Int, inCategory category: Int64) throws -> [(String, Double)] {
        let request = Item.fetchRequest()
        request.predicate = #Predicate<Item> { $0.category == category }
        request.sortDescriptors = [NSSortDescriptor(keyPath: \Item.price, ascending: true)]
        request.fetchLimit = n
        return try modelContext.fetch(request).map { ($0.title, $0.price) }
    }
}

func say(_ text: String, newline: Bool = true) {
    FileHandle.standardOutput.write(Data((text + (newline ? "\n" : "")).utf8))
}

guard let text = ProcessInfo.processInfo.environment["PK_POSTGRES_URL"], let url = URL(string: text) else {
    say("Set PK_POSTGRES_URL to the database, for example postgresql://\(NSUserName())@localhost/postgres")
    exit(2)
}
let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
let options = [PostgreSQLStore.schemaOptionKey: "items_example"]
try PostgreSQLStore.destroy(at: url, options: options, model: model)

PostgreSQLStore.register()
let container = NSPersistentContainer(name: "Items", managedObjectModel: model)
let description = NSPersistentStoreDescription(url: url, type: NSPostgreSQLStoreType)
for (key, value) in options { description.setOption(value, forKey: key) }
container.persistentStoreDescriptions = [description]
try await container.loadPersistentStores()
container.viewContext.automaticallyMergesChangesFromParent = true

let started = Date()
try await Importer(container: container).importItems(count: count, batch: 10_000) { done in
    say("\rImporting… \(done)/\(count)", newline: done == count)
}
say(String(format: "Imported %d items in %.2f s.", count, Date().timeIntervalSince(started)))
let queries = Queries(modelContainer: container)
say("Items in the database: \(try queries.total())")
say("Three cheapest in category 7:")
for (title, price) in try queries.cheapest(3, inCategory: 7) { say(String(format: "  %@ — %.2f", title, price)) }
