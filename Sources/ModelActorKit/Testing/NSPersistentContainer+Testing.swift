import Foundation
import PersistenceKit

extension NSPersistentContainer {
    /// Serializes the creation and loading of test containers across threads, so that
    /// parallel tests never race on the same folder or on stale-file removal.
    private static let testCreationLock = NSLock()
    /// Names of test stores in use by live containers in this process.
    private nonisolated(unsafe) static var testStoresInUse: [String: WeakTestContainer] = [:]
    // nonisolated(unsafe): read and written only while `testCreationLock` is held.

    /// A container with an on-disk file store of its own, for one test.
    ///
    /// The store lives in `<temporary directory>/<subDirectory>/<name>.store`, where the name
    /// comes from `testName` or, by default, from the caller's `#fileID` and `#function`
    /// (letters, digits, `.`, `_` and `-` kept, runs of anything else one `_`), so each test
    /// gets its own store; the container is named `<name>` too. Store files left by an earlier run under that name are
    /// removed before loading; if a live container in this process already uses the name
    /// (parameterized tests share a `#function`), or another process has that store open, a
    /// numbered suffix keeps the stores apart.
    /// Creation and loading are serialized across threads.
    ///
    /// - Throws: ``TestContainerError`` when the folder cannot be made, a stale file cannot
    ///   be removed, or the store does not load.
    public static func makeTest(
        model: NSManagedObjectModel,
        testName: String = "",
        fileID: String = #fileID,
        function: String = #function,
        subDirectory: String = "PersistenceKitTestTemp"
    ) throws -> NSPersistentContainer {
        testCreationLock.lock()
        defer { testCreationLock.unlock() }

        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(subDirectory, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw TestContainerError(kind: .cannotCreateFolder, path: folder.path, reason: "\(error)")
        }

        let resolvedName = testName.isEmpty ? "\(fileID)-\(function)" : testName
        let base = sanitizedStoreName(resolvedName)
        var name = base
        var suffix = 2
        var storeURL = folder.appendingPathComponent("\(name).store")
        while true {
            if testStoresInUse[name]?.isAlive != true {
                // Stale files go through the store's own lock: a store another process has
                // open under this name (an exit test's child shares its test's `#function`;
                // two runs may share the folder) is left alone, and the next number tried.
                // Removing the files directly would replace a live store of another process,
                // which would go on saving into an unlinked file.
                do throws(FileStoreError) {
                    try FileStore.destroy(at: storeURL)
                    break
                } catch where error.kind == .inUse || error.kind == .lockedByAnotherProcess {
                    // taken: try the next name
                } catch {
                    throw TestContainerError(kind: .cannotRemoveStaleFile, path: storeURL.path, reason: "\(error)")
                }
            }
            name = "\(base)-\(suffix)"
            suffix += 1
            storeURL = folder.appendingPathComponent("\(name).store")
        }

        // The container is named with the store file's stem (`Module_File.swift-f` for a test
        // `f()` in `Module/File.swift`), as CoreDataEvolution names its test containers: the
        // raw `#fileID-#function` holds slashes and parentheses that a container name (and the
        // default store file made from it) should not.
        let container = NSPersistentContainer(name: name, managedObjectModel: model)
        let description = NSPersistentStoreDescription(url: storeURL)
        description.shouldAddStoreAsynchronously = false
        container.persistentStoreDescriptions = [description]
        let failure = FailureBox()
        container.loadPersistentStores { _, error in failure.record(error) }
        if let error = failure.error {
            throw TestContainerError(kind: .loadFailed, path: storeURL.path, reason: "\(error)")
        }
        testStoresInUse[name] = WeakTestContainer(
            container: container, coordinator: container.persistentStoreCoordinator,
            stores: container.persistentStoreCoordinator.persistentStores.map { WeakStore(store: $0) })
        return container
    }

    /// ``makeTest(model:testName:fileID:function:subDirectory:)`` with the model of
    /// `NSManagedObject` subclasses: the one `NSManagedObjectModel.makeRuntimeModel(_:)` gives,
    /// the same instance for every test that lists the same classes.
    ///
    /// - Throws: ``ModelError`` for an invalid model, or ``TestContainerError``.
    public static func makeRuntimeTest(
        modelTypes: [NSManagedObject.Type],
        testName: String = "",
        fileID: String = #fileID,
        function: String = #function,
        subDirectory: String = "PersistenceKitTestTemp"
    ) throws -> NSPersistentContainer {
        let model = try NSManagedObjectModel.makeRuntimeModel(modelTypes)
        return try makeTest(model: model, testName: testName, fileID: fileID, function: function, subDirectory: subDirectory)
    }

    /// ``makeRuntimeTest(modelTypes:testName:fileID:function:subDirectory:)`` with the classes
    /// listed one by one (`makeRuntimeTest(modelTypes: Item.self, Tag.self)`).
    ///
    /// - Throws: ``ModelError`` for an invalid model, or ``TestContainerError``.
    public static func makeRuntimeTest(
        modelTypes: NSManagedObject.Type...,
        testName: String = "",
        fileID: String = #fileID,
        function: String = #function,
        subDirectory: String = "PersistenceKitTestTemp"
    ) throws -> NSPersistentContainer {
        try makeRuntimeTest(
            modelTypes: modelTypes as [NSManagedObject.Type], testName: testName, fileID: fileID, function: function,
            subDirectory: subDirectory)
    }

    /// Letters, digits, `.`, `_` and `-`; runs of anything else become one `_`.
    private static func sanitizedStoreName(_ raw: String) -> String {
        var result = ""
        var lastWasUnderscore = false
        for scalar in raw.unicodeScalars {
            let ok = scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
            if ok {
                result.unicodeScalars.append(scalar)
                lastWasUnderscore = false
            } else if !lastWasUnderscore {
                result.append("_")
                lastWasUnderscore = true
            }
        }
        let trimmed = result.trimmingCharacters(in: CharacterSet(charactersIn: "._-"))
        return trimmed.isEmpty ? "PersistenceKitTestStore" : trimmed
    }
}

/// A test store's owners, held weakly: the name stays taken while either lives. A context
/// outliving its container keeps the coordinator, and with it the open store; reusing the
/// name then would remove the files under it and hand the next test the old store, rows
/// and all.
/// The stores count too: a store kept by the caller stays open, and `FileStore.open` hands
/// that open store (old rows included) to the next opener of its path.
private struct WeakTestContainer {
    weak var container: NSPersistentContainer?
    weak var coordinator: NSPersistentStoreCoordinator?
    var stores: [WeakStore]
    var isAlive: Bool { container != nil || coordinator != nil || stores.contains { $0.store != nil } }
}

private struct WeakStore {
    weak var store: (any PersistentStore)?
}

/// Carries the error out of the synchronous completion handler.
private final class FailureBox: @unchecked Sendable {
    // @unchecked Sendable: the handler runs synchronously (shouldAddStoreAsynchronously is
    // false) on the calling thread, before `error` is read.
    private(set) var error: (any Error)?
    func record(_ e: (any Error)?) { if let e { error = e } }
}
