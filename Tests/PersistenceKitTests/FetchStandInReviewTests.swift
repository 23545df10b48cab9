import Foundation
import TestSupport
import Testing
@testable import PersistenceKit

final class StandInPerson: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "reports") var manager: StandInPerson?
    @Relationship(inverse: "manager") var reports: Set<StandInPerson>
    @Relationship(inverse: "favoriteOf") var favorite: StandInPerson?
    @Relationship(inverse: "favorite") var favoriteOf: StandInPerson?
    var isManagersFavourite: Bool { manager?.favorite === self }
    var hasContext: Bool { managedObjectContext != nil }
}

/// From an adversarial review of row stand-ins (rows a fetch judges without registering
/// them): each test failed before its fix. The predicates run in memory.
@Suite struct FetchStandInReviewTests {
    static func seeded(_ name: String = #function) throws -> NSManagedObjectContext {
        let c = try OTSupport.container([StandInPerson.self], name: name)
        let ctx = c.newBackgroundContext()
        try ctx.performAndWait { () throws in
            let boss = StandInPerson(context: ctx); boss.name = "boss"
            let a = StandInPerson(context: ctx); a.name = "a"; a.manager = boss
            let b = StandInPerson(context: ctx); b.name = "b"; b.manager = boss
            boss.favorite = a
            try ctx.save()
            ctx.reset()
        }
        return ctx
    }

    /// The judged row and the object a relationship leads back to it through are one
    /// object: the context adopts the stand-in instead of making a second.
    @Test func identityOfTheJudgedRow() throws {
        let ctx = try Self.seeded()
        try ctx.performAndWait { () throws in
            let r = NSFetchRequest<StandInPerson>(entityName: "StandInPerson")
            r.predicate = #Predicate<StandInPerson> { p in (p.manager?.favorite?.name ?? "") == p.name }
            #expect(try ctx.fetch(r).map(\.name) == ["a"])  // by value: works
            ctx.reset()
            let q = NSFetchRequest<StandInPerson>(entityName: "StandInPerson")
            q.predicate = #Predicate<StandInPerson> { p in p.manager?.reports.contains(p) == true }
            let got = try ctx.fetch(q).map(\.name).sorted()
            #expect(got == ["a", "b"])
        }
    }

    @Test func managersFavourite() throws {
        let ctx = try Self.seeded()
        try ctx.performAndWait { () throws in
            let r = NSFetchRequest<StandInPerson>(entityName: "StandInPerson")
            r.predicate = #Predicate<StandInPerson> { $0.isManagersFavourite }
            #expect(try ctx.fetch(r).map(\.name) == ["a"])
            #expect(try ctx.fetch(r).map(\.name) == ["a"])  // the same once everything is registered
        }
    }

    @Test func computedPropertyReadingContext() throws {
        let ctx = try Self.seeded()
        try ctx.performAndWait { () throws in
            let r = NSFetchRequest<StandInPerson>(entityName: "StandInPerson")
            r.predicate = #Predicate<StandInPerson> { $0.hasContext }
            #expect(try ctx.fetch(r).count == 3)
        }
    }

    @Test func propertyValuesFalseStaysFaults() throws {
        let ctx = try Self.seeded()
        try ctx.performAndWait { () throws in
            let r = NSFetchRequest<StandInPerson>(entityName: "StandInPerson")
            r.predicate = #Predicate<StandInPerson> { p in p.manager?.reports.contains { $0.name != "" } == true }
            r.includesPropertyValues = false
            let out = try ctx.fetch(r)
            #expect(out.count == 2)
            #expect(out.filter { !$0.isFault }.isEmpty)
        }
    }
}
