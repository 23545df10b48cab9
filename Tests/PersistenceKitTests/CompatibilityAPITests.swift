import Foundation
import Testing
@testable import PersistenceKit

/// Small Core Data members that ported code uses: `userInfo` of a context, `faultingState`
/// of an object.
@Suite struct CompatibilityAPITests {
    /// Core Data's `name` is developer-provided: nil on the container's view context until
    /// set (found in a compatibility review: it read "viewContext"). Messages still call the
    /// view context so (QueueDisciplineTests checks a trap's text).
    @Test @MainActor func theViewContextHasNoNameUntilOneIsGiven() throws {
        let container = try Fixtures.container()
        #expect(container.viewContext.name == nil)
        #expect(container.viewContext.description.contains("viewContext"))
        container.viewContext.name = "main"
        #expect(container.viewContext.name == "main")
        #expect(container.viewContext.description.contains("main"))
        #expect(container.newBackgroundContext().name == nil)
    }

    @Test func aContextKeepsItsUserInfoBetweenPerformBlocks() throws {
        let context = try Fixtures.container().newBackgroundContext()
        context.performAndWait { context.userInfo["importer"] = "nightly" }
        let value = context.performAndWait { context.userInfo["importer"] as? String }
        #expect(value == "nightly")
        let other = try Fixtures.container().newBackgroundContext()
        #expect(other.performAndWait { other.userInfo.count } == 0, "each context has its own")
    }

    @Test func faultingStateIsZeroOnlyOnceValuesAreLoaded() async throws {
        let container = try Fixtures.container()
        let seeded = try await Fixtures.seedShelf(container)
        let context = container.newBackgroundContext()
        let states = context.performAndWait { () -> [Int] in
            let book = context.object(with: seeded.a)
            let before = book.faultingState
            let stillFault = book.isFault  // reading the state does not fire the fault
            _ = book.value(forKey: "title")
            return [before, stillFault ? 1 : 0, book.faultingState]
        }
        #expect(states == [1, 1, 0])
    }
}
