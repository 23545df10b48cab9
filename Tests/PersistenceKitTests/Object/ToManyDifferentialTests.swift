import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

// A randomized differential run over the to-many edit tracking, the bulk registration of a
// large to-many's faults and merging, checked against the graph a fresh context reads.
// Deeper runs: PK_DIFF_SEEDS / PK_DIFF_STEPS, and the large-shelf variant with
// PK_DIFF_BIG_SEEDS / PK_DIFF_BIG_STEPS (2,400 seeds of 100 steps, 800 of 150 and 6 large
// seeds have passed).

/// The graph of relationships a context sees, and how two compare.
enum TMDiff {
    typealias Graph = [String: Set<String>]

    static func key(_ o: NSManagedObject) -> String {
        if let r = o.rowID { return "\(o.entity.name)#\(r.primaryKey)" }
        return "\(o.entity.name)#new\(ObjectIdentifier(o).hashValue)"
    }

    /// Every relationship of every object `context` fetches, by row, and the problems
    /// (inverses that disagree, targets not in the context).
    static func graph(_ c: NSManagedObjectContext) throws -> (graph: Graph, problems: [String]) {
        var g: Graph = [:]
        var problems: [String] = []
        func bad(_ t: NSManagedObject, _ from: String) {
            if t.managedObjectContext !== c { problems.append("\(from) -> \(key(t)) not in context") }
            else if t.isDeleted { problems.append("\(from) -> \(key(t)) deleted") }
        }
        let shelves = try c.fetch(Shelf.fetchRequest())
        let books = try c.fetch(Book.fetchRequest())
        let authors = try c.fetch(Author.fetchRequest())
        let covers = try c.fetch(Cover.fetchRequest())
        var shelfBooks: [ObjectIdentifier: Set<Book>] = [:]
        var authorBooks: [ObjectIdentifier: Set<Book>] = [:]
        func booksOf(_ s: Shelf) -> Set<Book> {
            if let known = shelfBooks[ObjectIdentifier(s)] { return known }
            let set = s.books
            shelfBooks[ObjectIdentifier(s)] = set
            return set
        }
        func booksOf(_ a: Author) -> Set<Book> {
            if let known = authorBooks[ObjectIdentifier(a)] { return known }
            let set = a.books
            authorBooks[ObjectIdentifier(a)] = set
            return set
        }
        for s in shelves {
            let k = key(s) + ".books"
            g[k] = Set(booksOf(s).map(key))
            for b in booksOf(s) {
                bad(b, k)
                if b.managedObjectContext === c && !b.isDeleted && b.shelf !== s {
                    problems.append("\(k) has \(key(b)) whose shelf is \(b.shelf.map(key) ?? "nil")")
                }
            }
        }
        for b in books {
            let kb = key(b)
            g[kb + ".shelf"] = Set(b.shelf.map { [key($0)] } ?? [])
            g[kb + ".authors"] = Set(b.authors.map(key))
            g[kb + ".cover"] = Set(b.cover.map { [key($0)] } ?? [])
            if let s = b.shelf {
                bad(s, kb + ".shelf")
                if s.managedObjectContext === c && !s.isDeleted && !booksOf(s).contains(b) {
                    problems.append("\(kb).shelf = \(key(s)) which does not list it")
                }
            }
            for a in b.authors {
                bad(a, kb + ".authors")
                if a.managedObjectContext === c && !a.isDeleted && !booksOf(a).contains(b) {
                    problems.append("\(kb).authors has \(key(a)) which does not list it")
                }
            }
            if let cv = b.cover {
                bad(cv, kb + ".cover")
                if cv.managedObjectContext === c && !cv.isDeleted && cv.book !== b {
                    problems.append("\(kb).cover = \(key(cv)) whose book is \(cv.book.map(key) ?? "nil")")
                }
            }
        }
        for a in authors {
            let k = key(a) + ".books"
            g[k] = Set(booksOf(a).map(key))
            for b in booksOf(a) {
                bad(b, k)
                if b.managedObjectContext === c && !b.isDeleted && !b.authors.contains(a) {
                    problems.append("\(k) has \(key(b)) which does not list it")
                }
            }
        }
        for cv in covers {
            let k = key(cv) + ".book"
            g[k] = Set(cv.book.map { [key($0)] } ?? [])
            if let b = cv.book {
                bad(b, k)
                if b.managedObjectContext === c && !b.isDeleted && b.cover !== cv {
                    problems.append("\(k) = \(key(b)) whose cover is \(b.cover.map(key) ?? "nil")")
                }
            }
        }
        return (g, problems)
    }

    static func diff(_ a: Graph, _ b: Graph) -> [String] {
        var out: [String] = []
        for k in Set(a.keys).union(b.keys).sorted() where a[k] != b[k] {
            out.append("\(k): \(a[k].map { $0.sorted().description } ?? "absent") vs \(b[k].map { $0.sorted().description } ?? "absent")")
        }
        return out
    }
}

@Suite("To-many edits checked against an oracle") struct ToManyDifferentialTests {
    static func run(seed: UInt64, steps: Int, onFile: Bool, mergeMode: Int, big: Int = 0) throws {
        let folder = try TemporaryFolder()
        var random = FSRandom(seed: seed)
        func roll(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[roll(items.count)] }
        func makeContainer() throws -> NSPersistentContainer {
            onFile ? try FSSupport.container(at: folder.storeURL) : try Fixtures.container()
        }
        var container = try makeContainer()
        var log: [String] = []
        let tag = "seed \(seed) \(onFile ? "file" : "memory") merge \(mergeMode)"
        func contexts() -> (NSManagedObjectContext, NSManagedObjectContext) {
            let a = container.newBackgroundContext()
            let b = container.newBackgroundContext()
            a.name = "A"
            b.name = "B"
            if mergeMode == 1 { a.automaticallyMergesChangesFromParent = true }
            if mergeMode == 2 { a.performAndWait { a.mergePolicy = .mergeByPropertyObjectTrump } }
            return (a, b)
        }
        var (context, other) = contexts()
        defer { try? FSSupport.close(container) }
        if big > 0 {
            _ = try DerivedEndsTests.seedShelf(other, books: big)
            _ = try DerivedEndsTests.seedShelf(other, books: big / 2 + ObjectRegistry.bulkThreshold / 2)
        }

        for step in 0..<steps {
            if big > 0 && roll(2) == 0 {
                // A new editing context: its first look at a large shelf registers the books in bulk.
                let keep = other
                (context, other) = contexts()
                other = keep
                if roll(2) == 0 {
                    // Some books registered first, in various states, before the shelf's books are.
                    try context.performAndWait {
                        let request = Book.fetchRequest()
                        request.fetchLimit = 20
                        request.fetchOffset = roll(big)
                        let some = try context.fetch(request)
                        for (n, b) in some.enumerated() {
                            switch n % 5 {
                            case 0: context.delete(b)
                            case 1: b.title = "changed"
                            case 2: context.refresh(b, mergeChanges: false)
                            case 3: b.shelf = nil
                            default: break
                            }
                        }
                    }
                }
            }
            // Edits in A.
            var saveError: String?
            try context.performAndWait {
                func live<T: NSManagedObject>(_ items: [T]) -> [T] {
                    items.filter { $0.managedObjectContext === context && !$0.isDeleted }
                }
                var shelves = try context.fetch(Shelf.fetchRequest())
                var books = big > 0 && roll(4) != 0
                    ? Array(Set(shelves.flatMap { $0.books }).filter { _ in roll(50) == 0 })
                    : try context.fetch(Book.fetchRequest())
                var authors = try context.fetch(Author.fetchRequest())
                for _ in 0..<(1 + roll(5)) {
                    shelves = live(shelves)
                    books = live(books)
                    authors = live(authors)
                    let op = roll(26)
                    log.append("step \(step) A op \(op)")
                    switch op {
                    case 0: let s = Shelf(context: context); s.name = "s\(step)"; shelves.append(s)
                    case 1: let a = Author(context: context); a.name = "a\(step)"; authors.append(a)
                    case 2, 3:
                        let b = Book(context: context)
                        b.title = "b\(step)"
                        b.shelf = pick(shelves)
                        books.append(b)
                    case 4: pick(books)?.shelf = roll(4) == 0 ? nil : pick(shelves)
                    case 5: if let s = pick(shelves), let b = pick(books) { s.$books.insert(b) }
                    case 6: if let s = pick(shelves), let b = s.books.randomElement(using: &random) { s.$books.remove(b) }
                    case 7: if let b = pick(books), let a = pick(authors) { b.$authors.insert(a) }
                    case 8: if let b = pick(books), let a = b.authors.randomElement(using: &random) { b.$authors.remove(a) }
                    case 9: if let b = pick(books), let a = pick(authors) { a.$books.insert(b) }
                    case 10: if let a = pick(authors), let b = a.books.randomElement(using: &random) { a.$books.remove(b) }
                    case 11:
                        // The same target in and out, repeatedly.
                        if let s = pick(shelves), let b = pick(books) {
                            for _ in 0..<(1 + roll(4)) {
                                s.$books.insert(b)
                                if roll(3) == 0 { b.shelf = nil } else { s.$books.remove(b) }
                            }
                            if roll(2) == 0 { s.$books.insert(b) }
                        }
                    case 12:
                        if let a = pick(authors), let b = pick(books) {
                            for _ in 0..<(1 + roll(4)) {
                                if roll(2) == 0 { a.$books.insert(b) } else { b.$authors.insert(a) }
                                if roll(2) == 0 { a.$books.remove(b) } else { b.$authors.remove(a) }
                            }
                            if roll(2) == 0 { b.$authors.insert(a) }
                        }
                    case 13: if let b = pick(books) { context.delete(b) }
                    case 14: if roll(2) == 0, let s = pick(shelves) { context.delete(s) }
                    case 15: if let a = pick(authors) { context.delete(a) }
                    case 16:
                        let all: [NSManagedObject] = shelves + books + authors
                        if let o = pick(all), !o.isInserted { context.refresh(o, mergeChanges: roll(2) == 0) }
                    case 17: if roll(4) == 0 { context.rollback() }
                    case 18: if roll(8) == 0 { context.reset() }
                    case 19:
                        if let s = pick(shelves) {
                            s.setValue(Set(books.filter { _ in roll(4) == 0 }), forKey: "books")
                        }
                    case 20:
                        if let a = pick(authors) {
                            a.setValue(Set(books.filter { _ in roll(3) == 0 }), forKey: "books")
                        }
                    case 21:
                        if let b = pick(books) {
                            if roll(2) == 0 { b.cover = Cover(context: context) } else if let c = b.cover { context.delete(c) }
                        }
                    case 22: context.processPendingChanges()
                    case 23: try context.obtainPermanentIDs(for: Array(context.insertedObjects))
                    case 24:
                        if roll(3) == 0 { context.refreshAllObjects() }
                    default:
                        // Move a book from one shelf to another by the to-many side.
                        if let s = pick(shelves), let t = pick(shelves), let b = s.books.randomElement(using: &random) {
                            s.$books.remove(b)
                            t.$books.insert(b)
                        }
                    }
                }
            }
            if roll(3) == 0 { try otherStep(step) }
            context.performAndWait {
                do {
                    try context.save()
                } catch {
                    log.append("step \(step) A save failed: \(error)")
                    // Fix: undelete the authors a deny rule kept, then save again.
                    let fixByClearing = roll(2) == 0
                    for case let a as Author in context.deletedObjects where !a.books.isEmpty {
                        if fixByClearing { a.$books.removeAll() } else { context.refresh(a, mergeChanges: false) }
                    }
                    do {
                        try context.save()
                        log.append("step \(step) A save after fix ok")
                    } catch {
                        saveError = "\(error)"
                        log.append("step \(step) A second save failed: \(error)")
                        context.rollback()
                    }
                }
            }
            _ = saveError

            // Another context edits and saves, sometimes; A merges.
            if roll(4) == 0 {
                try otherStep(step)
                // A saves what the merge left changed (rebased objects keep their changes).
                context.performAndWait {
                    do { try context.save() } catch {
                        log.append("step \(step) A post-merge save failed: \(error)")
                        context.rollback()
                    }
                }
            }
            func otherStep(_ step: Int) throws {
                let saved = TestMutex<Notification?>(nil)
                let token = NotificationCenter.default.addObserver(
                    forName: .NSManagedObjectContextDidSave, object: other, queue: nil
                ) { n in saved.withLock { $0 = n } }
                try other.performAndWait {
                    other.reset()
                    let shelves = try other.fetch(Shelf.fetchRequest())
                    let books = try other.fetch(Book.fetchRequest())
                    let authors = try other.fetch(Author.fetchRequest())
                    for _ in 0..<(1 + roll(3)) {
                        let op = roll(9)
                        log.append("step \(step) B op \(op)")
                        switch op {
                        case 0: if let b = pick(books), !b.isDeleted { other.delete(b) }
                        case 1: if let s = pick(shelves), !s.isDeleted { other.delete(s) }
                        case 2:
                            if let a = pick(authors), !a.isDeleted {
                                a.$books.removeAll()
                                other.delete(a)
                            }
                        case 3: if let b = pick(books), !b.isDeleted { b.shelf = pick(shelves.filter { !$0.isDeleted }) }
                        case 4: if let b = pick(books), let a = pick(authors), !b.isDeleted, !a.isDeleted { b.$authors.insert(a) }
                        case 5: if let b = pick(books), !b.isDeleted, let a = b.authors.randomElement(using: &random) { a.$books.remove(b) }
                        case 6:
                            let b = Book(context: other)
                            b.title = "B\(step)"
                            b.shelf = pick(shelves.filter { !$0.isDeleted })
                        default: if let s = pick(shelves), !s.isDeleted, let b = pick(books), !b.isDeleted { s.$books.insert(b) }
                        }
                    }
                    do { try other.save() } catch {
                        log.append("step \(step) B save failed: \(error)")
                        other.rollback()
                    }
                }
                NotificationCenter.default.removeObserver(token)
                switch mergeMode {
                case 0:
                    if let note = saved.withLock({ $0 }) {
                        context.performAndWait { context.mergeChanges(fromContextDidSave: note) }
                    }
                case 1:
                    context.performAndWait {}  // the automatic merge ran before this
                default:
                    break  // A stays stale: its saves meet conflicts
                }
            }

            // Check: A's graph (fresh for mode 2) against a fresh context's.
            if mergeMode == 2 && step % 5 != 4 && !(onFile && step % 10 == 9) {
                let fresh = container.newBackgroundContext()
                let storedProblems = try fresh.performAndWait { try TMDiff.graph(fresh).problems }
                #expect(storedProblems.isEmpty, "\(tag) step \(step): fresh context: \(storedProblems)\n\(log.suffix(30).joined(separator: "\n"))")
                if !storedProblems.isEmpty { return }
                continue
            }
            let (held, heldProblems) = try context.performAndWait {
                if mergeMode == 2 { context.refreshAllObjects() }
                return try TMDiff.graph(context)
            }
            let fresh = container.newBackgroundContext()
            let (stored, storedProblems) = try fresh.performAndWait { try TMDiff.graph(fresh) }
            let d = TMDiff.diff(held, stored)
            #expect(d.isEmpty, "\(tag) step \(step): editing context vs fresh context:\n\(d.joined(separator: "\n"))\n\(log.suffix(30).joined(separator: "\n"))")
            #expect(heldProblems.isEmpty, "\(tag) step \(step): editing context: \(heldProblems)\n\(log.suffix(30).joined(separator: "\n"))")
            #expect(storedProblems.isEmpty, "\(tag) step \(step): fresh context: \(storedProblems)\n\(log.suffix(30).joined(separator: "\n"))")
            if !d.isEmpty || !heldProblems.isEmpty || !storedProblems.isEmpty { return }

            // Every tenth step on file: close, reopen, compare, continue with new contexts.
            if onFile && step % 10 == 9 {
                try FSSupport.close(container)
                (context, other) = (container.newBackgroundContext(), container.newBackgroundContext())  // drop the old ones
                container = try makeContainer()
                (context, other) = contexts()
                let reopened = container.newBackgroundContext()
                let (again, problems) = try reopened.performAndWait { try TMDiff.graph(reopened) }
                let d2 = TMDiff.diff(held, again)
                #expect(d2.isEmpty, "\(tag) step \(step): after reopening:\n\(d2.joined(separator: "\n"))")
                #expect(problems.isEmpty, "\(tag) step \(step): after reopening: \(problems)")
                if !d2.isEmpty || !problems.isEmpty { return }
            }
        }
    }

    /// Randomized differential run: random edits in one context (with another context's
    /// saves merged in), and after each save, a fresh context — and every few steps a fresh
    /// container on the reopened file store — must see exactly the graph the editing context
    /// holds, with inverses agreeing.
    /// Not run by default (no seeds): under Thread Sanitizer one seed took 100 s on a
    /// cooperative thread, and the suite's async tests waiting for one hit their time limits.
    @Test(arguments: Array(UInt64(1)..<(1 + (ProcessInfo.processInfo.environment["PK_DIFF_BIG_SEEDS"].flatMap { UInt64($0) } ?? 0))))
    func randomDifferentialLarge(seed: UInt64) throws {
        try Self.run(seed: seed, steps: ProcessInfo.processInfo.environment["PK_DIFF_BIG_STEPS"].flatMap { Int($0) } ?? 5, onFile: seed % 2 == 1, mergeMode: Int(seed / 2 % 3), big: 5000)
    }

    @Test(arguments: Array(UInt64(1)...UInt64(ProcessInfo.processInfo.environment["PK_DIFF_SEEDS"].flatMap { UInt64($0) } ?? 16)))
    func randomDifferential(seed: UInt64) throws {
        try Self.run(seed: seed, steps: ProcessInfo.processInfo.environment["PK_DIFF_STEPS"].flatMap { Int($0) } ?? 60, onFile: seed % 2 == 1, mergeMode: Int(seed / 2 % 3))
    }
}
