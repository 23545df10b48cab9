import Foundation
import Testing
@testable import PersistenceKit

/// The stores every batch request is tested on.
enum BatchStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory, file
    var testDescription: String { rawValue }
}

enum BatchSupport {
    /// A container with a store of `kind` of its own (a file store inside `folder`).
    static func container(_ kind: BatchStoreKind, in folder: borrowing TemporaryFolder, name: String = #function) throws
        -> NSPersistentContainer
    {
        switch kind {
        case .inMemory: try Fixtures.container(name: name)
        case .file: try FSSupport.container(at: folder.storeURL, name: name)
        }
    }

    /// Saves one book per `(title, pages)`; returns their IDs in that order.
    static func seedBooks(_ container: NSPersistentContainer, _ books: [(String, Int64)]) throws -> [NSManagedObjectID] {
        let ctx = container.newBackgroundContext()
        return try ctx.performAndWait {
            let made = books.map { title, pages in
                let b = Book(context: ctx)
                b.title = title
                b.pages = pages
                return b
            }
            try ctx.save()
            return made.map(\.objectID)
        }
    }

    /// Every stored book as "title:pages", sorted, read in a new context.
    static func books(_ container: NSPersistentContainer) throws -> [String] {
        let ctx = container.newBackgroundContext()
        return try ctx.performAndWait {
            try ctx.fetch(Book.fetchRequest()).map { "\($0.title):\($0.pages)" }.sorted()
        }
    }

    /// Executes `request` on a new context of `container`.
    static func execute(_ request: NSPersistentStoreRequest, on container: NSPersistentContainer) throws -> NSPersistentStoreResult {
        let ctx = container.newBackgroundContext()
        return try ctx.performAndWait { try ctx.execute(request) }
    }
}
