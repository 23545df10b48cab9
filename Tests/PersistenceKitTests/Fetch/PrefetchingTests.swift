import Foundation
import Testing
@testable import PersistenceKit

/// `relationshipKeyPathsForPrefetching`: one read of the store per relationship step during
/// the fetch, none when the prefetched objects are read afterwards, and the same results as
/// without it. Every test runs on the in-memory store and on the file store (`file`).
@Suite("Prefetching relationships") struct PrefetchingTests {
    /// Runs `body` with a rig on the in-memory store, or on a file store in a folder of its
    /// own.
    private func withRig(file: Bool, _ name: String = #function, _ body: (PrefetchRig) throws -> Void) throws {
        let folder = try TemporaryFolder(name)
        let rig = try PrefetchRig(fileAt: file ? folder.storeURL : nil)
        defer { try? rig.close() }
        try body(rig)
    }

    /// Expects `prefetched` to cost `passes` reads during the fetch and none afterwards, and
    /// to give what `plain` (the same fetch without prefetching) gave.
    private func expectPrefetched<V: Equatable>(
        _ prefetched: PrefetchRig.Run<V>, _ plain: PrefetchRig.Run<V>, passes: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(prefetched.fetchPasses == passes, "store passes during the fetch", sourceLocation: sourceLocation)
        #expect(prefetched.readPasses == 0, "store reads after the fetch", sourceLocation: sourceLocation)
        #expect(prefetched.ids == plain.ids, sourceLocation: sourceLocation)
        #expect(prefetched.value == plain.value, sourceLocation: sourceLocation)
        #expect(plain.fetchPasses == 0, sourceLocation: sourceLocation)
    }

    @Test(arguments: [false, true]) func toOneLoadsEveryTargetInOnePass(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (books: [Book]) in books.map { "\($0.title):\($0.shelf?.name ?? "-")" } }
            let prefetched = try rig.run(Book.self, prefetching: ["shelf"], order: "title", read: read)
            let plain = try rig.run(Book.self, prefetching: nil, order: "title", read: read)
            expectPrefetched(prefetched, plain, passes: 1)
            #expect(prefetched.value == ["a:Full", "b:Full", "c:Full", "d:Half", "loose:-"])
            #expect(plain.readPasses == 2, "one read per shelf without prefetching")
        }
    }

    @Test(arguments: [false, true]) func toManyLoadsEveryTargetInOnePass(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (shelves: [Shelf]) in shelves.map { "\($0.name):" + $0.books.map(\.title).sorted().joined() } }
            let prefetched = try rig.run(Shelf.self, prefetching: ["books"], order: "name", read: read)
            let plain = try rig.run(Shelf.self, prefetching: nil, order: "name", read: read)
            expectPrefetched(prefetched, plain, passes: 1)
            #expect(prefetched.value == ["Empty:", "Full:abc", "Half:d"])
            #expect(plain.readPasses == 2, "without prefetching, one pass per to-many fault fired (shelves with books)")
        }
    }

    @Test(arguments: [false, true]) func manyToManyLoadsEveryTargetInOnePass(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (authors: [Author]) in authors.map { "\($0.name):" + $0.books.map(\.title).sorted().joined() } }
            let prefetched = try rig.run(Author.self, prefetching: ["books"], order: "name", read: read)
            let plain = try rig.run(Author.self, prefetching: nil, order: "name", read: read)
            expectPrefetched(prefetched, plain, passes: 1)
            #expect(prefetched.value == ["Ann:abd", "Bo:cd", "Cy:a"])
        }
    }

    /// `authors.books` from book c: its author Bo (one pass), then Bo's books, of which only
    /// d is not loaded yet (one pass).
    @Test(arguments: [false, true]) func twoStepsLoadOnePassEach(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (books: [Book]) in
                books.map { $0.authors.map { a in "\(a.name):" + a.books.map(\.title).sorted().joined() }.sorted() }
            }
            let c = #Predicate<Book> { $0.title == "c" }
            let prefetched = try rig.run(Book.self, prefetching: ["authors.books"], order: "title", where: c, read: read)
            let plain = try rig.run(Book.self, prefetching: nil, order: "title", where: c, read: read)
            expectPrefetched(prefetched, plain, passes: 2)
            #expect(prefetched.value == [["Bo:cd"]])
        }
    }

    /// Through a to-one, a to-one and a to-many: covers → books d and a → shelves Half and
    /// Full → their books, of which b and c are new.
    @Test(arguments: [false, true]) func threeStepsThroughToOnesLoadOnePassEach(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (covers: [Cover]) in
                covers.map { "\($0.color):" + ($0.book?.shelf?.books.map(\.title).sorted().joined() ?? "-") }
            }
            let prefetched = try rig.run(Cover.self, prefetching: ["book.shelf.books"], order: "color", read: read)
            let plain = try rig.run(Cover.self, prefetching: nil, order: "color", read: read)
            expectPrefetched(prefetched, plain, passes: 3)
            #expect(prefetched.value == ["blue:d", "red:abc"])
        }
    }

    /// `book` and `book.shelf` share their first step: two passes, not three.
    @Test(arguments: [false, true]) func keyPathsSharingAPrefixShareItsPass(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (covers: [Cover]) in covers.map { "\($0.book?.title ?? "-"):\($0.book?.shelf?.name ?? "-")" } }
            let prefetched = try rig.run(Cover.self, prefetching: ["book", "book.shelf"], order: "color", read: read)
            let plain = try rig.run(Cover.self, prefetching: nil, order: "color", read: read)
            expectPrefetched(prefetched, plain, passes: 2)
            #expect(prefetched.value == ["d:Half", "a:Full"])
        }
    }

    @Test(arguments: [false, true]) func aNilToOneReadsNothing(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (books: [Book]) in books.map { "\($0.shelf?.name ?? "-"):\($0.cover?.color ?? "-")" } }
            let loose = #Predicate<Book> { $0.title == "loose" }
            let prefetched = try rig.run(Book.self, prefetching: ["shelf", "cover.book"], order: "title", where: loose, read: read)
            let plain = try rig.run(Book.self, prefetching: nil, order: "title", where: loose, read: read)
            expectPrefetched(prefetched, plain, passes: 0)
            #expect(prefetched.value == ["-:-"])
        }
    }

    @Test(arguments: [false, true]) func anEmptyToManyReadsNothing(file: Bool) throws {
        try withRig(file: file) { rig in
            let read = { (shelves: [Shelf]) in shelves.map { $0.books.count } }
            let empty = #Predicate<Shelf> { $0.name == "Empty" }
            let prefetched = try rig.run(Shelf.self, prefetching: ["books.authors"], order: "name", where: empty, read: read)
            let plain = try rig.run(Shelf.self, prefetching: nil, order: "name", where: empty, read: read)
            expectPrefetched(prefetched, plain, passes: 0)
            #expect(prefetched.value == [0])
        }
    }

    /// Objects fetched with their values have their to-many relationships resolved: no
    /// relationship fault is left to fire.
    @Test(arguments: [false, true]) func fetchedObjectsWithValuesHaveToManysResolved(file: Bool) throws {
        try withRig(file: file) { rig in
            let run = try rig.run(Shelf.self, prefetching: ["books"], order: "name", returnsObjectsAsFaults: false) { shelves in
                shelves.map { $0.hasFault(forRelationshipNamed: "books") }
            }
            #expect(run.value == [false, false, false])
            #expect(run.fetchPasses == 1)
        }
    }

    /// A target registered before the fetch as a fault that holds no row gets its row in the
    /// step's pass.
    @Test(arguments: [false, true]) func aRegisteredFaultTargetIsLoadedInTheSamePass(file: Bool) throws {
        try withRig(file: file) { rig in
            let ctx = rig.context()
            try ctx.performAndWait {
                let ids = try ctx.fetch(NSFetchRequest<NSManagedObjectID>(entityName: "Shelf").with(resultType: .managedObjectIDResultType))
                let faults = ids.map { ctx.object(with: $0) }
                let allFaults = faults.allSatisfy(\.isFault)
                #expect(allFaults)
                let request = Book.fetchRequest()
                request.relationshipKeyPathsForPrefetching = ["shelf"]
                let start = rig.store.passes
                let books = try ctx.fetch(request)
                #expect(rig.store.passes - start == 1)
                let fetched = rig.store.passes
                #expect(Set(books.compactMap { $0.shelf?.name }) == ["Full", "Half"])
                #expect(rig.store.passes == fetched)
                #expect(Set(books.compactMap(\.shelf).map(ObjectIdentifier.init)).isSubset(of: Set(faults.map(ObjectIdentifier.init))))
            }
        }
    }

    @Test(arguments: [false, true]) func aKeyPathNamingNoRelationshipThrows(file: Bool) throws {
        try withRig(file: file) { rig in
            let ctx = rig.context()
            let start = rig.store.passes
            ctx.performAndWait {
                for (keyPath, entity) in [("publisher", "Book"), ("title", "Book"), ("shelf.owner", "Shelf"), ("shelf.", "Shelf")] {
                    let request = Book.fetchRequest()
                    request.predicate = #Predicate<Book> { $0.title == "none" }  // no result: checked all the same
                    request.relationshipKeyPathsForPrefetching = ["shelf", keyPath]
                    let error = #expect(throws: CoreDataError.self) { try ctx.fetch(request) }
                    #expect(error?.code == .coreData)
                    #expect(error?.key == keyPath)
                    #expect(error?.message.contains("'\(entity)'") == true, "\(error?.message ?? "")")
                }
                #expect(rig.store.passes == start)
            }
        }
    }

    /// The batch read of the store API: rows in the order asked, missing rows left out.
    @Test(arguments: [false, true]) func theStoreReadsRowsByIDInOnePass(file: Bool) throws {
        try withRig(file: file) { rig in
            let books = try rig.store.fetchRows(entity: try entityIndex("Book", rig), filter: nil)
            let ids = books.map(\.id).reversed() + [StoreRowID(entity: books[0].id.entity, primaryKey: 999)]
            let rows = try rig.store.fetchRows(Array(ids))
            #expect(rows == Array(books.reversed()))
            #expect(rig.store.batchReads.load(ordering: .relaxed) == 1)
            #expect(try rig.store.fetchRows([]).isEmpty)
        }
    }

    private func entityIndex(_ name: String, _ rig: PrefetchRig) throws -> Int32 {
        try #require(rig.coordinator.managedObjectModel.entitiesByName[name]).index
    }
}

extension NSFetchRequest {
    /// The request with its result type set.
    fileprivate func with(resultType: NSFetchRequestResultType) -> Self {
        self.resultType = resultType
        return self
    }
}
