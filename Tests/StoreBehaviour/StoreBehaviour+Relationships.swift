import Foundation
import PersistenceKit
import Testing

extension StoreBehaviour {
    /// The library as lines read from both ends of every relationship: shelves and the books
    /// they hold, books and their shelf, authors and cover, authors and their books, covers
    /// and their book. Where two ends disagree, the lines say so.
    static func libraryLines(_ context: NSManagedObjectContext) throws -> [String] {
        var lines: [String] = []
        for shelf in try all(SBShelf.self, in: context, sortedBy: "name") {
            lines.append("shelf \(shelf.name): \(shelf.books.map(\.title).sorted())")
            for book in shelf.books where book.shelf !== shelf {
                lines.append("DISAGREE: \(shelf.name) holds \(book.title), which is on \(book.shelf?.name ?? "no shelf")")
            }
        }
        for book in try all(SBBook.self, in: context, sortedBy: "title") {
            lines.append(
                "book \(book.title): on \(book.shelf?.name ?? "-"), by \(book.authors.map(\.name).sorted()), cover \(book.cover?.color ?? "-")")
            if let shelf = book.shelf, !shelf.books.contains(book) {
                lines.append("DISAGREE: \(book.title) is on \(shelf.name), which does not hold it")
            }
            for author in book.authors where !author.books.contains(book) {
                lines.append("DISAGREE: \(book.title) is by \(author.name), who does not list it")
            }
            if let cover = book.cover, cover.book !== book { lines.append("DISAGREE: \(book.title)'s cover is another book's") }
        }
        for author in try all(SBAuthor.self, in: context, sortedBy: "name") {
            lines.append("author \(author.name): \(author.books.map(\.title).sorted())")
            for book in author.books where !book.authors.contains(author) {
                lines.append("DISAGREE: \(author.name) lists \(book.title), which is not by them")
            }
        }
        for cover in try all(SBCover.self, in: context, sortedBy: "color") {
            lines.append("cover \(cover.color): \(cover.book?.title ?? "-")")
        }
        return lines
    }

    /// Saves shelves Fiction and Poetry, authors Ann and Bo, and books: Dune (Fiction, Ann,
    /// red cover), Emma (Fiction, Ann and Bo), Odes (Poetry, Bo, blue cover).
    static func seedLibrary(_ container: NSPersistentContainer) async throws {
        try await inContext(container) { context in
            func shelf(_ name: String) -> SBShelf {
                let s = SBShelf(context: context)
                s.name = name
                return s
            }
            func author(_ name: String) -> SBAuthor {
                let a = SBAuthor(context: context)
                a.name = name
                return a
            }
            let (fiction, poetry, ann, bo) = (shelf("Fiction"), shelf("Poetry"), author("Ann"), author("Bo"))
            func book(_ title: String, _ pages: Int64, _ shelf: SBShelf, _ authors: Set<SBAuthor>, cover: String?) {
                let b = SBBook(context: context)
                b.title = title
                b.pages = pages
                b.shelf = shelf
                b.authors = authors
                if let cover {
                    let c = SBCover(context: context)
                    c.color = cover
                    b.cover = c
                }
            }
            book("Dune", 600, fiction, [ann], cover: "red")
            book("Emma", 400, fiction, [ann, bo], cover: nil)
            book("Odes", 90, poetry, [bo], cover: "blue")
            try context.save()
        }
    }

    static func relationships(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            try await seedLibrary(try await checked.open())
            let seeded = [
                "shelf Fiction: [\"Dune\", \"Emma\"]", "shelf Poetry: [\"Odes\"]",
                "book Dune: on Fiction, by [\"Ann\"], cover red", "book Emma: on Fiction, by [\"Ann\", \"Bo\"], cover -",
                "book Odes: on Poetry, by [\"Bo\"], cover blue",
                "author Ann: [\"Dune\", \"Emma\"]", "author Bo: [\"Emma\", \"Odes\"]",
                "cover blue: Odes", "cover red: Dune",
            ]
            #expect(try await inContext(try await checked.reopen(), libraryLines) == seeded)

            // Changes made from one end show at the other, in the context and after reopening.
            let expected = [
                "shelf Fiction: [\"Dune\", \"Odes\"]", "shelf Poetry: []",
                "book Dune: on Fiction, by [\"Bo\"], cover -", "book Emma: on -, by [\"Ann\", \"Bo\"], cover red",
                "book Odes: on Fiction, by [\"Ann\", \"Bo\"], cover blue",
                "author Ann: [\"Emma\", \"Odes\"]", "author Bo: [\"Dune\", \"Emma\", \"Odes\"]",
                "cover blue: Odes", "cover red: Emma",
            ]
            let inContextAfterEdits = try await inContext(try await checked.reopen()) { context in
                let books = Dictionary(uniqueKeysWithValues: try all(SBBook.self, in: context).map { ($0.title, $0) })
                let authors = Dictionary(uniqueKeysWithValues: try all(SBAuthor.self, in: context).map { ($0.name, $0) })
                let (dune, emma, odes) = (try #require(books["Dune"]), try #require(books["Emma"]), try #require(books["Odes"]))
                let (ann, bo) = (try #require(authors["Ann"]), try #require(authors["Bo"]))
                let fiction = try #require(dune.shelf)
                // Moved by setting the to-one end, and taken off by editing the to-many end.
                odes.shelf = fiction
                fiction.books.remove(emma)
                // Many-to-many edited from both ends.
                ann.books.insert(odes)
                dune.authors = [bo]
                // The red cover moves to another book: the one-to-one's other ends let go.
                emma.cover = dune.cover
                try context.save()
                return try libraryLines(context)
            }
            #expect(inContextAfterEdits == expected)
            #expect(try await inContext(try await checked.reopen(), libraryLines) == expected)
        }
    }

    static func deleteRules(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.library) { checked in
            try await seedLibrary(try await checked.open())
            // Nullify (book → shelf, authors) and cascade (book → cover).
            try await inContext(try await checked.reopen()) { context in
                for book in try all(SBBook.self, in: context) where book.title == "Dune" { context.delete(book) }
                try context.save()
            }
            #expect(
                try await inContext(try await checked.reopen(), libraryLines) == [
                    "shelf Fiction: [\"Emma\"]", "shelf Poetry: [\"Odes\"]",
                    "book Emma: on Fiction, by [\"Ann\", \"Bo\"], cover -", "book Odes: on Poetry, by [\"Bo\"], cover blue",
                    "author Ann: [\"Emma\"]", "author Bo: [\"Emma\", \"Odes\"]", "cover blue: Odes",
                ])

            // Deny: an author with books is not deleted, and nothing of the save is stored.
            try await inContext(try await checked.reopen()) { context in
                for author in try all(SBAuthor.self, in: context) where author.name == "Bo" { context.delete(author) }
                SBShelf(context: context).name = "Unsaved"
                let error = try #require(throws: CoreDataError.self) { try context.save() }
                #expect(error.code == .validationRelationshipDeniedDelete)
            }
            // Once the author has no books, the delete goes through and the books let go of them.
            try await inContext(try await checked.reopen()) { context in
                let bo = try #require(try all(SBAuthor.self, in: context).first { $0.name == "Bo" })
                #expect(bo.books.count == 2)
                bo.books = []
                context.delete(bo)
                try context.save()
            }
            // Cascade through two levels: the shelf, its book, the book's cover.
            try await inContext(try await checked.reopen()) { context in
                for shelf in try all(SBShelf.self, in: context) where shelf.name == "Poetry" { context.delete(shelf) }
                try context.save()
            }
            #expect(
                try await inContext(try await checked.reopen(), libraryLines) == [
                    "shelf Fiction: [\"Emma\"]", "book Emma: on Fiction, by [\"Ann\"], cover -", "author Ann: [\"Emma\"]",
                ])
        }
    }

    static func orderedToMany(_ store: some StoreUnderTest) async throws {
        try await withStore(store, BehaviourModels.playlists) { checked in
            try await inContext(try await checked.open()) { context in
                let list = SBPlaylist(context: context)
                list.name = "mix"
                list.songs = (0..<5).map { i in
                    let song = SBSong(context: context)
                    song.title = "s\(i)"
                    return song
                }
                try context.save()
            }
            func order(_ context: NSManagedObjectContext) throws -> [String] {
                let list = try #require(try all(SBPlaylist.self, in: context).first)
                for song in list.songs where song.playlist !== list {
                    Issue.record("\(song.title) is listed but points at \(song.playlist?.name ?? "no playlist")")
                }
                return list.songs.map(\.title)
            }
            #expect(try await inContext(try await checked.reopen(), order) == ["s0", "s1", "s2", "s3", "s4"])

            // Moves, an insertion in the middle, and a removal.
            try await inContext(try await checked.reopen()) { context in
                let list = try #require(try all(SBPlaylist.self, in: context).first)
                var songs = list.songs
                let s2 = songs.remove(at: 2)
                songs.swapAt(0, 2)
                let added = SBSong(context: context)
                added.title = "new"
                songs.insert(added, at: 1)
                list.songs = songs
                #expect(s2.playlist == nil)
                try context.save()
            }
            #expect(try await inContext(try await checked.reopen(), order) == ["s3", "new", "s1", "s0", "s4"])
            let loose = try await inContext(try await checked.reopen()) { context in
                try all(SBSong.self, in: context).filter { $0.playlist == nil }.map(\.title)
            }
            #expect(loose == ["s2"])

            // Setting a song's playlist appends it at the end; deleting one closes the gap.
            try await inContext(try await checked.reopen()) { context in
                let songs = try all(SBSong.self, in: context)
                let list = try #require(try all(SBPlaylist.self, in: context).first)
                songs.first { $0.title == "s2" }?.playlist = list
                for song in songs where song.title == "new" { context.delete(song) }
                try context.save()
            }
            #expect(try await inContext(try await checked.reopen(), order) == ["s3", "s1", "s0", "s4", "s2"])
        }
    }
}
