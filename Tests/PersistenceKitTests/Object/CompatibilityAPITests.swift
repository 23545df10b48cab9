import Foundation
import Testing
@testable import PersistenceKit

/// Small Core Data members that ported code uses: `userInfo` of a context, `faultingState`
/// of an object.
@Suite("Small Core Data members ported code uses") struct CompatibilityAPITests {
    /// Core Data's `name` is developer-provided: nil on the container's view context until
    /// set (not "viewContext"). Messages still call the
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
}
