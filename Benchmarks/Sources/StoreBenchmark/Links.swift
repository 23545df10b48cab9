// `StoreBenchmark links [N=50000]`: saves that put one book on a shelf of N books, on a file
// of format version 3 (the file keeps only each book's `shelf`; the shelf's list is derived)
// beside the same saves on a version 2 file (the shelf's whole list written at every save),
// and beside a shelf with no books — all measured in this run, at full durability.

import BenchmarkSupport
import Foundation
import PersistenceKit

final class BenchShelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf") var books: Set<BenchBook>
}

final class BenchBook: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "books") var shelf: BenchShelf?
}

struct LinkFigures {
    /// The first save after the reopen (a version 3 store builds the shelf's list there).
    var firstSave = 0.0  // s
    /// The median of the saves after it.
    var save = 0.0  // s
    /// Bytes of records appended per save, on average (space reserved ahead not counted).
    var bytesPerSave = 0.0
}

/// Sets the format version in a closed store file's header (and the header's CRC-32).
func setFormatVersion(_ version: UInt32, of url: URL) throws {
    var bytes = [UInt8](try Data(contentsOf: url))
    for i in 0..<4 { bytes[8 + i] = UInt8(truncatingIfNeeded: version >> (8 * UInt32(i))) }
    var crc: UInt32 = 0xFFFF_FFFF
    for b in bytes[0..<60] {
        crc ^= UInt32(b)
        for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    crc = ~crc
    for i in 0..<4 { bytes[60 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
    try Data(bytes).write(to: url)
}

/// Builds a shelf of `books` books in a fresh store (of format `version`), reopens it, and
/// times `saves` saves that each add one book to the shelf.
func measureLinks(books: Int, version: UInt32, saves: Int, model: NSManagedObjectModel) throws -> LinkFigures {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pk-links-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: dir) }
    let url = dir.appendingPathComponent("links.store")
    var shelfURI: URL?
    do {
        let container = try makeContainer(url, model, .full)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let shelf = BenchShelf(context: context)
            shelf.name = "shelf"
            for i in 0..<books {
                let book = BenchBook(context: context)
                book.title = "Book \(i)"
                book.shelf = shelf
            }
            try context.save()
            shelfURI = shelf.objectID.uriRepresentation()
        }
        for store in container.persistentStoreCoordinator.persistentStores {
            try container.persistentStoreCoordinator.remove(store)
        }
    }
    if version != 3 { try setFormatVersion(version, of: url) }

    // No compaction while measuring: it would rewrite a version 2 file as version 3.
    let store = try FileStore.open(at: url, model: model, options: FileStore.Options(durability: .full, compactionThreshold: .max))
    defer { try? store.close() }
    let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(store)
    guard let shelfURI, let shelfID = coordinator.managedObjectID(forURIRepresentation: shelfURI) else {
        throw BenchmarkError("the shelf's URI did not resolve")
    }
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType, coordinator: coordinator)
    var figures = LinkFigures()
    var times: [Double] = []
    let sizeBefore = store.fileSize
    try context.performAndWait {
        for i in 0...saves {
            let time = try seconds {
                let book = BenchBook(context: context)
                book.title = "Added \(i)"
                book.shelf = context.object(with: shelfID) as? BenchShelf
                try context.save()
            }
            if i == 0 { figures.firstSave = time } else { times.append(time) }
        }
    }
    times.sort()
    figures.save = times[times.count / 2]
    figures.bytesPerSave = Double(store.fileSize - sizeBefore) / Double(saves + 1)
    return figures
}

func runLinksBenchmark(books: Int) throws {
    let model = try NSManagedObjectModel(managedObjectClasses: [BenchShelf.self, BenchBook.self])
    let saves = 200
    let current = try measureLinks(books: books, version: 3, saves: saves, model: model)
    let former = try measureLinks(books: books, version: 2, saves: saves, model: model)
    let empty = try measureLinks(books: 0, version: 3, saves: saves, model: model)
    func ms(_ s: Double) -> String { String(format: "%.3f ms", s * 1000) }
    func kb(_ b: Double) -> String { b < 10_240 ? String(format: "%.0f B", b) : String(format: "%.1f KB", b / 1024) }
    print("One book added to a shelf, then saved (full durability; one context, which keeps the shelf; the median of \(saves) saves)")
    print("")
    print("| store | first save after reopen | save | bytes written per save |")
    print("|---|---|---|---|")
    print("| version 3, shelf of \(books) (the list is derived) | \(ms(current.firstSave)) | \(ms(current.save)) | \(kb(current.bytesPerSave)) |")
    print("| version 2, shelf of \(books) (the list is written) | \(ms(former.firstSave)) | \(ms(former.save)) | \(kb(former.bytesPerSave)) |")
    print("| version 3, empty shelf | \(ms(empty.firstSave)) | \(ms(empty.save)) | \(kb(empty.bytesPerSave)) |")
    print("")
    print(String(format: "version 3 / version 2: %.2f; version 3, %d books / empty shelf: %.2f", current.save / former.save, books, current.save / empty.save))
}
