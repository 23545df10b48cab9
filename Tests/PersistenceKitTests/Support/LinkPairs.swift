import Foundation
@testable import PersistenceKit

/// Two objects X and Q of the fixtures' model that one relationship can link, for tests
/// that make, break and count that link from either end. `kind` names X's relationship to
/// Q: "cover" (one-to-one, X a book and Q a cover), "authors" (many-to-many, X a book and
/// Q an author), "books" (one-to-many from the to-many side, X a shelf and Q a book),
/// "shelf" (one-to-many from the to-one side, X a book and Q a shelf).
enum LinkPair {
    /// X and Q for `kind`, unlinked, inserted into `context`.
    static func make(_ kind: String, in context: NSManagedObjectContext) -> (x: NSManagedObject, q: NSManagedObject) {
        let book = Book(context: context)
        book.title = "X"
        switch kind {
        case "cover": return (book, Cover(context: context))
        case "authors":
            let q = Author(context: context)
            q.name = "Q"
            return (book, q)
        case "books":
            let s = Shelf(context: context)
            s.name = "X"
            return (s, book)
        default:
            let q = Shelf(context: context)
            q.name = "Q"
            return (book, q)
        }
    }

    /// Links (`on`) or unlinks X and Q through X's relationship or through Q's inverse.
    static func setLinked(_ on: Bool, _ kind: String, x: NSManagedObject, q: NSManagedObject, throughX: Bool) {
        switch (kind, throughX) {
        case ("cover", true): (x as! Book).cover = on ? (q as! Cover) : nil
        case ("cover", false): (q as! Cover).book = on ? (x as! Book) : nil
        case ("authors", true):
            if on { (x as! Book).$authors.insert(q as! Author) } else { (x as! Book).$authors.remove(q as! Author) }
        case ("authors", false):
            if on { (q as! Author).$books.insert(x as! Book) } else { (q as! Author).$books.remove(x as! Book) }
        case ("books", true):
            if on { (x as! Shelf).$books.insert(q as! Book) } else { (x as! Shelf).$books.remove(q as! Book) }
        case ("books", false): (q as! Book).shelf = on ? (x as! Shelf) : nil
        case (_, true): (x as! Book).shelf = on ? (q as! Shelf) : nil
        default:
            if on { (q as! Shelf).$books.insert(x as! Book) } else { (q as! Shelf).$books.remove(x as! Book) }
        }
    }

    /// How many objects `o` (X when `isX`, else Q) is linked to through the pair's relationship.
    static func linkCount(_ kind: String, of o: NSManagedObject, isX: Bool) -> Int {
        switch (kind, isX) {
        case ("cover", true): (o as! Book).cover == nil ? 0 : 1
        case ("cover", false): (o as! Cover).book == nil ? 0 : 1
        case ("authors", true): (o as! Book).authors.count
        case ("authors", false): (o as! Author).books.count
        case ("books", true): (o as! Shelf).books.count
        case ("books", false): (o as! Book).shelf == nil ? 0 : 1
        case (_, true): (o as! Book).shelf == nil ? 0 : 1
        default: (o as! Shelf).books.count
        }
    }
}
