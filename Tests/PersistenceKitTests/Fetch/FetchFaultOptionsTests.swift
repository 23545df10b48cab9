import Foundation
import Testing
@testable import PersistenceKit

/// `returnsObjectsAsFaults` and `includesSubentities`, as Core Data documents them, on the
/// in-memory store and on the file store (`file`).
@Suite("Fetch fault options") struct FetchFaultOptionsTests {
    private func withRig(file: Bool, _ name: String = #function, _ body: (PrefetchRig) throws -> Void) throws {
        let folder = try TemporaryFolder(name)
        let rig = try PrefetchRig(fileAt: file ? folder.storeURL : nil)
        defer { try? rig.close() }
        try body(rig)
    }

    /// By default the objects are faults, which hold the rows the fetch read: firing them
    /// reads no store.
    @Test(arguments: [false, true]) func objectsAreFaultsHoldingTheirRowsByDefault(file: Bool) throws {
        try withRig(file: file) { rig in
            let run = try rig.run(Book.self, prefetching: nil, order: "title") { books in
                books.map(\.isFault) + books.map { !$0.title.isEmpty }
            }
            #expect(run.value == Array(repeating: true, count: 10))
            #expect(run.readPasses == 0)
        }
    }

    /// With `false`, the objects come back with their values (not faults), read in the fetch.
    @Test(arguments: [false, true]) func objectsComeWithTheirValuesWhenNotFaults(file: Bool) throws {
        try withRig(file: file) { rig in
            let run = try rig.run(Book.self, prefetching: nil, order: "title", returnsObjectsAsFaults: false) { books in
                books.map { $0.isFault ? "fault" : $0.title }
            }
            #expect(run.value == ["a", "b", "c", "d", "loose"])
            #expect(run.fetchPasses == 0)
            #expect(run.readPasses == 0)
        }
    }

    /// An object registered with its values stays so when a later fetch returns it: only
    /// the objects the fetch registers or that are still faults come back as faults.
    @Test(arguments: [false, true]) func aRegisteredObjectWithValuesIsNotTurnedIntoAFault(file: Bool) throws {
        try withRig(file: file) { rig in
            let ctx = rig.context()
            try ctx.performAndWait {
                let one = Book.fetchRequest()
                one.predicate = #Predicate<Book> { $0.title == "b" }
                let b = try #require(try ctx.fetch(one).first)
                #expect(b.title == "b")
                #expect(!b.isFault)
                let all = Book.fetchRequest()
                all.sortKeys = [SortKey("title")]
                let books = try ctx.fetch(all)
                #expect(books.map(\.isFault) == [true, false, true, true, true])
                #expect(books[1] === b)
            }
        }
    }

    /// Without entity inheritance no entity has sub-entities: leaving them out changes
    /// neither the objects nor their count.
    @Test(arguments: [false, true]) func leavingOutSubentitiesFetchesTheSameObjects(file: Bool) throws {
        try withRig(file: file) { rig in
            let ctx = rig.context()
            try ctx.performAndWait { () throws in
                let with = Book.fetchRequest()
                with.sortKeys = [SortKey("title")]
                #expect(with.includesSubentities)
                let without = Book.fetchRequest()
                without.sortKeys = [SortKey("title")]
                without.includesSubentities = false
                #expect(try ctx.fetch(without).map(\.objectID) == ctx.fetch(with).map(\.objectID))
                #expect(try ctx.count(for: without) == 5)
            }
        }
    }
}
