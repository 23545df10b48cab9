import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

/// The same random sequence of inserts, edits, link changes and deletes (cascades included),
/// saved through contexts into the in-memory store and into the PostgreSQL store, leaves the
/// same object graph in both.
@Suite("PostgreSQL store: behaves as the in-memory store", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct StoreBehaviourTests {
    /// One step, naming objects by their unique names.
    enum Step: Sendable {
        case addShelf(String)
        case addAuthor(String)
        case addBook(String, pages: Int64, shelf: String?, authors: [String])
        case edit(String, pages: Int64, shelf: String?, toggle: String?)
        case deleteBook(String)
        case deleteShelf(String)
        case save
    }

    /// A deterministic random script.
    static func script(seed: UInt64, steps: Int) -> [Step] {
        var state = seed
        func next(_ n: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
        var shelves: [String] = []
        var authors: [String] = []
        var books: [String] = []
        var result: [Step] = []
        for i in 0..<steps {
            switch next(20) {
            case 0, 1:
                shelves.append("shelf \(i)")
                result.append(.addShelf("shelf \(i)"))
            case 2, 3:
                authors.append("author \(i)")
                result.append(.addAuthor("author \(i)"))
            case 4...10:
                let chosen = authors.filter { _ in next(3) == 0 }
                books.append("book \(i)")
                result.append(.addBook("book \(i)", pages: Int64(next(500)), shelf: shelves.isEmpty || next(4) == 0 ? nil : shelves[next(shelves.count)], authors: chosen))
            case 11...14 where !books.isEmpty:
                result.append(
                    .edit(
                        books[next(books.count)], pages: Int64(next(500)), shelf: shelves.isEmpty || next(3) == 0 ? nil : shelves[next(shelves.count)],
                        toggle: authors.isEmpty ? nil : authors[next(authors.count)]))
            case 15 where !books.isEmpty:
                result.append(.deleteBook(books.remove(at: next(books.count))))
            case 16 where !shelves.isEmpty:
                // The shelf's books go with it (cascade); the script forgets them too.
                result.append(.deleteShelf(shelves.remove(at: next(shelves.count))))
            default:
                result.append(.save)
            }
        }
        result.append(.save)
        return result
    }

    /// Runs `script` through one context of `container`.
    static func run(_ script: [Step], in container: NSPersistentContainer) async throws {
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            func one<T: NSManagedObject>(_ type: T.Type, _ entity: String, _ key: String, _ name: String) throws -> T? {
                let r = NSFetchRequest<T>(entityName: entity)
                r.predicate = NSPredicate(format: "%K == %@", key, name)
                return try ctx.fetch(r).first
            }
            for step in script {
                switch step {
                case let .addShelf(name): Shelf(context: ctx).name = name
                case let .addAuthor(name): Author(context: ctx).name = name
                case let .addBook(title, pages, shelf, authors):
                    let b = Book(context: ctx)
                    b.title = title
                    b.pages = pages
                    b.shelf = try shelf.flatMap { try one(Shelf.self, "Shelf", "name", $0) }
                    for a in authors { if let author = try one(Author.self, "Author", "name", a) { b.authors.insert(author) } }
                case let .edit(title, pages, shelf, toggle):
                    guard let b = try one(Book.self, "Book", "title", title) else { continue }
                    b.pages = pages
                    b.shelf = try shelf.flatMap { try one(Shelf.self, "Shelf", "name", $0) }
                    if let toggle, let a = try one(Author.self, "Author", "name", toggle) {
                        if b.authors.contains(a) { b.authors.remove(a) } else { b.authors.insert(a) }
                    }
                case let .deleteBook(title):
                    if let b = try one(Book.self, "Book", "title", title) { ctx.delete(b) }
                case let .deleteShelf(name):
                    if let s = try one(Shelf.self, "Shelf", "name", name) { ctx.delete(s) }
                case .save:
                    try ctx.save()
                    ctx.reset()
                }
            }
        }
    }

    /// The graph as names, read in a fresh context.
    static func snapshot(_ container: NSPersistentContainer) async throws -> [String] {
        let ctx = container.newBackgroundContext()
        return try await ctx.perform {
            var lines: [String] = []
            for b in try ctx.fetch(NSFetchRequest<Book>(entityName: "Book")) {
                lines.append("book \(b.title) \(b.pages) on \(b.shelf?.name ?? "-") by \(b.authors.map(\.name).sorted())")
            }
            for s in try ctx.fetch(NSFetchRequest<Shelf>(entityName: "Shelf")) {
                lines.append("shelf \(s.name) holds \(s.books.map(\.title).sorted())")
            }
            for a in try ctx.fetch(NSFetchRequest<Author>(entityName: "Author")) {
                lines.append("author \(a.name) wrote \(a.books.map(\.title).sorted())")
            }
            return lines.sorted()
        }
    }

    @Test("Random scripts leave the same graph in both stores", arguments: [UInt64(1), 2, 3, 4])
    func sameGraph(seed: UInt64) async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let pg = try await TestServer.container(model: model, schema: schema, listens: false)
        let memory = NSPersistentContainer(name: "memory", managedObjectModel: model)
        memory.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        try await memory.loadPersistentStores()
        let script = Self.script(seed: seed, steps: 300)
        try await Self.run(script, in: pg)
        try await Self.run(script, in: memory)
        let a = try await Self.snapshot(pg)
        let b = try await Self.snapshot(memory)
        #expect(a.count > 20)
        #expect(a == b)
    }
}
