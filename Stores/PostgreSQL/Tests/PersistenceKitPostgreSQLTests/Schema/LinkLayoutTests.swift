import Foundation
import PersistenceKit
import PersistenceKitPostgreSQL
import Testing

// A playlist keeps its songs in order (an ordered one-to-many); an album lists songs in
// order and a song is on many albums (an ordered many-to-many); a label marks many songs and
// a song has many labels (an unordered many-to-many).

final class LLPlaylist: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "playlist", deleteRule: .nullifyDeleteRule) var songs: [LLSong]
}

final class LLSong: NSManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "songs") var playlist: LLPlaylist?
    @Relationship(inverse: "songs") var albums: Set<LLAlbum>
    @Relationship(inverse: "songs") var labels: Set<LLLabel>
}

final class LLAlbum: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "albums") var songs: [LLSong]
}

final class LLLabel: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "labels") var songs: Set<LLSong>
}

@Suite("PostgreSQL store: links kept at their owning end", .enabled(if: TestServer.isConfigured, TestServer.skipReason))
struct LinkLayoutTests {
    /// The columns of `table` in `schema`.
    private static func columns(_ admin: AdminConnection, _ schema: String, _ table: String) throws -> Set<String> {
        Set(
            try admin.column(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = '\(table)'"))
    }

    @Test("Putting one book on a shelf and an author of 5,000 writes the book's key and one join row, no list")
    func oneBookOnALargeShelf() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let container = try await TestServer.container(model: model, schema: schema)
        let admin = try AdminConnection(url: try #require(TestServer.url))
        // The to-many ends of one-to-many and many-to-many links have no column.
        #expect(!(try Self.columns(admin, schema, "Shelf")).contains("books"))
        #expect(!(try Self.columns(admin, schema, "Book")).contains("authors"))
        #expect(try Self.columns(admin, schema, "Book").contains("shelf"))
        #expect(!(try Self.columns(admin, schema, "Author")).contains("books"))
        #expect(try Self.columns(admin, schema, "_pk_link_Author_books") == ["source", "target"], "the many-to-many's join table")

        let ctx = container.newBackgroundContext()
        let shelfID = try await ctx.perform {
            let shelf = Shelf(context: ctx)
            shelf.name = "long"
            let author = Author(context: ctx)
            author.name = "prolific"
            for i in 0..<5_000 {
                let b = Book(context: ctx)
                b.title = "b\(i)"
                b.shelf = shelf
                b.authors = [author]
            }
            try ctx.save()
            return shelf.objectID
        }
        let shelfKey = try #require(Int64(shelfID.uriRepresentation().lastPathComponent.dropFirst()))
        let shelfRow = "SELECT %@ FROM \"\(schema)\".\"Shelf\" WHERE _pk = \(shelfKey)"
        let versionBefore = try admin.column(shelfRow.replacingOccurrences(of: "%@", with: "_version::text"))

        let adder = container.newBackgroundContext()
        try await adder.perform {
            let shelf = try #require(try adder.existingObject(with: shelfID) as? Shelf)
            let authors = NSFetchRequest<Author>(entityName: "Author")
            let author = try #require(try adder.fetch(authors).first)
            let b = Book(context: adder)
            b.title = "one more"
            b.shelf = shelf
            b.authors = [author]
            try adder.save()
        }
        // Core Data counts a relationship change as an update of both objects: the shelf's
        // version moves on (a stale copy of it is a conflict), but its row holds no list.
        let versionAfter = try admin.column(shelfRow.replacingOccurrences(of: "%@", with: "_version::text"))
        #expect(versionAfter.map { Int($0) } == versionBefore.map { Int($0).map { $0 + 1 } })
        let size = try admin.column(shelfRow.replacingOccurrences(of: "%@", with: "pg_column_size(\"Shelf\".*)::text"))
        let rowBytes = try #require(Int(size.first ?? ""))
        #expect(rowBytes < 200, "the shelf's row holds \(rowBytes) bytes")
        // The author's 5,001 links are rows of the join table, one added by the save.
        #expect(try admin.column("SELECT count(*)::text FROM \"\(schema)\".\"_pk_link_Author_books\"") == ["5001"])
        // The rows the save wrote carry its transaction's ID (`xmin`): the new book, its join
        // row, and the shelf's and author's versions; none of the 5,000 books already there.
        let txid = try #require(try admin.column(shelfRow.replacingOccurrences(of: "%@", with: "xmin::text")).first)
        var written: [String] = []
        for table in ["Book", "Shelf", "Author", "_pk_link_Author_books"] {
            let n = try admin.column("SELECT count(*)::text FROM \"\(schema)\".\"\(table)\" WHERE xmin::text = '\(txid)'")
            written.append("\(table) \(n.first ?? "?")")
        }
        #expect(written == ["Book 1", "Shelf 1", "Author 1", "_pk_link_Author_books 1"])

        // Another coordinator reads the list from the books.
        let other = try await TestServer.container(model: model, schema: schema, listens: false)
        let reader = other.newBackgroundContext()
        try await reader.perform {
            let shelf = try #require(try reader.existingObject(with: shelfID) as? Shelf)
            #expect(shelf.books.count == 5_001)
            #expect(shelf.books.contains { $0.title == "one more" })
            let onShelf = NSFetchRequest<Book>(entityName: "Book")
            onShelf.predicate = NSPredicate(format: "shelf == %@", shelf)
            #expect(try reader.count(for: onShelf) == 5_001)
            let full = NSFetchRequest<Shelf>(entityName: "Shelf")
            full.predicate = NSPredicate(format: "books.@count > 5000 AND ANY books.title == 'one more'")
            #expect(try reader.count(for: full) == 1)
            let author = try #require(try reader.fetch(NSFetchRequest<Author>(entityName: "Author")).first)
            #expect(author.books.count == 5_001)
            let byAuthor = NSFetchRequest<Book>(entityName: "Book")
            byAuthor.predicate = NSPredicate(format: "ANY authors.name == 'prolific' AND authors.@count == 1")
            #expect(try reader.count(for: byAuthor) == 5_001)
        }
    }

    @Test("Ordered and many-to-many links read back alike after a reopen and in another coordinator")
    func orderedAndManyToManyRoundTrip() async throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [LLPlaylist.self, LLSong.self, LLAlbum.self, LLLabel.self])
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let first = try await TestServer.container(model: model, schema: schema, listens: false)
        let ctx = first.newBackgroundContext()
        try await ctx.perform {
            var songs: [String: LLSong] = [:]
            for t in ["a", "b", "c", "d"] {
                let s = LLSong(context: ctx)
                s.title = t
                songs[t] = s
            }
            let list = LLPlaylist(context: ctx)
            list.name = "list"
            list.songs = [songs["c"]!, songs["a"]!, songs["d"]!]
            let album = LLAlbum(context: ctx)
            album.name = "album"
            album.songs = [songs["d"]!, songs["b"]!, songs["a"]!]
            let loud = LLLabel(context: ctx)
            loud.name = "loud"
            loud.songs = [songs["a"]!, songs["b"]!]
            let calm = LLLabel(context: ctx)
            calm.name = "calm"
            calm.songs = [songs["c"]!]
            try ctx.save()
        }
        try await Self.expect(
            in: TestServer.container(model: model, schema: schema, listens: false), list: ["c", "a", "d"], album: ["d", "b", "a"],
            labels: ["loud": ["a", "b"], "calm": ["c"]])

        // Changed in a second coordinator: reordered, a song moved between labels.
        let second = try await TestServer.container(model: model, schema: schema, listens: false)
        let editor = second.newBackgroundContext()
        try await editor.perform {
            let all = try editor.fetch(NSFetchRequest<LLSong>(entityName: "LLSong"))
            let songs = Dictionary(uniqueKeysWithValues: all.map { ($0.title, $0) })
            let list = try #require(try editor.fetch(NSFetchRequest<LLPlaylist>(entityName: "LLPlaylist")).first)
            list.songs = [songs["d"]!, songs["c"]!, songs["b"]!]
            let album = try #require(try editor.fetch(NSFetchRequest<LLAlbum>(entityName: "LLAlbum")).first)
            album.songs = [songs["a"]!, songs["d"]!]
            let a = songs["a"]!
            a.labels = Set(try editor.fetch(NSFetchRequest<LLLabel>(entityName: "LLLabel")).filter { $0.name == "calm" })
            try editor.save()
        }
        try await Self.expect(
            in: TestServer.container(model: model, schema: schema, listens: false), list: ["d", "c", "b"], album: ["a", "d"],
            labels: ["loud": ["b"], "calm": ["a", "c"]])
    }

    @Test("A shelf and an author read before another coordinator linked a book to them are stale: changing them is a conflict")
    func linkChangeMakesBothEndsStale() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let one = try await TestServer.container(model: model, schema: schema, listens: false)
        let two = try await TestServer.container(model: model, schema: schema, listens: false)
        let a = one.newBackgroundContext()
        let (shelfID, authorID) = try await a.perform {
            let shelf = Shelf(context: a)
            shelf.name = "S"
            let author = Author(context: a)
            author.name = "A"
            try a.save()
            return (shelf.objectID, author.objectID)
        }
        let b = two.newBackgroundContext()
        b.mergePolicy = .error
        let uris = (shelfID.uriRepresentation(), authorID.uriRepresentation())
        try await b.perform {
            let shelf = try b.existingObject(with: try ConflictTests.id(uris.0, in: b)) as? Shelf
            let author = try b.existingObject(with: try ConflictTests.id(uris.1, in: b)) as? Author
            #expect(shelf?.name == "S" && author?.name == "A")
        }
        // Only the book's key column and a join row hold the new links.
        try await a.perform {
            let book = Book(context: a)
            book.title = "new"
            book.shelf = try #require(try a.existingObject(with: shelfID) as? Shelf)
            book.authors = [try #require(try a.existingObject(with: authorID) as? Author)]
            try a.save()
        }
        for (k, uri) in [uris.0, uris.1].enumerated() {
            let error: (any Error)? = await b.perform {
                do {
                    let object = try b.existingObject(with: try ConflictTests.id(uri, in: b))
                    object.setValue(k == 0 ? "S2" : "A2", forKey: "name")
                    try b.save()
                    return nil
                } catch {
                    b.rollback()
                    return error
                }
            }
            #expect((error as? CoreDataError)?.code == .managedObjectMerge, "\(k == 0 ? "shelf" : "author"): \(String(describing: error))")
        }
    }

    @Test("A store made with the key-list layout (no layout version recorded) is refused, typed, and left as it is")
    func oldLayoutRefused() async throws {
        let model = try Models.bookshelf()
        let schema = TestServer.freshSchema()
        defer { TestServer.drop(schema, model: model) }
        let store = try TestServer.store(model: model, schema: schema)
        #expect(store.metadata[PostgreSQLStore.layoutVersionKey] == "2")
        store.close()
        // What a store of the first layout holds: no version, every to-many end a key list.
        let admin = try AdminConnection(url: try #require(TestServer.url))
        try admin.run("DELETE FROM \"\(schema)\".\"_pk_metadata\" WHERE key = '\(PostgreSQLStore.layoutVersionKey)'")
        try admin.run("ALTER TABLE \"\(schema)\".\"Shelf\" ADD COLUMN books bigint[]")
        let error = #expect(throws: PostgreSQLStoreError.self) { _ = try TestServer.store(model: model, schema: schema) }
        #expect(error?.kind == .unsupportedLayout(found: "1"), "\(String(describing: error))")
        #expect(error?.message.contains("layout version 1") == true && error?.message.contains("destroy the store") == true)
        // Through a coordinator: the same error, as the load's error or its cause.
        do {
            _ = try await TestServer.container(model: model, schema: schema)
            Issue.record("the store opened")
        } catch {
            let cause = (error as? PostgreSQLStoreError) ?? ((error as? CoreDataError)?.underlying as? PostgreSQLStoreError)
            #expect(cause?.kind == .unsupportedLayout(found: "1"), "\(error)")
        }
        #expect(try Self.columns(admin, schema, "Shelf").contains("books"), "nothing converted")
    }

    /// Expects the stored playlist, album and labels, read in a fresh context of `container`
    /// from both ends of each link.
    private static func expect(
        in container: NSPersistentContainer, list: [String], album: [String], labels: [String: Set<String>],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let ctx = container.newBackgroundContext()
        try await ctx.perform {
            let playlist = try #require(try ctx.fetch(NSFetchRequest<LLPlaylist>(entityName: "LLPlaylist")).first)
            #expect(playlist.songs.map(\.title) == list, sourceLocation: sourceLocation)
            let a = try #require(try ctx.fetch(NSFetchRequest<LLAlbum>(entityName: "LLAlbum")).first)
            #expect(a.songs.map(\.title) == album, sourceLocation: sourceLocation)
            var byLabel: [String: Set<String>] = [:]
            var fromSongs: [String: Set<String>] = [:]
            for label in try ctx.fetch(NSFetchRequest<LLLabel>(entityName: "LLLabel")) {
                byLabel[label.name] = Set(label.songs.map(\.title))
            }
            for song in try ctx.fetch(NSFetchRequest<LLSong>(entityName: "LLSong")) {
                for label in song.labels { fromSongs[label.name, default: []].insert(song.title) }
                #expect(song.playlist.map { _ in list.contains(song.title) } ?? !list.contains(song.title), sourceLocation: sourceLocation)
                #expect(Set(song.albums.map(\.name)) == (album.contains(song.title) ? ["album"] : []), sourceLocation: sourceLocation)
            }
            #expect(byLabel.filter { !$0.value.isEmpty } == labels, sourceLocation: sourceLocation)
            #expect(fromSongs == labels, "both ends of the many-to-many agree", sourceLocation: sourceLocation)
            let tagged = NSFetchRequest<LLSong>(entityName: "LLSong")
            tagged.predicate = NSPredicate(format: "ANY labels.name == 'calm'")
            #expect(Set(try ctx.fetch(tagged).map(\.title)) == labels["calm"], sourceLocation: sourceLocation)
        }
    }
}
