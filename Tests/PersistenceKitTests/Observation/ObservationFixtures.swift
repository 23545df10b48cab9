import Foundation
import Observation
import TestSupport
import Testing
@testable import PersistenceKit

/// A note that opted in to Observation, with a computed property over an observed one.
final class ObservedNote: NSManagedObject, ObservableManagedObject {
    @Attribute var title: String = ""
    @Attribute var summary: String = ""
    @Relationship(inverse: "notes") var folder: ObservedFolder?
    /// Observable through `title`.
    var headline: String { title.uppercased() }

    /// A summary of "invalid" fails validation: a save that throws.
    override func validateForUpdate() throws {
        try super.validateForUpdate()
        if summary == "invalid" { throw ObservationTestError(message: "summary is invalid") }
    }
}

/// The folder end of `ObservedNote.folder`.
final class ObservedFolder: NSManagedObject, ObservableManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "folder") var notes: Set<ObservedNote>
}

/// A class that did not opt in.
final class UnobservedNote: NSManagedObject {
    @Attribute var title: String = ""
}

struct ObservationTestError: Error { let message: String }

/// How many times a tracked read was told of a change.
final class Wakes: Sendable {
    private let count = TestMutex(0)
    var value: Int { count.withLock { $0 } }
    func record() { count.withLock { $0 += 1 } }
}

/// Tracks what `read` reads, once (Observation calls `onChange` at most once per tracking).
@MainActor
func track(_ read: () -> Void) -> Wakes {
    let wakes = Wakes()
    withObservationTracking { read() } onChange: { wakes.record() }
    return wakes
}

/// A container on an in-memory store whose view context merges other contexts' saves, an
/// observation domain on it, and one saved note in a folder, loaded in the view context.
@MainActor
struct ObservationStack {
    let container: NSPersistentContainer
    let domain: CDEObservationDomain
    let note: ObservedNote
    let folder: ObservedFolder
    var view: NSManagedObjectContext { container.viewContext }

    init(echoSuppression: CDEPreciseRouteEchoSuppression = .auto, name: String = #function) throws {
        let model = try NSManagedObjectModel(managedObjectClasses: [ObservedNote.self, ObservedFolder.self, UnobservedNote.self])
        container = NSPersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
        let failure = ErrorBox()
        container.loadPersistentStores { _, error in failure.set(error) }
        if let error = failure.get() { throw error }
        container.viewContext.automaticallyMergesChangesFromParent = true
        domain = CDEObservationDomain(container: container, preciseRouteEchoSuppression: echoSuppression)
        folder = ObservedFolder(context: container.viewContext)
        folder.name = "Inbox"
        note = ObservedNote(context: container.viewContext)
        note.title = "Groceries"
        note.summary = "milk"
        note.folder = folder
        try container.viewContext.save()
    }

    /// Runs `edit` on `context`'s queue with this stack's note and folder there, then
    /// `save` (a plain save by default), then waits until the view context merged it.
    func edit(
        in context: NSManagedObjectContext,
        save: @escaping @Sendable (NSManagedObjectContext) throws -> Void = { try $0.save() },
        _ edit: @escaping @Sendable (ObservedNote, ObservedFolder) -> Void
    ) async throws {
        let ids = (note.objectID, folder.objectID)
        try await context.perform {
            let note = try #require(try context.existingObject(with: ids.0) as? ObservedNote)
            let folder = try #require(try context.existingObject(with: ids.1) as? ObservedFolder)
            edit(note, folder)
            try save(context)
        }
        await settle()
    }

    /// Waits for the merges queued on the view context: enqueued, this runs after them (an
    /// immediate `perform` from the main actor would run at once, before them).
    func settle() async {
        await view.perform(schedule: .enqueued) {}
    }
}
