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

final class AdoptPerson: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "reports") var manager: AdoptPerson?
    @Relationship(inverse: "manager") var reports: Set<AdoptPerson>
    /// `awakeFromFetch()` calls by name, per test (each test's names are its own).
    static let awakes = TestMutex<[String: Int]>([:])
    override func awakeFromFetch() {
        super.awakeFromFetch()
        let n = name
        Self.awakes.withLock { $0[n, default: 0] += 1 }
    }
    // A computed property that reads its row, then asks the context whether it exists.
    var exists: Bool { _ = name; return (try? managedObjectContext!.existingObject(with: objectID)) != nil }
    // A computed property that writes (e.g. a cache/normalisation), then follows a relationship.
    var normalises: Bool { name = name.uppercased(); _ = manager?.name; return true }
    var selfReport: Bool { reports.contains(self) }
    var deletesBoss: Bool { if name == "boss" { managedObjectContext!.delete(self) }; return name != "boss" }
    var innerFindsSelf: Bool {
        _ = name
        let q = NSFetchRequest<AdoptPerson>(entityName: "AdoptPerson")
        q.predicate = #Predicate<AdoptPerson> { $0.name != "" }
        q.sortDescriptors = [NSSortDescriptor(keyPath: \AdoptPerson.name, ascending: true)]
        return ((try? managedObjectContext!.fetch(q)) ?? []).contains { $0 === self }
    }
}

/// A fetch judges rows it has not registered through stand-in objects (computed properties
/// that a predicate runs in memory, and that may read or write through the context). The
/// context adopts a stand-in only when it is returned. Serialized: the tests share a hook counter.
@Suite("Rows standing in for objects while a predicate judges them", .serialized) struct PredicateStandInTests {
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

    static func seededAdoptions(_ name: String = #function) throws -> NSManagedObjectContext {
        let c = try OTSupport.container([AdoptPerson.self], name: name)
        let ctx = c.newBackgroundContext()
        try ctx.performAndWait { () throws in
            let boss = AdoptPerson(context: ctx); boss.name = "boss"
            let a = AdoptPerson(context: ctx); a.name = "a"; a.manager = boss
            try ctx.save(); ctx.reset()
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

    @Test func existingObjectFromPredicateOnReadStandIn() throws {
        let ctx = try Self.seededAdoptions()
        try ctx.performAndWait { () throws in
            AdoptPerson.awakes.withLock { $0 = [:] }
            let r = NSFetchRequest<AdoptPerson>(entityName: "AdoptPerson")
            r.predicate = #Predicate<AdoptPerson> { $0.exists }
            let out = try ctx.fetch(r)
            #expect(out.count == 2)
            _ = out.map(\.name)
            #expect(AdoptPerson.awakes.withLock { $0 } == ["boss": 1, "a": 1])
        }
    }

    @Test func writeOnStandInThenAdoptedMidFetch() throws {
        let ctx = try Self.seededAdoptions()
        try ctx.performAndWait { () throws in
            let r = NSFetchRequest<AdoptPerson>(entityName: "AdoptPerson")
            r.predicate = #Predicate<AdoptPerson> { $0.normalises }
            let out = try ctx.fetch(r)
            let names = out.map(\.name).sorted()
            let changed = out.filter(\.hasChanges).map(\.name).sorted()
            // Every result was written alike by the predicate, and keeps the write as an
            // unsaved change: boss was adopted while the fetch judged (through a.manager), a
            // at the end. (Before: boss kept "BOSS" unrecorded, a was reverted to "a".)
            #expect(names == ["A", "BOSS"])
            #expect(changed == ["A", "BOSS"])
        }
    }

    @Test func selfReferentialToMany() throws {
        let c = try OTSupport.container([AdoptPerson.self], name: #function)
        let ctx = c.newBackgroundContext()
        try ctx.performAndWait { () throws in
            let s = AdoptPerson(context: ctx); s.name = "s"; s.manager = s
            let t = AdoptPerson(context: ctx); t.name = "t"
            try ctx.save(); ctx.reset()
            AdoptPerson.awakes.withLock { $0 = [:] }
            let r = NSFetchRequest<AdoptPerson>(entityName: "AdoptPerson")
            r.predicate = #Predicate<AdoptPerson> { $0.selfReport }
            let out = try ctx.fetch(r)
            #expect(out.map(\.name) == ["s"])
            #expect(out.first?.reports.count == 1)
            #expect(AdoptPerson.awakes.withLock { $0 } == ["s": 1])
            out[0].name = "s2"; try ctx.save()
        }
    }

    @Test func deleteStandInFromPredicate() throws {
        let ctx = try Self.seededAdoptions()
        try ctx.performAndWait { () throws in
            let r = NSFetchRequest<AdoptPerson>(entityName: "AdoptPerson")
            r.predicate = #Predicate<AdoptPerson> { $0.deletesBoss }
            let out = try ctx.fetch(r)
            #expect(out.map(\.name) == ["a"])
            for o in ctx.deletedObjects { #expect(o.managedObjectContext === ctx) }
            try ctx.save()
            ctx.reset()
            #expect(try ctx.fetch(NSFetchRequest<AdoptPerson>(entityName: "AdoptPerson")).map(\.name) == ["a"])
        }
    }

    @Test func nestedFetchReturnsOuterStandIn() throws {
        let ctx = try Self.seededAdoptions()
        try ctx.performAndWait { () throws in
            AdoptPerson.awakes.withLock { $0 = [:] }
            let r = NSFetchRequest<AdoptPerson>(entityName: "AdoptPerson")
            r.predicate = #Predicate<AdoptPerson> { $0.innerFindsSelf }
            let out = try ctx.fetch(r)
            #expect(out.count == 2)
            _ = out.map(\.name)
            #expect(Set(ctx.registeredObjects.map(ObjectIdentifier.init)) == Set(out.map(ObjectIdentifier.init)))
        }
    }
}
