import Foundation
import ModelActorKit
import Observation
import TestSupport
import Testing

final class TrackedItem: NSManagedObject, ObservableManagedObject {
    @Attribute var title: String = ""
    @Attribute var summary: String = ""
}

/// How many times a tracked read was told of a change.
final class ItemWakes: Sendable {
    private let count = TestMutex(0)
    var value: Int { count.withLock { $0 } }
    func record() { count.withLock { $0 += 1 } }
}

@MainActor
func trackItem(_ read: () -> Void) -> ItemWakes {
    let wakes = ItemWakes()
    withObservationTracking { read() } onChange: { wakes.record() }
    return wakes
}

/// A writer made with or without a domain, as `NSObservedModelActor` documents.
actor ItemWriter: NSObservedModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor
    nonisolated let observationDomain: CDEObservationDomain?
    nonisolated let observationRegistration: CDEObservationProducerRegistration?

    @MainActor init(observationDomain: CDEObservationDomain) {
        modelContainer = observationDomain.modelContainer
        let context = modelContainer.newBackgroundContext()
        modelExecutor = NSModelObjectContextExecutor(context: context)
        self.observationDomain = observationDomain
        observationRegistration = observationDomain.registerChangeProducer(context: context)
    }

    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
        observationDomain = nil
        observationRegistration = nil
    }

    deinit { observationRegistration?.invalidate() }

    /// Sets one property of the item and saves it the way `save` names.
    func set(_ id: NSManagedObjectID, summary: String? = nil, title: String? = nil, save: SaveRoute) async throws {
        guard let item = self[id, as: TrackedItem.self] else { throw FixtureError(message: "no item") }
        if let summary { item.summary = summary }
        if let title { item.title = title }
        switch save {
        case .plain: try modelContext.save()
        case .observed: try await saveObservedChanges()
        case .observedIn(let domain): try await saveObservedChanges(in: domain)
        }
    }

    enum SaveRoute: Sendable {
        case plain, observed
        case observedIn(CDEObservationDomain)
    }
}

@MainActor
final class ItemViewer: NSMainModelActor {
    let modelContainer: NSPersistentContainer
    init(modelContainer: NSPersistentContainer) { self.modelContainer = modelContainer }
}

@MainActor
@Suite("Observation through model actors")
struct ModelActorObservationTests {
    /// A test container (the variadic `makeRuntimeTest`), a domain, and one saved item in
    /// the view context.
    private func stack(name: String = #function) throws -> (NSPersistentContainer, CDEObservationDomain, TrackedItem) {
        let container = try NSPersistentContainer.makeRuntimeTest(modelTypes: TrackedItem.self, testName: name)
        container.viewContext.automaticallyMergesChangesFromParent = true
        let domain = CDEObservationDomain(container: container)
        let item = TrackedItem(context: container.viewContext)
        item.title = "Title"
        item.summary = "Summary"
        try container.viewContext.save()
        return (container, domain, item)
    }

    /// Waits for the merges queued on the view context.
    private func settle(_ container: NSPersistentContainer) async {
        await container.viewContext.perform(schedule: .enqueued) {}
    }

    @Test("saveObservedChanges(in:) on a plain model actor wakes readers of the saved property only")
    func modelActorSaveObservedChangesIn() async throws {
        let (container, domain, item) = try stack()
        let writer = ItemWriter(container: container)
        let titleReader = trackItem { _ = item.title }
        try await writer.set(item.objectID, summary: "new", save: .observedIn(domain))
        await settle(container)
        #expect(item.summary == "new")
        #expect(titleReader.value == 0)
        try await writer.set(item.objectID, title: "New", save: .observedIn(domain))
        await settle(container)
        #expect(titleReader.value == 1)
    }

    @Test("saveObservedChanges(in:) with an invalidated domain is a plain save")
    func saveObservedChangesInInvalidatedDomain() async throws {
        let (container, domain, item) = try stack()
        let writer = ItemWriter(container: container)
        let stale = CDEObservationDomain(container: container)  // replaces `domain`
        stale.invalidate()
        let live = CDEObservationDomain(container: container)
        let titleReader = trackItem { _ = item.title }
        try await writer.set(item.objectID, summary: "new", save: .observedIn(stale))
        await settle(container)
        #expect(item.summary == "new")
        #expect(titleReader.value == 1, "a save for an invalidated domain reported its properties")
        withExtendedLifetime((domain, live)) {}
    }

    @Test("An actor made with init(observationDomain:) is property-level for plain and observed saves")
    func boundActorIsPropertyLevel() async throws {
        let (container, domain, item) = try stack()
        let writer = ItemWriter(observationDomain: domain)
        let titleReader = trackItem { _ = item.title }
        try await writer.set(item.objectID, summary: "plain", save: .plain)
        await settle(container)
        try await writer.set(item.objectID, summary: "observed", save: .observed)
        await settle(container)
        #expect(item.summary == "observed")
        #expect(titleReader.value == 0)
        try await writer.set(item.objectID, title: "New", save: .observed)
        await settle(container)
        #expect(titleReader.value == 1)
    }

    @Test("An actor made without a domain saves plainly: every reader of the saved object wakes")
    func unboundActorFallsBackToAllProperties() async throws {
        let (container, domain, item) = try stack()
        let writer = ItemWriter(container: container)
        let titleReader = trackItem { _ = item.title }
        try await writer.set(item.objectID, summary: "new", save: .observed)
        await settle(container)
        #expect(titleReader.value == 1)
        withExtendedLifetime(domain) {}
    }

    @Test("Releasing a bound actor ends its context's registration")
    func releasedActorEndsItsRegistration() async throws {
        let (_, domain, _) = try stack()
        var writer: ItemWriter? = ItemWriter(observationDomain: domain)
        let registration = try #require(writer?.observationRegistration)
        #expect(registration.isActive)
        writer = nil
        #expect(!registration.isActive)
    }

    @Test("NSMainModelActor.saveObservedChanges(in:) saves the view context property by property")
    func mainModelActorSave() throws {
        let (container, domain, item) = try stack()
        let viewer = ItemViewer(modelContainer: container)
        let titleReader = trackItem { _ = item.title }
        let summaryReader = trackItem { _ = item.summary }
        item.summary = "new"
        try viewer.saveObservedChanges(in: domain)
        #expect(summaryReader.value == 1)
        #expect(titleReader.value == 0)
    }

    @Test("The async withIsolatedContext may await while isolated, on both kinds of actor")
    func asyncWithIsolatedContext() async throws {
        let (container, _, item) = try stack()
        let writer = ItemWriter(container: container)
        let id = item.objectID
        let title = try await writer.withIsolatedContext { actor, context in
            await Task.yield()
            return (try context.existingObject(with: id) as? TrackedItem)?.title
        }
        #expect(title == "Title")
        let viewer = ItemViewer(modelContainer: container)
        let viewed = await viewer.withIsolatedContext { context in
            await Task.yield()
            return context.registeredObject(for: id) as? TrackedItem
        }
        #expect(viewed === item)
    }
}
