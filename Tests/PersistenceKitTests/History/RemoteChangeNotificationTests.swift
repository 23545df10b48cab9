import Foundation
import Testing
import TestSupport
@testable import PersistenceKit

/// NSPersistentStoreRemoteChange: one notification per commit to a store loaded with
/// NSPersistentStoreRemoteChangeNotificationPostOptionKey, none otherwise.
@Suite("Remote change notifications")
struct RemoteChangeNotificationTests {
    /// Collects the notifications a coordinator posts while `body` runs.
    static func notifications(of container: NSPersistentContainer, during body: () throws -> Void) rethrows -> [[AnyHashable: Any]] {
        let seen = TestMutex<[[AnyHashable: Any]]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: .NSPersistentStoreRemoteChange, object: container.persistentStoreCoordinator, queue: nil
        ) { note in
            let info = note.userInfo ?? [:]
            seen.withLock { $0.append(info) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try body()
        return seen.withLock { $0 }
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func eachCommitPostsOneWithTheHistoryToken(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, remoteChanges: true)
        let context = container.newBackgroundContext()
        let store = try #require(container.persistentStoreCoordinator.persistentStores.first)
        var tokens: [NSPersistentHistoryToken?] = []
        let posted = try Self.notifications(of: container) {
            try HistorySupport.insert(["a"], in: container)
            tokens.append(container.persistentStoreCoordinator.currentPersistentHistoryToken())
            try HistorySupport.insert(["b"], in: container)
            tokens.append(container.persistentStoreCoordinator.currentPersistentHistoryToken())
            try context.performAndWait {
                try context.save()  // nothing to write: no commit
                let update = NSBatchUpdateRequest(entityName: "Memo")
                update.propertiesToUpdate = ["body": "batch"]
                try context.execute(update)
            }
            tokens.append(container.persistentStoreCoordinator.currentPersistentHistoryToken())
        }
        #expect(posted.count == 3)
        #expect(posted.allSatisfy { $0[NSStoreUUIDKey] as? String == store.identifier })
        #expect(posted.map { $0[NSPersistentHistoryTokenKey] as? NSPersistentHistoryToken } == tokens)
        if kind == .file { #expect(posted.allSatisfy { $0[NSPersistentStoreURLKey] as? URL == folder.storeURL }) }
    }

    @Test(arguments: HistoryStoreKind.allCases)
    func withoutTheOptionNoneIsPosted(_ kind: HistoryStoreKind) throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(kind, at: folder.storeURL, remoteChanges: false)
        let posted = try Self.notifications(of: container) { try HistorySupport.insert(["a", "b"], in: container) }
        #expect(posted.isEmpty)
    }

    @Test func withoutHistoryTrackingTheNotificationHasNoToken() throws {
        let folder = try TemporaryFolder()
        let container = try HistorySupport.container(.file, at: folder.storeURL, tracking: false, remoteChanges: true)
        let posted = try Self.notifications(of: container) { try HistorySupport.insert(["a"], in: container) }
        #expect(posted.count == 1 && posted[0][NSPersistentHistoryTokenKey] == nil)
    }
}

/// A file store is shared by the coordinators of a process: each of them that asked posts
/// the notification for a commit made through another.
@Suite("Remote change notifications across coordinators")
struct SharedStoreRemoteChangeTests {
    @Test func aCommitThroughOneCoordinatorIsPostedByEveryCoordinatorThatAsked() throws {
        let folder = try TemporaryFolder()
        let model = try HistorySupport.model()
        let writer = try HistorySupport.container(.file, at: folder.storeURL, model: model, remoteChanges: true)
        let listener = try HistorySupport.container(.file, at: folder.storeURL, model: model, remoteChanges: true)
        let silent = try HistorySupport.container(.file, at: folder.storeURL, model: model, remoteChanges: false)
        let heardBySilent = try RemoteChangeNotificationTests.notifications(of: silent) {
            let heard = try RemoteChangeNotificationTests.notifications(of: listener) {
                let own = try RemoteChangeNotificationTests.notifications(of: writer) { try HistorySupport.insert(["a"], in: writer) }
                #expect(own.count == 1)
            }
            #expect(heard.count == 1)
            let token = heard.first?[NSPersistentHistoryTokenKey] as? NSPersistentHistoryToken
            #expect(token == listener.persistentStoreCoordinator.currentPersistentHistoryToken())
            #expect(try HistorySupport.transactions(after: nil, in: listener).count == 1)
        }
        #expect(heardBySilent.isEmpty)
        try FSSupport.close(writer)
    }
}
