import Foundation
import PersistenceKit

// The model: shelves hold books. Entities are named after the classes, and each
// `@Attribute` / `@Relationship` becomes a property of the entity; there is no model file
// and no code generator.

/// A named shelf. Deleting a shelf deletes the books on it (cascade).
final class Shelf: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf", deleteRule: .cascadeDeleteRule) var books: Set<Book>
}

/// A book. It must sit on a shelf (`isOptional: false`); deleting it only takes it off the
/// shelf (nullify).
final class Book: NSManagedObject {
    @Attribute var title: String = ""
    @Attribute var author: String = ""
    @Attribute(.indexed) var year: Int64 = 0
    @Attribute var rating: Int16?
    @Attribute var finished: Bool = false
    @Relationship(inverse: "books", deleteRule: .nullifyDeleteRule, isOptional: false) var shelf: Shelf?
}

/// A book as plain values. Managed objects never leave their context's queue; this does
/// (it is `Sendable`), so perform blocks return it.
struct BookSummary: Sendable, CustomStringConvertible {
    var title: String
    var author: String
    var year: Int64
    var rating: Int16?
    var finished: Bool
    var shelf: String

    /// Reads a book; call on the book's context queue.
    init(_ book: Book) {
        title = book.title
        author = book.author
        year = book.year
        rating = book.rating
        finished = book.finished
        shelf = book.shelf?.name ?? "(no shelf)"
    }

    var description: String {
        let stars = rating.map { String(repeating: "*", count: Int($0)) } ?? "unrated"
        return "\(year)  \(title) — \(author)  [\(shelf), \(stars)\(finished ? ", finished" : "")]"
    }
}

/// The books the program starts with.
struct Seed: Sendable {
    var title: String
    var author: String
    var year: Int64
    var shelf: String

    static let catalogue: [Seed] = [
        Seed(title: "Middlemarch", author: "George Eliot", year: 1871, shelf: "Classics"),
        Seed(title: "Moby-Dick", author: "Herman Melville", year: 1851, shelf: "Classics"),
        Seed(title: "Pride and Prejudice", author: "Jane Austen", year: 1813, shelf: "Classics"),
        Seed(title: "Dune", author: "Frank Herbert", year: 1965, shelf: "Science Fiction"),
        Seed(title: "Foundation", author: "Isaac Asimov", year: 1951, shelf: "Science Fiction"),
        Seed(title: "Neuromancer", author: "William Gibson", year: 1984, shelf: "Science Fiction"),
        Seed(title: "The Left Hand of Darkness", author: "Ursula K. Le Guin", year: 1969, shelf: "Science Fiction"),
    ]
}

/// What went wrong in the example itself (the library throws `CoreDataError`).
struct BookshelfError: Error, CustomStringConvertible {
    var description: String
}
