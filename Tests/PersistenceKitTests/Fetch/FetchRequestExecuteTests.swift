import Foundation
import Synchronization
import Testing
@testable import PersistenceKit

/// `NSFetchRequest.execute()` fetches in the context whose block runs on the thread, as
/// Core Data's fetches in the current context.
@Suite("NSFetchRequest.execute()")
struct FetchRequestExecuteTests {
    /// The titles `execute()` returns, sorted.
    static func executedTitles() throws -> [String] {
        try NSFetchRequest<Book>(entityName: "Book").execute().map(\.title).sorted()
    }

    @Test("Inside a block it fetches in that block's context, unsaved objects included; nested blocks restore it")
    func currentContext() throws {
        let container = try Fixtures.container()
        let a = container.newBackgroundContext()
        let b = container.newBackgroundContext()
        let seen: [[String]] = try a.performAndWait {
            Book(context: a).title = "only in A"
            let first = try Self.executedTitles()
            let inner: [String] = try b.performAndWait {
                Book(context: b).title = "only in B"
                return try Self.executedTitles()
            }
            return [first, inner, try Self.executedTitles()]
        }
        #expect(seen == [["only in A"], ["only in B"], ["only in A"]])
        // The enqueued `perform(_:)`, too.
        let done = DispatchSemaphore(value: 0)
        let queued = Mutex<[String]>([])
        b.perform {
            let titles = (try? Self.executedTitles()) ?? ["failed"]
            queued.withLock { $0 = titles }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(queued.withLock { $0 } == ["only in B"])
    }

    @Test("perform and await perform set the current context too")
    func asyncPerform() async throws {
        let container = try Fixtures.container()
        let context = container.newBackgroundContext()
        let titles = try await context.perform {
            Book(context: context).title = "awaited"
            return try Self.executedTitles()
        }
        #expect(titles == ["awaited"])
        let seen = Mutex<[String]>([])
        await context.perform {
            let titles = (try? Self.executedTitles()) ?? ["failed"]
            seen.withLock { $0 = titles }
        }
        #expect(seen.withLock { $0 } == ["awaited"])
    }

    @Test("Outside any context's block it throws, typed")
    func outsideABlock() throws {
        let error = #expect(throws: CoreDataError.self) { _ = try NSFetchRequest<Book>(entityName: "Book").execute() }
        #expect(error?.code == .coreData)
        #expect(error?.message.contains("perform") == true)
    }
}
