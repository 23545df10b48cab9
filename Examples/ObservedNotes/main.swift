// Swift Observation of managed objects: a reader of one note's title, on the main actor, is
// woken when a background model actor saves a new title, and not when it saves the note's
// body. Prints each step.
//
//   swift run ObservedNotes

import Foundation
import ModelActorKit
import Observation
import Synchronization

/// A note that opted in to Observation: conforming is the whole opt-in.
final class Note: NSManagedObject, ObservableManagedObject {
    @Attribute var title: String = ""
    @Attribute var body: String = ""
}

/// Edits notes in the background and saves them so that readers of the changed properties,
/// and only those, are woken.
actor NoteWriter: NSModelActor {
    nonisolated let modelContainer: NSPersistentContainer
    nonisolated let modelExecutor: NSModelObjectContextExecutor

    init(container: NSPersistentContainer) {
        modelContainer = container
        modelExecutor = NSModelObjectContextExecutor(context: container.newBackgroundContext())
    }

    func setTitle(_ title: String, of id: NSManagedObjectID, observation: CDEObservationDomain) async throws {
        guard let note = self[id, as: Note.self] else { return }
        note.title = title
        try await saveObservedChanges(in: observation)
    }

    func setBody(_ body: String, of id: NSManagedObjectID, observation: CDEObservationDomain) async throws {
        guard let note = self[id, as: Note.self] else { return }
        note.body = body
        try await saveObservedChanges(in: observation)
    }
}

/// Whether the reader was woken, as `onChange` reports it (on the main thread here).
final class Woken: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var value: Bool { flag.withLock { $0 } }
}

let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ObservedNotes", isDirectory: true)
let storeURL = folder.appendingPathComponent("Notes.store")
for suffix in ["", "-lock"] { try? FileManager.default.removeItem(atPath: storeURL.path + suffix) }  // a fresh store each run

let model = try NSManagedObjectModel(managedObjectClasses: [Note.self])
let container = NSPersistentContainer(name: "ObservedNotes", managedObjectModel: model)
container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: storeURL)]
try await container.loadPersistentStores()
let view = container.viewContext
view.automaticallyMergesChangesFromParent = true

// 1. The domain instruments the view context; keep it for as long as readers should wake.
let observation = CDEObservationDomain(container: container)

// 2. A note, saved from the view context.
let note = Note(context: view)
note.title = "Groceries"
note.body = "milk"
try view.save()
print("1. Saved \"\(note.title)\" (\(note.body)).")

// 3. A reader of the title only.
let woken = Woken()
withObservationTracking {
    print("2. The reader reads the title: \"\(note.title)\".")
} onChange: {
    woken.set()
}

// 4. The background writer changes the body: the title's reader sleeps on.
let writer = NoteWriter(container: container)
try await writer.setBody("milk, eggs", of: note.objectID, observation: observation)
await view.perform(schedule: .enqueued) {}  // the merge into the view context has run
print("3. Body saved in the background, now \"\(note.body)\": title reader woken? \(woken.value)")

// 5. Now the title.
try await writer.setTitle("Errands", of: note.objectID, observation: observation)
await view.perform(schedule: .enqueued) {}
print("4. Title saved in the background, now \"\(note.title)\": title reader woken? \(woken.value)")
print("\nDone.")
