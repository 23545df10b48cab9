import Foundation
import Testing
@testable import PersistenceKit

// Sections after performFetch: grouping by key path in sort order, index titles, and the
// lookups between objects and index paths.

@Suite struct FetchedResultsSectionsTests {
    @Test func sectionsFollowTheKeyPathInSortOrder() throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            FRFixtures.note("b2", "beta", rank: 2, in: context)
            FRFixtures.note("a1", "alpha", rank: 1, in: context)
            FRFixtures.note("b1", "beta", rank: 1, in: context)
            FRFixtures.note("c1", "gamma", rank: 1, in: context)
            try context.save()
            let recorder = FRRecorder()
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            #expect(controller.layout == ["alpha:a1", "beta:b1,b2", "gamma:c1"])
            #expect(controller.fetchedObjects?.map(\.title) == ["a1", "b1", "b2", "c1"])
            let sections = try #require(controller.sections)
            #expect(sections.map(\.numberOfObjects) == [1, 2, 1])
            #expect(sections.map(\.indexTitle) == ["A", "B", "G"])
            #expect(controller.sectionIndexTitles == ["A", "B", "G"])
            #expect(controller.section(forSectionIndexTitle: "G", at: 2) == 2)
            #expect(recorder.lines.isEmpty)  // performFetch reports nothing

            let b2 = controller.object(at: IndexPath(indexes: [1, 1]))
            #expect(b2.title == "b2")
            #expect(controller.indexPath(forObject: b2) == IndexPath(indexes: [1, 1]))
            let outside = FRFixtures.note("x", "x", rank: 0, in: context)
            #expect(controller.indexPath(forObject: outside) == nil)
        }
    }

    @Test func withoutAKeyPathThereIsOneSectionEvenWhenEmpty() throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let controller = try FRFixtures.controller(in: context, keyPath: nil, recorder: FRRecorder())
            #expect(controller.sections?.count == 1)
            #expect(controller.sections?.first?.name == "")
            #expect(controller.sections?.first?.numberOfObjects == 0)
            #expect(controller.fetchedObjects?.isEmpty == true)
            #expect(controller.sectionIndexTitles.isEmpty)
        }
    }

    @Test func beforePerformFetchThereAreNoResults() throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let controller = NSFetchedResultsController(
                fetchRequest: FRFixtures.request(), managedObjectContext: context, sectionNameKeyPath: nil, cacheName: "ignored")
            #expect(controller.fetchedObjects == nil)
            #expect(controller.sections == nil)
            #expect(controller.cacheName == "ignored")
        }
    }

    @Test func aToOneKeyPathNamesSectionsThroughTheRelationship() throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let home = FRFolder(context: context)
            home.name = "Home"
            let work = FRFolder(context: context)
            work.name = "Work"
            // The category repeats the folder's name so that the first sort orders folders.
            FRFixtures.note("loose", "", rank: 1, in: context)
            FRFixtures.note("w", "Work", rank: 1, in: context).folder = work
            FRFixtures.note("h", "Home", rank: 1, in: context).folder = home
            try context.save()
            let controller = try FRFixtures.controller(in: context, keyPath: "folder.name", recorder: FRRecorder())
            #expect(controller.layout == [":loose", "Home:h", "Work:w"])
            #expect(controller.sections?.map(\.indexTitle) == [nil, "H", "W"])
        }
    }

    @Test func theDelegateGivesIndexTitles() throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            FRFixtures.note("a", "alpha", rank: 1, in: context)
            FRFixtures.note("b", "apple", rank: 1, in: context)
            FRFixtures.note("c", "beta", rank: 1, in: context)
            let recorder = FRRecorder()
            recorder.indexTitles = ["beta": nil]
            let controller = try FRFixtures.controller(in: context, recorder: recorder)
            #expect(controller.sections?.map(\.indexTitle) == ["A", "A", nil])
            #expect(controller.sectionIndexTitles == ["A"])  // each title once
            #expect(controller.section(forSectionIndexTitle: "A", at: 0) == 0)
        }
    }

    @Test func aRequestWithoutSortOrderIsRefused() throws {
        let container = try FRFixtures.container()
        let context = container.newBackgroundContext()
        context.performAndWait {
            let controller = NSFetchedResultsController(
                fetchRequest: FRNote.fetchRequest(), managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
            #expect(throws: CoreDataError.self) { try controller.performFetch() }
            #expect(controller.fetchedObjects == nil)
        }
    }

    @Test func changeTypesHaveCoreDataRawValues() {
        #expect(NSFetchedResultsChangeType.insert.rawValue == 1)
        #expect(NSFetchedResultsChangeType.delete.rawValue == 2)
        #expect(NSFetchedResultsChangeType.move.rawValue == 3)
        #expect(NSFetchedResultsChangeType.update.rawValue == 4)
    }
}
