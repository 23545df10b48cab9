// pkstore: what a PersistenceKit store file holds and whether it is whole, for when a store
// will not open.
//
//   swift run pkstore <store file> [--model <Model.xcdatamodeld | Model.xcdatamodel>]
//
// Prints the header (format version, identifier, model layout), the entity version hashes
// the file keeps, the records by kind, how the store was last closed, and verifies every
// record's checksum, without opening the store: nothing is locked, recovered or written. With a model file, it also says whether
// the model fits the store and counts each entity's objects, on a copy of the store (so a
// store left by a crash is recovered in the copy, never in place). Exit status: 0 when every
// checksum holds, 1 when the file is damaged or unreadable, 2 for a usage error.

import Foundation
import PersistenceKit

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var modelPath: String?
if let i = arguments.firstIndex(of: "--model") {
    guard i + 1 < arguments.count else { fail("pkstore: --model needs a path to a .xcdatamodeld or .xcdatamodel", status: 2) }
    modelPath = arguments[i + 1]
    arguments.removeSubrange(i...(i + 1))
}
guard arguments.count == 1 else {
    fail("usage: pkstore <store file> [--model <Model.xcdatamodeld | Model.xcdatamodel>]", status: 2)
}
let storeURL = URL(fileURLWithPath: arguments[0])

let inspection: FileStoreInspection
do {
    inspection = try FileStore.inspect(at: storeURL)
} catch {
    fail("pkstore: \(error)", status: 1)
}
print(inspection)
// The entity version hashes the file keeps (format 5, or a migration without a rewrite).
if let metadata = try? NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSFileStoreType, at: storeURL),
    let hashes = metadata[NSStoreModelVersionHashesKey] as? [String: Data]
{
    let identifiers = (metadata[NSStoreModelVersionIdentifiersKey] as? [String]) ?? []
    print("model version  \(identifiers.isEmpty ? "unnamed" : identifiers.joined(separator: ", "))")
    for (name, hash) in hashes.sorted(by: { $0.key < $1.key }) {
        print("entity hash    \(name): \(hash.map { String(format: "%02x", $0) }.joined())")
    }
}

if let modelPath {
    do {
        let model = try NSManagedObjectModel(modelFileAt: URL(fileURLWithPath: modelPath))
        let identifiers = model.versionIdentifiers.map { "\($0)" }.sorted().joined(separator: ", ")
        print("model          \(modelPath) (version \(identifiers.isEmpty ? "unnamed" : identifiers), checksum \(model.versionChecksum))")
        // Opened on a copy: opening a store left by a crash recovers it, which the store's
        // own file must only get from its next real open.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pkstore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent(storeURL.lastPathComponent)
        try FileManager.default.copyItem(at: storeURL, to: copy)
        for sidecar in ["-layout", "-lock"] where FileManager.default.fileExists(atPath: storeURL.path + sidecar) {
            try FileManager.default.copyItem(atPath: storeURL.path + sidecar, toPath: copy.path + sidecar)
        }
        let store = try FileStore.open(at: copy, model: model)
        defer { try? store.close() }
        print("fits           yes")
        let counts = try model.entities.map { entity in (entity.name, try store.objectCount(ofEntityNamed: entity.name) ?? 0) }
        for (name, count) in counts.sorted(by: { $0.0 < $1.0 }) {
            print("entity         \(name): \(count) objects")
        }
    } catch let error as FileStoreError {
        if case .modelMismatch = error.kind {
            print("fits           no: \(error.message)")
        } else {
            fail("pkstore: \(error)", status: 1)
        }
    } catch {
        fail("pkstore: \(error)", status: 1)
    }
}
exit(inspection.damage == nil ? 0 : 1)
