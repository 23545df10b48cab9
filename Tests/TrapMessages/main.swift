// Breaks one rule of the API, named by the first argument, so that a test can check the
// message the trap prints when this program is built for release (`-O`), where
// `precondition` would print none:
//
//   swift build -c release --product TrapMessages
//   PERSISTENCEKIT_CONCURRENCY_DEBUG=1 .build/release/TrapMessages wrong-queue
//
// wrong-queue   touches a private-queue context's object off its queue
// unknown-key   setValue(_:forKey:) with a key the entity does not have
// wrong-type    setValue(_:forKey:) with a value of the wrong type

import Foundation
import PersistenceKit

final class Note: NSManagedObject {
    @Attribute var title: String = ""
}

let model = try NSManagedObjectModel(managedObjectClasses: [Note.self])
let container = NSPersistentContainer(name: "TrapMessages", managedObjectModel: model)
container.persistentStoreDescriptions = [NSPersistentStoreDescription(type: NSInMemoryStoreType)]
try await container.loadPersistentStores()
let context = container.newBackgroundContext()
let note = context.performAndWait { Note(context: context) }

switch CommandLine.arguments.dropFirst().first {
case "wrong-queue":
    print(note.title)  // off the context's queue
case "unknown-key":
    context.performAndWait { note.setValue("x", forKey: "subtitle") }
case "wrong-type":
    context.performAndWait { note.setValue(42, forKey: "title") }
default:
    print("usage: TrapMessages wrong-queue|unknown-key|wrong-type")
    exit(64)
}
exit(0)  // not reached when the rule's trap fires
