import Foundation
import Observation
import Testing
@testable import PersistenceKit

/// Which producer a background save goes through.
enum ObservedProducer: String, CaseIterable, Sendable {
    /// `registerChangeProducer(context:)`, then a plain `save()`.
    case registeredContext
    /// `newObservedBackgroundContext()`, then a plain `save()`.
    case observedBackgroundContext
    /// `saveObservedChanges(in:)` on an unregistered context.
    case domainSaveObservedChanges
}

@MainActor
@Suite("Observation: a saved change wakes the readers of what it changed")
struct PropertyRoutingTests {
    /// The background context and the save a producer uses.
    private func producer(_ kind: ObservedProducer, _ stack: ObservationStack)
        -> (NSManagedObjectContext, @Sendable (NSManagedObjectContext) throws -> Void, CDEObservationProducerRegistration?)
    {
        switch kind {
        case .registeredContext:
            let context = stack.container.newBackgroundContext()
            let registration = stack.domain.registerChangeProducer(context: context)
            return (context, { try $0.save() }, registration)
        case .observedBackgroundContext:
            return (stack.domain.newObservedBackgroundContext(), { try $0.save() }, nil)
        case .domainSaveObservedChanges:
            return (stack.container.newBackgroundContext(), { try $0.saveReportingChangedProperties() }, nil)
        }
    }

    @Test("The view context's own save wakes readers of the saved property only, and only once saved")
    func viewContextSaveIsPropertyLevel() throws {
        let stack = try ObservationStack()
        let titleReader = track { _ = stack.note.title }
        let summaryReader = track { _ = stack.note.summary }
        stack.note.summary = "eggs"
        #expect(summaryReader.value == 0, "an unsaved edit woke a reader")
        try stack.view.save()
        #expect(summaryReader.value == 1)
        #expect(titleReader.value == 0, "a saved summary woke the title's reader")

        stack.note.title = "Errands"
        #expect(titleReader.value == 0)
        try stack.view.save()
        #expect(titleReader.value == 1)
    }

    @Test("A background producer's save wakes readers of the saved property only", arguments: ObservedProducer.allCases)
    func producerSaveIsPropertyLevel(_ kind: ObservedProducer) async throws {
        let stack = try ObservationStack()
        let (context, save, registration) = producer(kind, stack)
        let titleReader = track { _ = stack.note.title }
        let summaryReader = track { _ = stack.note.summary }
        try await stack.edit(in: context, save: save) { note, _ in note.summary = "eggs" }
        #expect(stack.note.summary == "eggs")
        #expect(summaryReader.value == 1)
        #expect(titleReader.value == 0, "\(kind): a saved summary woke the title's reader")

        let titleAgain = track { _ = stack.note.title }
        try await stack.edit(in: context, save: save) { note, _ in note.title = "Errands" }
        #expect(titleAgain.value == 1)
        withExtendedLifetime(registration) {}
    }

    @Test("A save of an unregistered context wakes every reader of the saved objects, and only of those")
    func unregisteredSaveWakesEveryPropertyOfTheSavedObjects() async throws {
        let stack = try ObservationStack()
        let other = ObservedNote(context: stack.view)
        other.title = "Other"
        try stack.view.save()
        let titleReader = track { _ = stack.note.title }
        let otherReader = track { _ = other.title }
        try await stack.edit(in: stack.container.newBackgroundContext()) { note, _ in note.summary = "eggs" }
        #expect(titleReader.value == 1, "an ID-only save must wake every reader of the saved object")
        #expect(otherReader.value == 0, "an object the save did not touch was woken")
    }

    @Test("A thrown saveObservedChanges leaves nothing behind: the next save routes exactly its own properties")
    func thrownSaveLeavesNoStagedState() async throws {
        let stack = try ObservationStack()
        let context = stack.container.newBackgroundContext()
        let ids = stack.note.objectID
        await #expect(throws: ObservationTestError.self) {
            try await context.perform {
                let note = try #require(try context.existingObject(with: ids) as? ObservedNote)
                note.title = "Never saved"
                note.summary = "invalid"
            }
            try await stack.domain.saveObservedChanges(in: context)
        }
        // The context keeps its changes after a failed save; the caller's policy decides.
        #expect(await context.perform { context.hasChanges })
        await context.perform { context.rollback() }
        let titleReader = track { _ = stack.note.title }
        try await stack.edit(in: context, save: { try $0.saveReportingChangedProperties() }) { note, _ in note.summary = "eggs" }
        #expect(titleReader.value == 0, "the failed save's title change was routed by a later save")
        #expect(stack.note.title == "Groceries")
    }

    @Test("Relationship and to-many count readers on both ends are woken by a saved relationship change")
    func relationshipReadersOnBothEnds() async throws {
        let stack = try ObservationStack()
        let archive = ObservedFolder(context: stack.view)
        archive.name = "Archive"
        try stack.view.save()
        let noteFolderReader = track { _ = stack.note.folder }
        let inboxCountReader = track { _ = stack.folder.$notes.count }
        let archiveNotesReader = track { _ = archive.notes }
        let archiveNameReader = track { _ = archive.name }
        let context = stack.domain.newObservedBackgroundContext()
        let archiveID = archive.objectID
        try await stack.edit(in: context) { note, _ in
            note.folder = context.object(with: archiveID) as? ObservedFolder
        }
        #expect(stack.note.folder === archive)
        #expect(noteFolderReader.value == 1)
        #expect(inboxCountReader.value == 1)
        #expect(archiveNotesReader.value == 1)
        #expect(archiveNameReader.value == 0, "a relationship change woke the name's reader")
        #expect(stack.folder.$notes.count == 0 && archive.$notes.count == 1)
    }

    @Test("A note inserted into a folder in the background wakes the folder's count reader")
    func insertWakesToManyCountReader() async throws {
        let stack = try ObservationStack()
        let countReader = track { _ = stack.folder.$notes.count }
        let nameReader = track { _ = stack.folder.name }
        let context = stack.domain.newObservedBackgroundContext()
        try await stack.edit(in: context) { _, folder in
            let added = ObservedNote(context: context)
            added.title = "New"
            added.folder = folder
        }
        #expect(countReader.value == 1)
        #expect(nameReader.value == 0, "an insert into the folder woke the folder's name reader")
        #expect(stack.folder.$notes.count == 2)
    }

    @Test("A computed property is observable through the properties it reads")
    func computedPropertyFollowsItsInputs() async throws {
        let stack = try ObservationStack()
        let context = stack.domain.newObservedBackgroundContext()
        let headlineReader = track { _ = stack.note.headline }
        try await stack.edit(in: context) { note, _ in note.summary = "eggs" }
        #expect(headlineReader.value == 0)
        try await stack.edit(in: context) { note, _ in note.title = "Errands" }
        #expect(headlineReader.value == 1)
        #expect(stack.note.headline == "ERRANDS")
    }

    @Test("A read through a relationship is woken by the related object's property, not its siblings")
    func readThroughARelationship() async throws {
        let stack = try ObservationStack()
        let context = stack.domain.newObservedBackgroundContext()
        let folderNameReader = track { _ = stack.note.folder?.name }
        try await stack.edit(in: context) { note, _ in note.summary = "eggs" }
        #expect(folderNameReader.value == 0)
        try await stack.edit(in: context) { _, folder in folder.name = "Today" }
        #expect(folderNameReader.value == 1)
    }

    @Test("A registered context's save merged by hand is as precise as an automatic merge")
    func manualMergeKeepsPrecision() async throws {
        let stack = try ObservationStack()
        stack.view.automaticallyMergesChangesFromParent = false
        let context = stack.container.newBackgroundContext()
        let registration = stack.domain.registerChangeProducer(context: context)
        let saved = SavedNotification()
        let observer = NotificationCenter.default.addObserver(
            forName: .NSManagedObjectContextDidSave, object: context, queue: nil
        ) { saved.keep($0) }
        defer { NotificationCenter.default.removeObserver(observer) }
        let titleReader = track { _ = stack.note.title }
        let summaryReader = track { _ = stack.note.summary }
        try await stack.edit(in: context) { note, _ in note.summary = "eggs" }
        #expect(summaryReader.value == 0, "nothing was merged yet")
        stack.view.mergeChanges(fromContextDidSave: try #require(saved.notification))
        #expect(summaryReader.value == 1)
        #expect(titleReader.value == 0)
        withExtendedLifetime(registration) {}
    }
}

/// The last did-save notification an observer saw.
final class SavedNotification: @unchecked Sendable {
    // @unchecked Sendable: written by the observer on the saving queue before the test reads
    // it, after awaiting that save; the lock orders the two.
    private let lock = NSLock()
    private var last: Notification?
    func keep(_ n: Notification) { lock.withLock { last = n } }
    var notification: Notification? { lock.withLock { last } }
}
