import Foundation
import Observation
import TestSupport
import Testing
@testable import PersistenceKit

@MainActor
@Suite("Observation: rollback, refresh, deletes, echoes and the domain's lifetime")
struct ObservationLifecycleTests {
    @Test("rollbackObservedChanges wakes readers of updated and deleted objects and forgets inserted ones")
    func rollbackWakesUpdatedAndDeleted() throws {
        let stack = try ObservationStack()
        let doomed = ObservedNote(context: stack.view)
        doomed.title = "Doomed"
        try stack.view.save()
        let updatedReader = track { _ = stack.note.title }
        let deletedReader = track { _ = doomed.title }
        stack.note.title = "Unsaved"
        stack.view.delete(doomed)
        let inserted = ObservedNote(context: stack.view)
        let insertedReader = track { _ = inserted.title }
        #expect(inserted.isObserved)
        #expect(updatedReader.value == 0 && deletedReader.value == 0, "unsaved edits woke a reader")

        stack.domain.rollbackObservedChanges()
        #expect(updatedReader.value == 1)
        #expect(deletedReader.value == 1)
        #expect(insertedReader.value == 0, "a rolled-back insert woke its reader")
        #expect(!inserted.isObserved, "a rolled-back insert kept its readers")
        #expect(stack.note.title == "Groceries")
        #expect(!doomed.isDeleted)
    }

    @Test("An explicit refresh wakes every reader of the refreshed object")
    func refreshWakesEveryReader() throws {
        let stack = try ObservationStack()
        let summaryReader = track { _ = stack.note.summary }
        let folderReader = track { _ = stack.folder.name }
        stack.view.refresh(stack.note, mergeChanges: false)
        #expect(summaryReader.value == 1)
        #expect(folderReader.value == 0)
    }

    @Test("An object deleted by a merged save wakes its readers and leaves the context")
    func mergedDeleteWakesReaders() async throws {
        let stack = try ObservationStack()
        let titleReader = track { _ = stack.note.title }
        let id = stack.note.objectID
        let context = stack.container.newBackgroundContext()
        try await context.perform {
            context.delete(context.object(with: id))
            try context.save()
        }
        await stack.settle()
        #expect(titleReader.value == 1)
        #expect(stack.note.managedObjectContext == nil)
        #expect(!stack.note.isObserved)
    }

    @Test("Echo suppression on: an ID-only repeat of a precise route wakes no one")
    func echoSuppressionOnKeepsTheRoutePrecise() async throws {
        let stack = try ObservationStack(echoSuppression: .on)
        // Markers live 2 s; a loaded machine can take longer between the route and its echo.
        stack.domain.router.echoLifetime = .seconds(3600)
        let titleReader = track { _ = stack.note.title }
        try await stack.edit(in: stack.domain.newObservedBackgroundContext()) { note, _ in note.summary = "eggs" }
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSUpdatedObjectIDsKey: [stack.note.objectID]], into: [stack.view])
        #expect(titleReader.value == 0, "the echo widened the precise route")
        // A save of the view context (of another object) ends the echoes: the next ID-only
        // merge of the note is a change.
        stack.folder.name = "Today"
        try stack.view.save()
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSUpdatedObjectIDsKey: [stack.note.objectID]], into: [stack.view])
        #expect(titleReader.value == 1)
    }

    @Test("Echo suppression off (and .auto on these containers): an ID-only repeat wakes every reader")
    func echoSuppressionOffWidens() async throws {
        for policy in [CDEPreciseRouteEchoSuppression.off, .auto] {
            let stack = try ObservationStack(echoSuppression: policy)
            let titleReader = track { _ = stack.note.title }
            try await stack.edit(in: stack.domain.newObservedBackgroundContext()) { note, _ in note.summary = "eggs" }
            #expect(titleReader.value == 0)
            NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSUpdatedObjectIDsKey: [stack.note.objectID]], into: [stack.view])
            #expect(titleReader.value == 1, "\(policy): the ID-only repeat was suppressed")
        }
    }

    @Test("An invalidated domain routes nothing")
    func invalidatedDomainStopsRouting() async throws {
        let stack = try ObservationStack()
        let registration = stack.domain.registerChangeProducer(context: stack.container.newBackgroundContext())
        let titleReader = track { _ = stack.note.title }
        stack.domain.invalidate()
        #expect(!stack.domain.isActive)
        #expect(!registration.isActive, "the domain's registrations outlived it")
        try await stack.edit(in: registration.context) { note, _ in note.title = "Errands" }
        #expect(stack.note.title == "Errands")
        #expect(titleReader.value == 0)
        stack.domain.invalidate()  // idempotent
    }

    @Test("A domain released on another thread stops routing, without a crash")
    func domainReleasedOffTheMainActor() async throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [ObservedNote.self, ObservedFolder.self, UnobservedNote.self])
        let container = NSPersistentContainer(name: "released", managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        container.loadPersistentStores { _, _ in }
        container.viewContext.automaticallyMergesChangesFromParent = true
        let held = TestMutex<CDEObservationDomain?>(CDEObservationDomain(container: container))
        weak let domain = held.withLock { $0 }
        let note = ObservedNote(context: container.viewContext)
        try container.viewContext.save()
        let reader = track { _ = note.title }
        await Task.detached { held.withLock { $0 = nil } }.value
        #expect(domain == nil, "the domain outlived its last reference")
        let id = note.objectID
        let context = container.newBackgroundContext()
        try await context.perform {
            (context.object(with: id) as? ObservedNote)?.title = "Changed"
            try context.save()
        }
        await container.viewContext.perform(schedule: .enqueued) {}
        #expect(note.title == "Changed")
        #expect(reader.value == 0)
    }

    @Test("A second domain on the same container replaces the first, which stops routing")
    func laterDomainReplacesEarlierOne() throws {
        let stack = try ObservationStack()
        let second = CDEObservationDomain(container: stack.container)
        #expect(!stack.domain.isActive)
        #expect(second.isActive)
        let summaryReader = track { _ = stack.note.summary }
        stack.note.summary = "eggs"
        try stack.view.save()
        #expect(summaryReader.value == 1, "the replacing domain did not route")
    }

    @Test("A released domain ends the producer registrations it made")
    func releasedDomainEndsItsRegistrations() throws {
        let stack = try ObservationStack()
        var domain: CDEObservationDomain? = CDEObservationDomain(container: stack.container)
        let registration = try #require(domain?.registerChangeProducer(context: stack.container.newBackgroundContext()))
        #expect(registration.isActive)
        domain = nil
        #expect(!registration.isActive)
        #expect(registration.context.observedChangeProducers.load(ordering: .relaxed) == 0)
    }

    @Test("An update that changed no persistent property wakes every reader of the object")
    func updateWithoutPersistentChangeWakesEveryReader() throws {
        let stack = try ObservationStack()
        let summaryReader = track { _ = stack.note.summary }
        stack.note.title = stack.note.title
        try #require(stack.note.isUpdated, "setting a value marks the object updated, as in Core Data")
        try stack.view.save()
        #expect(summaryReader.value == 1)
    }

    @Test("Objects of a class that did not opt in get no registrar and wake no reader")
    func unobservedClassesAreNeverTouched() async throws {
        let stack = try ObservationStack()
        let plain = UnobservedNote(context: stack.view)
        try stack.view.save()
        #expect(!plain.entity.observesReads)
        #expect(stack.note.entity.observesReads)
        let reader = track { _ = plain.title }
        #expect(!plain.isObserved)
        plain.title = "Changed"
        try stack.view.save()
        let id = plain.objectID
        let context = stack.container.newBackgroundContext()
        try await context.perform {
            (context.object(with: id) as? UnobservedNote)?.title = "Again"
            try context.save()
        }
        await stack.settle()
        #expect(reader.value == 0)
        #expect(!plain.isObserved)
    }

    @Test("Reads in a context the domain does not instrument make no registrar")
    func backgroundReadsAreNotTracked() async throws {
        let stack = try ObservationStack()
        let context = stack.container.newBackgroundContext()
        let id = stack.note.objectID
        let observed = try await context.perform {
            let note = try #require(try context.existingObject(with: id) as? ObservedNote)
            _ = note.title
            return note.isObserved
        }
        #expect(!observed)
    }

    @Test("Debug logging is off by default and can be switched per domain")
    func debugLoggingDefault() throws {
        let stack = try ObservationStack()
        #expect(!stack.domain.isDebugLoggingEnabled)
        stack.domain.isDebugLoggingEnabled = true
        #expect(stack.domain.isDebugLoggingEnabled)
        stack.domain.isDebugLoggingEnabled = false
    }

    @Test("CDE_OBSERVATION_DEBUG=1 turns logging on: routes go to standard error")
    func debugLoggingFromTheEnvironment() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            setenv("CDE_OBSERVATION_DEBUG", "1", 1)
            try await MainActor.run {
                let stack = try ObservationStack()
                guard stack.domain.isDebugLoggingEnabled else { exit(2) }
                _ = track { _ = stack.note.title }
                stack.note.title = "Logged"
                try stack.view.save()
            }
        }
        let log = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(log.contains("[CDEObservation] route source=viewContextDidSave"))
    }
}
