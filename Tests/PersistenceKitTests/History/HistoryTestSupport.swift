import Foundation
import Testing
import TestSupport
@testable import PersistenceKit

// The model and stores the history and query generation suites use.

final class Memo: NSManagedObject {
    @Attribute(.preservesValueInHistoryOnDeletion) var title: String = ""
    @Attribute var body: String = ""
    @Attribute(.indexed) var rank: Int64 = 0
    @Relationship(inverse: "memos", deleteRule: .nullifyDeleteRule) var folder: MemoFolder?
}

final class MemoFolder: NSManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "folder", deleteRule: .nullifyDeleteRule) var memos: Set<Memo>
}

/// The stores history is tested on.
enum HistoryStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory, file
    var testDescription: String { rawValue }
}

enum HistorySupport {
    static func model() throws -> NSManagedObjectModel {
        try NSManagedObjectModel(managedObjectClasses: [Memo.self, MemoFolder.self])
    }

    /// A container with one store of `kind` (a file store at `url`), history tracking and
    /// remote change notifications as asked.
    static func container(
        _ kind: HistoryStoreKind, at url: URL, model: NSManagedObjectModel? = nil, tracking: Bool = true, remoteChanges: Bool = false,
        name: String = #function
    ) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: name, managedObjectModel: try model ?? Self.model())
        let description = kind == .file ? NSPersistentStoreDescription(url: url) : NSPersistentStoreDescription(type: NSInMemoryStoreType)
        if tracking { description.setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey) }
        if remoteChanges { description.setOption(true, forKey: NSPersistentStoreRemoteChangeNotificationPostOptionKey) }
        container.persistentStoreDescriptions = [description]
        let box = ErrorBox()
        container.loadPersistentStores { _, error in box.set(error) }
        if let e = box.get() { throw e }
        return container
    }

    /// Saves one memo per title in a context with `author` and `name`; returns their IDs.
    @discardableResult
    static func insert(_ titles: [String], in container: NSPersistentContainer, author: String? = nil, name: String? = nil) throws
        -> [NSManagedObjectID]
    {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            context.transactionAuthor = author
            context.name = name
            let memos = titles.enumerated().map { i, title in
                let m = Memo(context: context)
                m.title = title
                m.rank = Int64(i)
                return m
            }
            try context.save()
            return memos.map(\.objectID)
        }
    }

    /// Runs a history request in a new context; returns its result's value.
    static func execute(_ request: NSPersistentHistoryChangeRequest, in container: NSPersistentContainer) throws -> Any? {
        let context = container.newBackgroundContext()
        return try context.performAndWait { (try context.execute(request) as? NSPersistentHistoryResult)?.result }
    }

    /// What each transaction after `token` says: its author, context name, and its changes as
    /// "kind:title-or-ID" strings, read in a new context.
    static func transactions(after token: NSPersistentHistoryToken?, in container: NSPersistentContainer) throws -> [Summary] {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            let result = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: token)) as? NSPersistentHistoryResult
            let transactions = try #require(result?.result as? [NSPersistentHistoryTransaction])
            return transactions.map(Summary.init)
        }
    }

    /// A transaction as plain values, to compare across contexts.
    struct Summary: Sendable, Equatable {
        var author: String?
        var contextName: String?
        var number: Int64
        var token: NSPersistentHistoryToken
        var changes: [String]

        init(_ t: NSPersistentHistoryTransaction) {
            author = t.author
            contextName = t.contextName
            number = t.transactionNumber
            token = t.token
            changes = (t.changes ?? []).map { c in
                let kind = ["insert", "update", "delete"][c.changeType.rawValue]
                let pk = c.changedObjectID.uriRepresentation().lastPathComponent
                let props = (c.updatedProperties ?? []).map(\.name).sorted().joined(separator: ",")
                let tomb = (c.tombstone?["title"] as? String).map { " title=\($0)" } ?? ""
                return "\(kind) \(c.changedObjectID.entity.name) \(pk)" + (props.isEmpty ? "" : " [\(props)]") + tomb
            }
        }
    }
}
