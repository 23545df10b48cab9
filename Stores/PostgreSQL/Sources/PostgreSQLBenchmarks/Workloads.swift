import Foundation
import Synchronization
import PersistenceKit
import PersistenceKitPostgreSQL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Seconds on `CLOCK_MONOTONIC`.
func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// The seconds `body` takes.
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return now() - start
}

/// One side's figures for the five workloads (the file-store benchmark's workloads).
struct Figures {
    var insertSave = 0.0  // s, N inserts in one save
    var singleSave = 0.0  // µs per single-object save
    var indexedFetch = 0.0  // s for 100 indexed fetches
    var indexedRows = 0
    var scanFetch = 0.0  // s
    var scanRows = 0
    var reopenCount = 0.0  // s, open and count
    var reopenedRows = 0
    /// The two fetches at the store's level (`PersistentStore.fetchRows`: rows decoded, no
    /// objects made), ours only: what the object API adds on top is the rest.
    var indexedStoreFetch = 0.0  // s
    var scanStoreFetch = 0.0  // s
}

final class Item: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var timestamp: Double = 0
    @Attribute(.indexed) var count: Int64 = 0
    @Attribute var flag: Int64 = 0
}

func openContainer(_ url: URL, schema: String, model: NSManagedObjectModel, listens: Bool = true) throws -> NSPersistentContainer {
    PostgreSQLStore.register()
    let container = NSPersistentContainer(name: "bench", managedObjectModel: model)
    let description = NSPersistentStoreDescription(url: url, type: NSPostgreSQLStoreType)
    description.setOption(schema, forKey: PostgreSQLStore.schemaOptionKey)
    description.setOption(listens ? "true" : "false", forKey: PostgreSQLStore.listensOptionKey)
    container.persistentStoreDescriptions = [description]
    let failure = ErrorBox()
    container.loadPersistentStores { _, error in failure.error.withLock { $0 = error.map { "\($0)" } } }
    if let message = failure.error.withLock({ $0 }) { throw RawLibPQ.Failure(description: message) }
    return container
}

/// The load's error message, written by its completion handler.
final class ErrorBox: Sendable {
    let error = Mutex<String?>(nil)
}

/// The five workloads through the object API on the PostgreSQL store.
func runOurs(n: Int, url: URL) throws -> Figures {
    let model = try NSManagedObjectModel(managedObjectClasses: [Item.self])
    let schema = "pk_bench_ours"
    try PostgreSQLStore.destroy(at: url, options: [PostgreSQLStore.schemaOptionKey: schema], model: model)
    var f = Figures()
    do {
        let listens = ProcessInfo.processInfo.environment["PK_BENCH_LISTENS"] != "false"
        let container = try openContainer(url, schema: schema, model: model, listens: listens)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var items: [Item] = []
            items.reserveCapacity(n)
            f.insertSave = try seconds {
                for i in 0..<n {
                    let item = Item(context: context)
                    item.title = "Item number \(i)"
                    item.timestamp = 1e9 + Double(i)
                    item.count = Int64(i % 1000)
                    item.flag = Int64(i & 1)
                    items.append(item)
                }
                try context.save()
            }
            let ids = items.map(\.objectID)
            items = []
            context.reset()
            f.singleSave =
                try seconds {
                    for i in 0..<1000 {
                        guard let item = context.object(with: ids[(i * 97) % n]) as? Item else { continue }
                        item.title = "renamed"
                        try context.save()
                    }
                } * 1e6 / 1000
        }
        let reader = container.newBackgroundContext()
        try reader.performAndWait {
            f.indexedFetch = try seconds {
                for k in Int64(0)..<100 {
                    let request = Item.fetchRequest()
                    request.predicate = #Predicate<Item> { $0.count == k }
                    for item in try reader.fetch(request) {
                        f.indexedRows += 1
                        _ = item.title
                        _ = item.timestamp
                    }
                }
            }
        }
        let scanner = container.newBackgroundContext()
        try scanner.performAndWait {
            let mid = 1e9 + Double(n / 2)
            let request = Item.fetchRequest()
            request.predicate = #Predicate<Item> { $0.flag == 1 && $0.timestamp > mid }
            f.scanFetch = try seconds {
                for item in try scanner.fetch(request) {
                    f.scanRows += 1
                    _ = item.title
                }
            }
        }
        if let store = container.persistentStoreCoordinator.persistentStores.first as? PostgreSQLStore {
            let properties = model.entities[0].properties.map(\.name)
            func property(_ name: String) -> Int { properties.firstIndex(of: name) ?? -1 }
            var rows = 0
            f.indexedStoreFetch = try seconds {
                for k in Int64(0)..<100 {
                    let filter = StoreFilter([.init(property: property("count"), .equal, .integer(k))])
                    rows += try store.fetchRows(entity: 0, filter: filter).count
                }
            }
            f.scanStoreFetch = try seconds {
                let filter = StoreFilter([
                    .init(property: property("flag"), .equal, .integer(1)),
                    .init(property: property("timestamp"), .greater, .double(1e9 + Double(n / 2))),
                ])
                rows += try store.fetchRows(entity: 0, filter: filter).count
            }
            if rows != f.indexedRows + f.scanRows { throw RawLibPQ.Failure(description: "store-level fetches found \(rows) rows") }
        }
        for store in container.persistentStoreCoordinator.persistentStores { (store as? PostgreSQLStore)?.close() }
    }
    f.reopenCount = try seconds {
        let container = try openContainer(url, schema: schema, model: model, listens: false)
        let context = container.newBackgroundContext()
        f.reopenedRows = try context.performAndWait { try context.count(for: Item.fetchRequest()) }
        for store in container.persistentStoreCoordinator.persistentStores { (store as? PostgreSQLStore)?.close() }
    }
    try PostgreSQLStore.destroy(at: url, options: [PostgreSQLStore.schemaOptionKey: schema], model: model)
    return f
}
