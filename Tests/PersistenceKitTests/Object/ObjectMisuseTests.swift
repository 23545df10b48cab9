import Foundation
import Testing
import PersistenceKit

/// Reading or writing an object in a way Core Data forbids (wrong type, unknown key, another
/// context) traps with a message naming the property.
@Suite("Misused objects trap with a precise message") struct ObjectMisuseTests {
    // MARK: Traps (Core Data raises exceptions for these)

    @Test func setValueWithWrongTypeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                book.setValue("many", forKey: "pages")
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Book.pages"), "stderr: \(text)")
        #expect(text.contains("String"), "stderr: \(text)")
    }

    @Test func setValueOfAnotherEntityOnARelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                let author = Author(context: context)
                book.setValue(author, forKey: "shelf")
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Book.shelf") || text.contains("'shelf'"), "stderr: \(text)")
        #expect(text.contains("Shelf"), "stderr: \(text)")
        #expect(text.contains("Author"), "stderr: \(text)")
    }

    @Test func keyPathThroughAToManyRelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let shelf = Shelf(context: context)
                _ = shelf.value(forKeyPath: "books.title")
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("books.title"), "stderr: \(text)")
        #expect(text.contains("'books' of entity 'Shelf' is not a to-one relationship"), "stderr: \(text)")
    }

    @Test func unknownKeyInValueForKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                _ = book.value(forKey: "isbn")
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("isbn"), "stderr: \(text)")
        #expect(text.contains("Book"), "stderr: \(text)")
    }

    @Test func unknownKeyInSetValueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let shelf = Shelf(context: context)
                shelf.setValue("x", forKey: "colour")
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("colour"), "stderr: \(text)")
        #expect(text.contains("Shelf"), "stderr: \(text)")
    }

    @Test func readingAnObjectWhoseDeletionWasSavedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let book = Book(context: context)
                book.title = "Gone"
                try context.save()
                context.delete(book)
                try context.save()
                _ = book.title
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Book"), "stderr: \(text)")
        #expect(text.contains("title"), "stderr: \(text)")
    }

    @Test func relatingObjectsOfDifferentContextsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let a = container.newBackgroundContext()
            let b = container.newBackgroundContext()
            let shelf = a.performAndWait { Shelf(context: a) }
            b.performAndWait {
                let book = Book(context: b)
                a.performAndWait { book.shelf = shelf }
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("shelf"), "stderr: \(text)")
        #expect(text.contains("context"), "stderr: \(text)")
    }

    @Test func mutableSetValueOnAToOneRelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                _ = book.mutableSetValue(forKey: "shelf").count
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Book.shelf"), "stderr: \(text)")
        #expect(text.contains("to-many"), "stderr: \(text)")
    }

    @Test func projectedSetOfAToOneRelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                _ = book.$shelf.count
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("shelf"), "stderr: \(text)")
        #expect(text.contains("to-many"), "stderr: \(text)")
    }

    @Test func valueForKeyOnADeletedAndSavedObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let shelf = Shelf(context: context)
                try context.save()
                context.delete(shelf)
                try context.save()
                _ = shelf.value(forKey: "name")
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Shelf"), "stderr: \(text)")
        #expect(text.contains("name"), "stderr: \(text)")
    }

    // MARK: setPrimitiveValue with an object of another entity

    /// The doc says setPrimitiveValue "traps on ... a value of the wrong type". An Author
    /// accepted for Book.shelf and saved would make a fresh context read a phantom Shelf (the
    /// Author's row decoded as a Shelf) that no fetch of Shelf returns.
    @Test func setPrimitiveValueWithAnObjectOfTheWrongEntityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try Fixtures.container()
            let context = container.newBackgroundContext()
            context.performAndWait {
                let book = Book(context: context)
                book.setPrimitiveValue(Author(context: context), forKey: "shelf")
            }
        }
        let text = MisuseSupport.stderr(result)
        #expect(text.contains("Book.shelf") || text.contains("'shelf'"), "stderr: \(text)")
        #expect(text.contains("Author"), "stderr: \(text)")
    }
}
